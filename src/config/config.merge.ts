/**
 * Plain-data helpers for configuration changes (PUT/PATCH/validate /config,
 * DECISIONS §9): deep merge with "null resets to default", structural
 * equality, and the list of leaf paths where two configurations differ.
 * Paths are arrays of keys here (a pricing model name may contain a dot);
 * join them with "." only for display.
 */

/** A JSON object (not an array, not null). */
export type PlainObject = Record<string, unknown>;

/**
 * Sets an own data property, so a key such as `__proto__` from a JSON body
 * stays a plain (and, to the strict schema, unknown) key instead of
 * changing the object's prototype.
 */
function put(target: PlainObject, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, writable: true, enumerable: true, configurable: true });
}

/** True for a JSON object: not null, not an array. */
export function isPlainObject(value: unknown): value is PlainObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Deep-merges `patch` over `base` into a new object; neither input is
 * modified. Objects merge key by key; arrays and scalars replace; a `null`
 * in the patch removes the key, so validation fills its schema default
 * ("null resets to default").
 */
export function mergeConfigPatch(base: PlainObject, patch: PlainObject): PlainObject {
  const out: PlainObject = structuredClone(base);
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) {
      delete out[key];
    } else if (isPlainObject(value)) {
      const current = Object.hasOwn(out, key) ? out[key] : undefined;
      put(out, key, mergeConfigPatch(isPlainObject(current) ? current : {}, value));
    } else {
      put(out, key, structuredClone(value));
    }
  }
  return out;
}

/** Structural equality of JSON values (key order ignored). */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
    return a.every((item, i) => jsonEqual(item, b[i]));
  }
  if (isPlainObject(a) && isPlainObject(b)) {
    const keys = Object.keys(a);
    if (keys.length !== Object.keys(b).length) return false;
    return keys.every((key) => Object.hasOwn(b, key) && jsonEqual(a[key], b[key]));
  }
  return false;
}

/**
 * Leaf paths where `before` and `after` differ. Objects are compared key by
 * key; anything else (arrays, scalars, a key present on one side only) is
 * one path. Sorted, so callers and tests see a stable order.
 */
export function diffConfigPaths(before: unknown, after: unknown): string[][] {
  const out: string[][] = [];
  const walk = (a: unknown, b: unknown, path: string[]): void => {
    if (isPlainObject(a) && isPlainObject(b)) {
      const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
      for (const key of keys) {
        walk(Object.hasOwn(a, key) ? a[key] : undefined, Object.hasOwn(b, key) ? b[key] : undefined, [...path, key]);
      }
    } else if (!jsonEqual(a, b)) {
      out.push(path);
    }
  };
  walk(before, after, []);
  return out.sort((x, y) => x.join('.').localeCompare(y.join('.')));
}

/** The value at `path`, or undefined when any step is missing. */
export function getConfigPath(root: unknown, path: readonly string[]): unknown {
  let node = root;
  for (const key of path) {
    if (!isPlainObject(node) || !Object.hasOwn(node, key)) return undefined;
    node = node[key];
  }
  return node;
}

/**
 * Sets (or, with `undefined`, deletes) the value at `path` in place,
 * creating intermediate objects as needed.
 */
export function setConfigPath(root: PlainObject, path: readonly string[], value: unknown): void {
  if (path.length === 0) throw new RangeError('empty configuration path');
  let node = root;
  for (const key of path.slice(0, -1)) {
    const next = Object.hasOwn(node, key) ? node[key] : undefined;
    if (isPlainObject(next)) {
      node = next;
    } else {
      const created: PlainObject = {};
      put(node, key, created);
      node = created;
    }
  }
  const last = path[path.length - 1]!;
  if (value === undefined) delete node[last];
  else put(node, last, structuredClone(value));
}

/** True when one path equals the other or lies under it (`a.b` and `a.b.c`). */
export function pathsOverlap(a: readonly string[], b: readonly string[]): boolean {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return false;
  return true;
}
