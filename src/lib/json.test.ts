import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalJson, JSON_LIMITS, parseJsonBounded, prototypeKey } from './json.js';
import { deepObject } from '../../test/helpers/deep.js';

/** The recursive canonical JSON the iterative one replaced: same output for every JSON value. */
function recursiveCanonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(recursiveCanonical).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${recursiveCanonical(v)}`).join(',')}}`;
  }
  return JSON.stringify(value ?? null);
}

describe('parseJsonBounded', () => {
  it('parses what fits the bounds and has no prototype key, exactly as JSON.parse does', () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 10 }), (value) => {
        fc.pre(prototypeKey(value) === null); // those are refused: a case of their own below
        const text = JSON.stringify(value);
        const parsed = parseJsonBounded(text);
        expect(parsed).toEqual({ ok: true, value: JSON.parse(text) as unknown });
      }),
      { numRuns: 300 },
    );
  });

  it('counts depth in containers: the bound is allowed, one more is refused', () => {
    const nested = (n: number) => '['.repeat(n) + ']'.repeat(n);
    expect(parseJsonBounded(nested(JSON_LIMITS.maxDepth)).ok).toBe(true);
    expect(parseJsonBounded(nested(JSON_LIMITS.maxDepth + 1))).toEqual({
      ok: false,
      reason: 'depth',
      message: 'JSON is nested deeper than 64 levels',
      details: { max_depth: 64 },
    });
    expect(parseJsonBounded('{"a":[{"b":[]}]}', { maxDepth: 3, maxKeys: 10 })).toMatchObject({ reason: 'depth' });
    expect(parseJsonBounded('{"a":[{"b":[]}]}', { maxDepth: 4, maxKeys: 10 }).ok).toBe(true);
  });

  it('refuses a million levels without parsing them', () => {
    const text = '['.repeat(1_000_000) + ']'.repeat(1_000_000);
    expect(parseJsonBounded(text)).toMatchObject({ ok: false, reason: 'depth' });
  });

  it('counts keys across the whole document', () => {
    expect(parseJsonBounded('{"a":1,"b":{"c":2}}', { maxDepth: 64, maxKeys: 3 }).ok).toBe(true);
    expect(parseJsonBounded('{"a":1,"b":{"c":2}}', { maxDepth: 64, maxKeys: 2 })).toEqual({
      ok: false,
      reason: 'keys',
      message: 'JSON has more than 2 keys',
      details: { max_keys: 2 },
    });
  });

  it('reads strings as text: brackets, colons, quotes and backslashes inside them are not structure', () => {
    const tricky = ['{{{{', ':::', '\\"{[', '\\', 'a\\\\', '\\\\"[[[', '"'.repeat(5), '\u2028'];
    for (const text of tricky) {
      const json = JSON.stringify({ k: text, [text]: [text] });
      expect(parseJsonBounded(json, { maxDepth: 2, maxKeys: 2 })).toEqual({
        ok: true,
        value: JSON.parse(json) as unknown,
      });
    }
  });

  it('answers bad syntax as syntax, never throwing', () => {
    for (const text of ['', '{', '{"a":', '"unterminated', '{"a":1}}', 'nul', '[1,]', '{"a" 1}']) {
      expect(parseJsonBounded(text)).toEqual({ ok: false, reason: 'syntax', message: 'invalid JSON', details: {} });
    }
  });

  it.each([
    ['{"__proto__":{}}', '__proto__'],
    ['{"\\u005f\\u005fproto\\u005f\\u005f":1}', '__proto__'],
    ['[1,[{"x":{"__proto__":null}}]]', '__proto__'],
    ['{"constructor":{"prototype":{}}}', 'constructor.prototype'],
    ['{"a":{"\\u0063onstructor":{"prototype":1}}}', 'constructor.prototype'],
  ])('refuses %s', (text, key) => {
    expect(parseJsonBounded(text)).toEqual({
      ok: false,
      reason: 'prototype',
      message: `JSON key "${key}" is not allowed`,
      details: { key },
    });
  });

  it('keeps constructor and prototype as plain data otherwise', () => {
    for (const text of ['{"constructor":1}', '{"constructor":{"a":1}}', '{"prototype":{"b":2}}', '{"p":"__proto__"}']) {
      expect(parseJsonBounded(text)).toEqual({ ok: true, value: JSON.parse(text) as unknown });
    }
  });

  it('prototypeKey walks values from elsewhere (e.g. YAML) without recursion', () => {
    const deep = deepObject(200_000);
    expect(prototypeKey(deep)).toBeNull();
    const withProto = JSON.parse('{"list":[{"__proto__":1}]}') as unknown;
    expect(prototypeKey(withProto)).toBe('__proto__');
  });
});

describe('canonicalJson', () => {
  it('equals the recursive form for every JSON value', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        expect(canonicalJson(value)).toBe(recursiveCanonical(value));
      }),
      { numRuns: 500 },
    );
  });

  it('sorts keys at every level and leaves undefined members out', () => {
    expect(canonicalJson({ b: 1, a: { d: [2, { z: 1, y: undefined, x: null }], c: 'é' } })).toBe(
      '{"a":{"c":"é","d":[2,{"x":null,"z":1}]},"b":1}',
    );
    expect(canonicalJson({ a: undefined, b: 1, c: undefined, d: 'x' })).toBe('{"b":1,"d":"x"}');
    expect(canonicalJson({ a: undefined })).toBe('{}');
    expect(canonicalJson([undefined, 1])).toBe('[null,1]');
    expect(canonicalJson(undefined)).toBe('null');
    expect(canonicalJson([])).toBe('[]');
    expect(canonicalJson({})).toBe('{}');
  });

  it('sorts small and large objects alike', () => {
    for (const size of [2, 16, 17, 40]) {
      const keys = Array.from({ length: size }, (_, i) => `k${(i * 7919) % size}`).reverse();
      const value = Object.fromEntries(keys.map((k) => [k, k]));
      expect(canonicalJson(value)).toBe(recursiveCanonical(value));
    }
  });

  it('serialises 200 000 levels without exhausting the stack', () => {
    const depth = 200_000;
    expect(canonicalJson(deepObject(depth))).toBe(`${'{"a":'.repeat(depth - 1)}{}${'}'.repeat(depth - 1)}`);
  });
});
