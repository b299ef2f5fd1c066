/**
 * JSON that a client shapes (ADR 0013): read with bounds before anything
 * walks it, and walked only by loops, never by recursion. Pure; imports
 * nothing.
 */

/** Bounds a JSON document from outside must respect. */
export interface JsonLimits {
  /** Most containers (objects and arrays) nested on one path; `{}` is 1, `{"a": []}` is 2. */
  maxDepth: number;
  /** Most object keys in the whole document, at any depth. */
  maxKeys: number;
}

/** The bounds of every request body, WebSocket frame and JSON query value (ADR 0013). */
export const JSON_LIMITS: Readonly<JsonLimits> = Object.freeze({ maxDepth: 64, maxKeys: 10_000 });

/** Why a document was refused. */
export type JsonRefusal = 'syntax' | 'depth' | 'keys' | 'prototype';

/** The outcome of {@link parseJsonBounded}. */
export type BoundedJson =
  { ok: true; value: unknown } | { ok: false; reason: JsonRefusal; message: string; details: Record<string, unknown> };

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COLON = 0x3a;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;

/** Index of the quote closing the string opened at `open`, or -1 when it is never closed. */
function stringEnd(text: string, open: number): number {
  let from = open + 1;
  for (;;) {
    const quote = text.indexOf('"', from);
    if (quote === -1) return -1;
    // The quote is escaped when an odd number of backslashes precede it. The walk back stops at the
    // previous non-backslash, so every character is looked at a bounded number of times.
    let backslashes = 0;
    for (let k = quote - 1; k > open && text.charCodeAt(k) === BACKSLASH; k--) backslashes++;
    if (backslashes % 2 === 0) return quote;
    from = quote + 1;
  }
}

/**
 * One pass over the text, before anything is allocated: nesting depth and
 * key count (a `:` outside strings follows a key in valid JSON; invalid
 * JSON is left to `JSON.parse`). Returns the bound crossed, or null.
 */
function scanShape(text: string, limits: JsonLimits): 'depth' | 'keys' | null {
  let depth = 0;
  let keys = 0;
  const length = text.length;
  for (let i = 0; i < length; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      const end = stringEnd(text, i);
      if (end === -1) return null;
      i = end;
    } else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      if (++depth > limits.maxDepth) return 'depth';
    } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) {
      depth--;
    } else if (c === COLON) {
      if (++keys > limits.maxKeys) return 'keys';
    }
  }
  return null;
}

/** Could the text hold `__proto__` or `constructor` as a key, even spelled with `\u` escapes? */
const SUSPECT_KEY = /__proto__|constructor|\\u/;

/**
 * The first key that could reach an object's prototype when code copies a
 * parsed document by assignment: an own `__proto__` anywhere, or
 * `constructor` holding an object with `prototype` (the two Fastify's own
 * JSON parser refuses); null when there is none. Iterative.
 */
export function prototypeKey(root: unknown): string | null {
  const pending: unknown[] = [root];
  while (pending.length > 0) {
    const node = pending.pop();
    if (typeof node !== 'object' || node === null) continue;
    if (Array.isArray(node)) {
      for (const item of node) if (typeof item === 'object' && item !== null) pending.push(item);
      continue;
    }
    const object = node as Record<string, unknown>;
    if (Object.hasOwn(object, '__proto__')) return '__proto__';
    if (Object.hasOwn(object, 'constructor')) {
      const ctor = object.constructor;
      if (typeof ctor === 'object' && ctor !== null && Object.hasOwn(ctor, 'prototype')) return 'constructor.prototype';
    }
    for (const key of Object.keys(object)) {
      const child = object[key];
      if (typeof child === 'object' && child !== null) pending.push(child);
    }
  }
  return null;
}

/**
 * Parses JSON from outside the process (a request body, a WebSocket frame, a
 * JSON query value, a model's tool arguments) within `limits`, checked on
 * the text before it is parsed, and refuses keys that could reach a
 * prototype. Never throws, never recurses: every refusal is a value the
 * caller turns into its 400.
 */
export function parseJsonBounded(text: string, limits: JsonLimits = JSON_LIMITS): BoundedJson {
  const bound = scanShape(text, limits);
  if (bound === 'depth') {
    return {
      ok: false,
      reason: 'depth',
      message: `JSON is nested deeper than ${limits.maxDepth} levels`,
      details: { max_depth: limits.maxDepth },
    };
  }
  if (bound === 'keys') {
    return {
      ok: false,
      reason: 'keys',
      message: `JSON has more than ${limits.maxKeys} keys`,
      details: { max_keys: limits.maxKeys },
    };
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { ok: false, reason: 'syntax', message: 'invalid JSON', details: {} };
  }
  // Only text that spells one of the keys (or holds a `\u` escape that could) needs the walk.
  const key = SUSPECT_KEY.test(text) ? prototypeKey(value) : null;
  if (key !== null) {
    return { ok: false, reason: 'prototype', message: `JSON key "${key}" is not allowed`, details: { key } };
  }
  return { ok: true, value };
}

/**
 * Canonical JSON: object keys sorted (by UTF-16 code units) at every level,
 * `undefined` members left out, so values equal in meaning give equal text
 * (fingerprints, metadata hashes). Iterative: any depth is safe.
 */
export function canonicalJson(value: unknown): string {
  if (typeof value !== 'object' || value === null) return primitiveJson(value);
  let out = '';
  // Work items, popped from the end: a string is text to emit as is (a primitive is pushed as its JSON
  // text), an object or array is a value still to serialise.
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const item = stack.pop();
    if (typeof item === 'string') {
      out += item;
    } else if (Array.isArray(item)) {
      stack.push(']');
      for (let i = item.length - 1; i >= 0; i--) {
        pushJsonItem(stack, item[i] as unknown);
        if (i > 0) stack.push(',');
      }
      stack.push('[');
    } else {
      const node = item as Record<string, unknown>;
      const keys = sortedKeys(node);
      stack.push('}');
      let first = 0; // the first member written gets no comma
      while (first < keys.length && node[keys[first]!] === undefined) first++;
      for (let i = keys.length - 1; i >= 0; i--) {
        const key = keys[i]!;
        const child = node[key];
        if (child === undefined) continue;
        pushJsonItem(stack, child);
        stack.push(`${i > first ? ',' : ''}${JSON.stringify(key)}:`);
      }
      stack.push('{');
    }
  }
  return out;
}

/** An object's own keys in UTF-16 code unit order (the default sort's), small objects sorted in place. */
function sortedKeys(node: Record<string, unknown>): string[] {
  const keys = Object.keys(node);
  if (keys.length > 16) return keys.sort();
  for (let i = 1; i < keys.length; i++) {
    const key = keys[i]!;
    let j = i - 1;
    for (; j >= 0 && keys[j]! > key; j--) keys[j + 1] = keys[j]!;
    keys[j + 1] = key;
  }
  return keys;
}

/** JSON text of a value that is no object (`undefined`, functions and symbols as `null`, as in an array). */
function primitiveJson(value: unknown): string {
  return JSON.stringify(value) ?? 'null';
}

function pushJsonItem(stack: unknown[], value: unknown): void {
  stack.push(typeof value === 'object' && value !== null ? value : primitiveJson(value));
}
