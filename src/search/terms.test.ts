import { describe, expect, it } from 'vitest';
import { MAX_QUERY_TERMS, MAX_TOKEN_LENGTH, queryTerms, snippet, tokenize } from './terms.js';

describe('tokenize', () => {
  it('lower-cases, folds diacritics and compatibility forms, keeps letters and digits only', () => {
    expect(tokenize('Café au LAIT, ﬁne-tuned v2.0!')).toEqual(['cafe', 'au', 'lait', 'fine', 'tuned', 'v2', '0']);
  });

  it('treats FTS syntax as separators or plain words', () => {
    expect(tokenize('"a*" OR b-c:(d) NEAR/3 ^e')).toEqual(['a', 'or', 'b', 'c', 'd', 'near', '3', 'e']);
  });

  it('splits Han, Hiragana and Katakana into single characters, keeps other scripts as words', () => {
    expect(tokenize('東京タワー is 高い; Ελληνικά русский')).toEqual([
      '東',
      '京',
      'タ',
      'ワ',
      'ー',
      'is',
      '高',
      'い',
      'ελληνικα',
      'русскии',
    ]);
  });

  it('cuts very long runs', () => {
    const [token] = tokenize('x'.repeat(500));
    expect(token).toHaveLength(MAX_TOKEN_LENGTH);
  });
});

describe('queryTerms', () => {
  it('dedupes and drops stop words when something else is left', () => {
    expect(queryTerms('What is the capital of the France France?')).toEqual(['capital', 'france']);
  });

  it('keeps stop words when they are all there is', () => {
    expect(queryTerms('to be or not to be')).toEqual(['to', 'be', 'or', 'not']);
  });

  it('is empty without letters or digits, and bounded', () => {
    expect(queryTerms('"*" -:() ||| ')).toEqual([]);
    const many = Array.from({ length: 40 }, (_, i) => `w${i}`).join(' ');
    expect(queryTerms(many)).toHaveLength(MAX_QUERY_TERMS);
  });
});

describe('snippet', () => {
  const text = `${'filler words here. '.repeat(30)}The webhook secret signs every request. ${'more text. '.repeat(30)}`;

  it('returns short text whole, whitespace collapsed', () => {
    expect(snippet('a  b\n\nc', ['b'])).toBe('a b c');
  });

  it('centres on the first matching word, with ellipses, within the length', () => {
    const out = snippet(text, ['webhook'], 120);
    expect(out).toContain('webhook secret');
    expect(out.startsWith('…')).toBe(true);
    expect(out.endsWith('…')).toBe(true);
    expect(out.length).toBeLessThanOrEqual(122);
  });

  it('matches folded forms and falls back to the start', () => {
    expect(snippet(`${'x '.repeat(200)}CAFÉ`, ['cafe'], 40)).toContain('CAFÉ');
    expect(snippet(text, ['absent'], 60).startsWith('filler')).toBe(true);
  });
});
