import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseDocument, stringify } from 'yaml';
import { yamlNestingBound } from './yaml-depth.js';

/** The real nesting depth of a parsed value (iterative). */
function depthOf(value: unknown): number {
  let deepest = 0;
  const pending: Array<[unknown, number]> = [[value, 0]];
  while (pending.length > 0) {
    const [node, depth] = pending.pop()!;
    if (node === null || typeof node !== 'object') continue;
    deepest = Math.max(deepest, depth + 1);
    for (const child of Object.values(node)) pending.push([child, depth + 1]);
  }
  return deepest;
}

describe('yamlNestingBound', () => {
  it('never underestimates the depth of what the parser builds', () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 8 }), fc.boolean(), (value, flowStyle) => {
        const text = flowStyle ? JSON.stringify(value) : stringify(value);
        expect(yamlNestingBound(text)).toBeGreaterThanOrEqual(depthOf(parseDocument(text).toJS()));
      }),
      { numRuns: 300 },
    );
  });

  it('never underestimates on arbitrary text, errors and all (the parser still nests what it recovers)', () => {
    const char = fc.constantFrom(
      '-',
      ' ',
      ' ',
      ':',
      '[',
      ']',
      '{',
      '}',
      ',',
      '"',
      "'",
      '#',
      '\n',
      '\n',
      'a',
      '?',
      '&',
      '!',
      '|',
      '>',
      '\\',
      '\t',
    );
    fc.assert(
      fc.property(fc.array(char, { maxLength: 120 }), (chars) => {
        const text = chars.join('');
        expect(yamlNestingBound(text)).toBeGreaterThanOrEqual(depthOf(parseDocument(text).toJS()));
      }),
      { numRuns: 3000 },
    );
  });

  it('a bracket or quote inside a plain scalar opens nothing that hides the levels after it', () => {
    const deepBlock = (lines: number) =>
      Array.from({ length: lines }, (_, i) => ' '.repeat(i + 1) + 'k:').join('\n') + ' 1';
    for (const opener of ['-[:', 'a: x[', "a: it's", 'a: x, "oops']) {
      const text = `${opener}\n${deepBlock(100)}`;
      expect(yamlNestingBound(text)).toBeGreaterThanOrEqual(depthOf(parseDocument(text).toJS()));
      expect(yamlNestingBound(text)).toBeGreaterThanOrEqual(100);
    }
    const quotedAcrossLines = '[ "x\n ", ' + '['.repeat(200) + ']'.repeat(200) + ' ]';
    expect(yamlNestingBound(quotedAcrossLines)).toBeGreaterThanOrEqual(200);
    for (const text of [
      '[-[:\n-',
      ': [-[-',
      '[a[>[>{',
      '{"-[":{"":{"":{"":""}}}}',
      '-[:\n  "":\n    "":\n      "": ""',
    ]) {
      expect(yamlNestingBound(text)).toBeGreaterThanOrEqual(depthOf(parseDocument(text).toJS()));
    }
  });

  it('counts flow brackets, block indentation and sequence markers on one line', () => {
    expect(yamlNestingBound('a: ' + '['.repeat(5000) + ']'.repeat(5000))).toBeGreaterThanOrEqual(5000);
    expect(yamlNestingBound('- '.repeat(300) + 'x')).toBeGreaterThanOrEqual(300);
    const block = Array.from({ length: 100 }, (_, i) => ' '.repeat(i) + 'a:').join('\n') + ' 1';
    expect(yamlNestingBound(block)).toBeGreaterThanOrEqual(100);
  });

  it('ignores brackets in quoted scalars and comments, and sibling keys add nothing', () => {
    expect(yamlNestingBound('name: "[[[[[[["\nnote: \'{{{{\' # [[[[[[\ndescription: x')).toBe(2);
    expect(yamlNestingBound('a: 1\nb: 2\nc:\n  d: 3\ne: 4')).toBe(4);
  });

  it("covers sequences written at their key's indentation", () => {
    const text = 'a:\n- b:\n  - c:\n    - d';
    expect(depthOf(parseDocument(text).toJS())).toBe(6);
    expect(yamlNestingBound(text)).toBeGreaterThanOrEqual(6);
  });
});
