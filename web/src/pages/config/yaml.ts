/**
 * The YAML library as the Config page's raw view uses it: its own chunk, loaded when the YAML view first
 * opens, so the page's code stays small.
 */
export { parse, stringify } from 'yaml';
