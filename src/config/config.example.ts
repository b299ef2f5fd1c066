import { stringify } from 'yaml';
import { z } from 'zod';
import { configSchema, defaultConfig, secretKeys } from './config.schema.js';

/**
 * The commented configuration file, written from the schema (config.schema.ts) so that it cannot drift from it:
 * every key with its description (`.meta({ description })`), its allowed values, whether it is a secret, and its
 * default. `examples/gatehouse.yaml` is this text with every key set to its default (`npm run example-config`
 * rewrites it; a test compares them); `gatehouse init` writes it with the answers set and the other keys
 * commented out.
 */

/** One key of the configuration, as the schema declares it. */
export interface ConfigKeyDoc {
  /** Dotted path, e.g. `gateway.auth.mode`. */
  path: string;
  /** The key's own name. */
  key: string;
  /** The schema's description, or '' when it has none. */
  description: string;
  /** True for a secret (redacted as `***` by the API and the logs). */
  secret: boolean;
  /** The allowed values of an enum, else null. */
  values: readonly string[] | null;
  /** The keys below a block (an object), else null. */
  children: ConfigKeyDoc[] | null;
}

/** A schema node's definition, as far as this walk reads it. */
interface NodeDef {
  type: string;
  innerType?: z.ZodType;
  shape?: Record<string, z.ZodType>;
  entries?: Record<string, string>;
}

function defOf(schema: z.ZodType): NodeDef {
  return (schema as unknown as { _zod: { def: NodeDef } })._zod.def;
}

/** The wrappers around a key's schema (default, prefault, nullable, optional), outermost first, then the core. */
function chainOf(schema: z.ZodType): z.ZodType[] {
  const chain = [schema];
  let def = defOf(schema);
  while (def.innerType && ['default', 'prefault', 'nullable', 'optional'].includes(def.type)) {
    chain.push(def.innerType);
    def = defOf(def.innerType);
  }
  return chain;
}

function describeKey(key: string, schema: z.ZodType, prefix: string[]): ConfigKeyDoc {
  const chain = chainOf(schema);
  const core = defOf(chain[chain.length - 1]!);
  const description = chain.map((node) => z.globalRegistry.get(node)?.description).find((d) => d !== undefined);
  const path = [...prefix, key];
  return {
    path: path.join('.'),
    key,
    description: description ?? '',
    secret: chain.some((node) => secretKeys.has(node)),
    values: core.type === 'enum' && core.entries ? Object.values(core.entries) : null,
    children:
      core.type === 'object' && core.shape
        ? Object.entries(core.shape).map(([name, child]) => describeKey(name, child, path))
        : null,
  };
}

/** Every key of the configuration, in the schema's order, blocks with their keys. */
export function configKeyDocs(): ConfigKeyDoc[] {
  return Object.entries(defOf(configSchema).shape ?? {}).map(([key, schema]) => describeKey(key, schema, []));
}

/** Options of `renderConfigYaml`. */
export interface RenderConfigOptions {
  /** Comment lines at the top (without `#`); '' is an empty comment line. */
  header: readonly string[];
  /** Values set over the defaults: a raw configuration object (nested like the file). Default: none. */
  values?: Record<string, unknown>;
  /**
   * Write the keys that `values` does not set as comments (`# key: default`), so that the file pins only the
   * chosen values and follows future defaults (`gatehouse init`). Default false: every key is written.
   */
  commentUnset?: boolean;
  /** Characters per line the descriptions are wrapped to. Default 110. */
  width?: number;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The value at `path` of `object`, or undefined. */
function valueAt(object: unknown, path: readonly string[]): unknown {
  let node = object;
  for (const key of path) node = isRecord(node) ? node[key] : undefined;
  return node;
}

/** A value as YAML on one line (flow style; JSON, which is YAML, when the YAML form would take several lines). */
export function yamlInline(value: unknown): string {
  const text = stringify(value, { collectionStyle: 'flow', flowCollectionPadding: false, lineWidth: 0 }).trimEnd();
  return text.includes('\n') ? JSON.stringify(value) : text;
}

/** Words of `text` wrapped into lines of at most `width` characters, each starting with `prefix`. */
function wrapComment(text: string, prefix: string, width: number): string[] {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(/\s+/).filter(Boolean)) {
    if (line && prefix.length + line.length + 1 + word.length > width) {
      lines.push(`${prefix}${line}`);
      line = word;
    } else {
      line = line ? `${line} ${word}` : word;
    }
  }
  if (line) lines.push(`${prefix}${line}`);
  return lines;
}

