import type { z } from 'zod';
import { configSchema, secretKeys } from './config.schema.js';

/** Replacement for every secret value on the wire. */
export const REDACTED = '***';

/** Unwraps default/prefault/nullable/optional wrappers around a schema node. */
function unwrap(schema: z.ZodType): z.ZodType {
  let node = schema as unknown as { _zod: { def: { innerType?: z.ZodType } } };
  while (node._zod.def.innerType) {
    if (secretKeys.has(node as unknown as z.ZodType)) break;
    node = node._zod.def.innerType as unknown as typeof node;
  }
  return node as unknown as z.ZodType;
}

function collectSecretPaths(schema: z.ZodType, prefix: string[], out: string[][]): void {
  if (secretKeys.has(schema)) {
    out.push(prefix);
    return;
  }
  const inner = unwrap(schema);
  if (secretKeys.has(inner)) {
    out.push(prefix);
    return;
  }
  const def = (inner as unknown as { _zod: { def: { type: string; shape?: Record<string, z.ZodType> } } })._zod.def;
  if (def.type === 'object' && def.shape) {
    for (const [key, child] of Object.entries(def.shape)) collectSecretPaths(child, [...prefix, key], out);
  }
}

const secretPathList: string[][] = [];
collectSecretPaths(configSchema, [], secretPathList);

/** Dotted paths of every secret key, taken from the schema's markings. */
export const SECRET_PATHS: readonly string[] = secretPathList.map((p) => p.join('.'));

function redactValue(value: unknown): unknown {
  if (value === null || value === undefined) return value;
  if (Array.isArray(value)) return value.map(() => REDACTED);
  return REDACTED;
}

/**
 * Returns a deep copy of a (partial or full) configuration object with every
 * secret replaced by "***" (lists: each element). Null secrets stay null so
 * an operator can see that none is set.
 */
export function redactConfig<T>(config: T): T {
  const copy = structuredClone(config) as unknown;
  for (const path of secretPathList) {
    let node = copy as Record<string, unknown> | undefined;
    for (let i = 0; i < path.length - 1 && node; i++) {
      const next = node[path[i]!];
      node = next && typeof next === 'object' ? (next as Record<string, unknown>) : undefined;
    }
    const last = path[path.length - 1]!;
    if (node && last in node) node[last] = redactValue(node[last]);
  }
  return copy as T;
}

/** Every secret string present in a configuration, for leak checks and log scrubbing. */
export function secretValues(config: unknown): string[] {
  const values: string[] = [];
  for (const path of secretPathList) {
    let node: unknown = config;
    for (const key of path)
      node = node && typeof node === 'object' ? (node as Record<string, unknown>)[key] : undefined;
    if (typeof node === 'string' && node) values.push(node);
    if (Array.isArray(node)) for (const v of node) if (typeof v === 'string' && v) values.push(v);
  }
  return values;
}
