/**
 * The logger every part of the gateway takes (pino's), as a leaf type: naming it does not load the logs
 * capability (its routes, pipeline and files), so infrastructure can take a logger without importing upward.
 */
export type { Logger } from 'pino';
