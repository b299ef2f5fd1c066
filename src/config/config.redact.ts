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
  const def = (
    inner as unknown as {
      _zod: { def: { type: string; shape?: Record<string, z.ZodType>; element?: z.ZodType; valueType?: z.ZodType } };
    }
  )._zod.def;
  if (def.type === 'object' && def.shape) {
    for (const [key, child] of Object.entries(def.shape)) collectSecretPaths(child, [...prefix, key], out);
  } else if (def.type === 'array' && def.element) {
    collectSecretPaths(def.element, [...prefix, ANY], out); // each element of a list of objects (principals)
  } else if (def.type === 'record' && def.valueType) {
    collectSecretPaths(def.valueType, [...prefix, ANY], out); // each entry of a keyed map (agents)
  }
}

/** A path segment standing for every element of a list or entry of a map. */
const ANY = '*';

const secretPathList: string[][] = [];
collectSecretPaths(configSchema, [], secretPathList);

/** Dotted paths of every secret key, taken from the schema's markings; `*` stands for any element or entry. */
export const SECRET_PATHS: readonly string[] = secretPathList.map((p) => p.join('.'));

/**
 * The concrete paths of every secret key present in `value` (a partial or
 * full configuration): each `*` of `SECRET_PATHS` expanded to the list
 * indexes or map keys found there. Iterative; the schema bounds the depth.
 */
export function secretPathsIn(value: unknown): string[][] {
  const out: string[][] = [];
  for (const pattern of secretPathList) {
    let frontier: string[][] = [[]];
    for (let i = 0; i < pattern.length; i++) {
      const segment = pattern[i]!;
      const last = i === pattern.length - 1;
      const next: string[][] = [];
      for (const path of frontier) {
        const node = nodeAt(value, path);
        if (node === null || typeof node !== 'object') continue;
        const keys = segment === ANY ? Object.keys(node) : [segment];
        for (const key of keys) {
          if (last || (node as Record<string, unknown>)[key] !== undefined) next.push([...path, key]);
        }
      }
      frontier = next;
    }
    out.push(...frontier);
  }
  return out;
}

function nodeAt(value: unknown, path: readonly string[]): unknown {
  let node = value;
  for (const key of path) node = node && typeof node === 'object' ? (node as Record<string, unknown>)[key] : undefined;
  return node;
}

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
  for (const path of secretPathsIn(copy)) {
    const node = nodeAt(copy, path.slice(0, -1)) as Record<string, unknown> | undefined;
    const last = path[path.length - 1]!;
    if (node && typeof node === 'object' && last in node) node[last] = redactValue(node[last]);
  }
  return copy as T;
}

/** Every secret string present in a configuration, for leak checks and log scrubbing. */
export function secretValues(config: unknown): string[] {
  const values: string[] = [];
  for (const path of secretPathsIn(config)) {
    const node = nodeAt(config, path);
    if (typeof node === 'string' && node) values.push(node);
    if (Array.isArray(node)) for (const v of node) if (typeof v === 'string' && v) values.push(v);
  }
  return values;
}