/** Whether `values` sets something at or below `path`. */
function isSet(values: Record<string, unknown>, path: readonly string[]): boolean {
  return valueAt(values, path) !== undefined;
}

/**
 * The configuration as commented YAML: each key preceded by its description (with its allowed values, whether it
 * is a secret, and its default when the value written differs from it). Blocks are separated by an empty line.
 * The text loads as the configuration it shows (`values` over the defaults).
 */
export function renderConfigYaml(options: RenderConfigOptions): string {
  const values = options.values ?? {};
  const width = options.width ?? 110;
  const defaults = defaultConfig() as unknown as Record<string, unknown>;
  const lines: string[] = options.header.map((line) => (line ? `# ${line}` : '#'));
  if (lines.length > 0) lines.push('');

  const render = (docs: ConfigKeyDoc[], depth: number, commented: boolean): void => {
    const indent = '  '.repeat(depth);
    docs.forEach((doc, index) => {
      const path = doc.path.split('.');
      const active = !options.commentUnset || isSet(values, path);
      const mark = commented || !active ? '# ' : '';
      if (doc.children) {
        // An empty line before each block, except the first key of its parent.
        if (lines.length > 0 && lines[lines.length - 1] !== '' && (depth === 0 || index > 0)) lines.push('');
        lines.push(...wrapComment(doc.description, `${indent}# `, width));
        lines.push(`${indent}${mark}${doc.key}:`);
        render(doc.children, depth + 1, commented || !active);
        return;
      }
      const fallback = valueAt(defaults, path);
      const chosen = valueAt(values, path);
      const value = chosen === undefined ? fallback : chosen;
      const facts = [
        doc.description,
        doc.values ? `One of: ${doc.values.join(', ')}.` : '',
        doc.secret ? 'Secret (shown as *** by the API).' : '',
        yamlInline(value) !== yamlInline(fallback) ? `Default: ${yamlInline(fallback)}.` : '',
      ];
      lines.push(...wrapComment(facts.join(' '), `${indent}# `, width));
      lines.push(`${indent}${mark}${doc.key}: ${yamlInline(value)}`);
    });
  };
  render(configKeyDocs(), 0, false);
  return `${lines.join('\n')}\n`;
}

/** The header of `examples/gatehouse.yaml`. */
export const EXAMPLE_CONFIG_HEADER: readonly string[] = [
  'Gatehouse configuration (gatehouse.yaml): every key, with its default.',
  '',
  'Every key is optional: a file with only the keys that differ from these defaults is enough. Layers, each',
  'overriding the one before: these defaults; this file (--config FILE, else $GATEHOUSE_CONFIG, else',
  './gatehouse.yaml); the environment (GATEHOUSE_HOST, GATEHOUSE_PORT, GATEHOUSE_DATA_DIR; OPENAI_API_KEY,',
  'ANTHROPIC_API_KEY, DATABASE_URL, REDIS_URL, NATS_URL, TELEGRAM_BOT_TOKEN, SLACK_BOT_TOKEN,',
  'SLACK_SIGNING_SECRET, SLACK_APP_TOKEN where the file is silent); the flags --host, --port, --data-dir.',
  'An unknown key or a value of the wrong type stops start-up, naming its dotted path.',
  'Check a file with: gatehouse doctor --config FILE',
  '',
  'Generated from the configuration schema (src/config/config.schema.ts) by `npm run example-config`.',
];

/** The text of `examples/gatehouse.yaml`: every key at its default. */
export function exampleConfigYaml(): string {
  return renderConfigYaml({ header: EXAMPLE_CONFIG_HEADER });
}
