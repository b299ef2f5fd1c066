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
 * ("null resets to default"). Iterative: a deep patch cannot exhaust the
 * stack (ADR 0013).
 */
export function mergeConfigPatch(base: PlainObject, patch: PlainObject): PlainObject {
  const out: PlainObject = structuredClone(base);
  // Each step merges one patch object into its (already cloned) target in `out`.
  const steps: Array<{ target: PlainObject; patch: PlainObject }> = [{ target: out, patch }];
  while (steps.length > 0) {
    const step = steps.pop()!;
    for (const [key, value] of Object.entries(step.patch)) {
      if (value === null) {
        delete step.target[key];
      } else if (isPlainObject(value)) {
        const current = Object.hasOwn(step.target, key) ? step.target[key] : undefined;
        const target: PlainObject = isPlainObject(current) ? current : {};
        put(step.target, key, target);
        steps.push({ target, patch: value });
      } else {
        put(step.target, key, structuredClone(value));
      }
    }
  }
  return out;
}

/** Structural equality of JSON values (key order ignored). Iterative. */
export function jsonEqual(a: unknown, b: unknown): boolean {
  const pairs: Array<[unknown, unknown]> = [[a, b]];
  while (pairs.length > 0) {
    const [x, y] = pairs.pop()!;
    if (x === y) continue;
    if (Array.isArray(x) || Array.isArray(y)) {
      if (!Array.isArray(x) || !Array.isArray(y) || x.length !== y.length) return false;
      for (let i = 0; i < x.length; i++) pairs.push([x[i], y[i]]);
    } else if (isPlainObject(x) && isPlainObject(y)) {
      const keys = Object.keys(x);
      if (keys.length !== Object.keys(y).length) return false;
      for (const key of keys) {
        if (!Object.hasOwn(y, key)) return false;
        pairs.push([x[key], y[key]]);
      }
    } else {
      return false;
    }
  }
  return true;
}

/**
 * Leaf paths where `before` and `after` differ. Objects are compared key by
 * key; anything else (arrays, scalars, a key present on one side only) is
 * one path. Sorted, so callers and tests see a stable order. Iterative.
 */
export function diffConfigPaths(before: unknown, after: unknown): string[][] {
  // Each pending pair knows its parent's path node, so a path is spelled out only where a difference is.
  interface PathNode {
    parent: PathNode | null;
    key: string;
  }
  const spell = (node: PathNode | null): string[] => {
    const path: string[] = [];
    for (let at = node; at !== null; at = at.parent) path.push(at.key);
    return path.reverse();
  };
  const out: string[][] = [];
  const pending: Array<{ a: unknown; b: unknown; at: PathNode | null }> = [{ a: before, b: after, at: null }];
  while (pending.length > 0) {
    const { a, b, at } = pending.pop()!;
    if (isPlainObject(a) && isPlainObject(b)) {
      for (const key of new Set([...Object.keys(a), ...Object.keys(b)])) {
        pending.push({
          a: Object.hasOwn(a, key) ? a[key] : undefined,
          b: Object.hasOwn(b, key) ? b[key] : undefined,
          at: { parent: at, key },
        });
      }
    } else if (!jsonEqual(a, b)) {
      out.push(spell(at));
    }
  }
  // Paths whose dotted forms tie (a key holding a dot) are ordered by their keys, not by the walk.
  return out.sort((x, y) => x.join('.').localeCompare(y.join('.')) || (JSON.stringify(x) < JSON.stringify(y) ? -1 : 1));
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
