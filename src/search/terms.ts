/**
 * The one tokenizer of the search engine. Both databases index the tokens
 * produced here (SQLite FTS5 gets them space-separated, PostgreSQL gets them
 * as a literal tsvector), and queries are reduced to the same tokens, so the
 * two backends match exactly the same terms and no query text ever reaches a
 * full-text parser: FTS syntax characters (`"`, `*`, `:`, `-`, parentheses,
 * `OR`, `NEAR`) are just separators or plain words here.
 *
 * A token is a run of letters and digits after Unicode compatibility
 * decomposition with combining marks removed and lower-casing (`Café` →
 * `cafe`). Han, Hiragana and Katakana characters are one token each, since
 * those scripts do not separate words with spaces. Tokens are cut at
 * {@link MAX_TOKEN_LENGTH} characters. No stemming: the index is language
 * neutral; the optional embeddings carry the semantics.
 */

/** Longest token kept; longer runs (hashes, base64) are cut to this length on both sides. */
export const MAX_TOKEN_LENGTH = 64;

/** Most distinct terms a query is reduced to. */
export const MAX_QUERY_TERMS = 16;

const CJK = String.raw`\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}`;
const TOKEN = new RegExp(`[${CJK}]|(?:(?![${CJK}])[\\p{L}\\p{N}])+`, 'gu');
const WORD = /[\p{L}\p{M}\p{N}]+/gu;
const MARKS = /\p{M}/gu;

/**
 * Small English stop-word list, dropped from queries (never from the index)
 * when the query has other terms: a term found in nearly every chunk only
 * costs time and adds nothing to the ranking.
 */
const STOP_WORDS = new Set(
  (
    'a an and are as at be been but by can did do does for from had has have how i if in into is it its me ' +
    'my no not of on or our so than that the their them then there these they this to was we were what when ' +
    'where which who why will with you your'
  ).split(' '),
);

/** Lower-cased, compatibility-decomposed text without combining marks. */
export function normalizeText(text: string): string {
  return text.normalize('NFKD').replace(MARKS, '').toLowerCase();
}

/** The tokens of `text`, in order, duplicates kept (positions matter to the index). */
export function tokenize(text: string): string[] {
  const out: string[] = [];
  for (const match of normalizeText(text).matchAll(TOKEN)) {
    const token = match[0];
    out.push(token.length > MAX_TOKEN_LENGTH ? token.slice(0, MAX_TOKEN_LENGTH) : token);
  }
  return out;
}

/**
 * The distinct search terms of a query, at most {@link MAX_QUERY_TERMS}, in
 * order of first appearance, stop words removed unless nothing else is left.
 * Empty when the query has no letters or digits at all.
 */
export function queryTerms(query: string): string[] {
  const distinct = [...new Set(tokenize(query))];
  const meaningful = distinct.filter((term) => !STOP_WORDS.has(term));
  return (meaningful.length > 0 ? meaningful : distinct).slice(0, MAX_QUERY_TERMS);
}

/**
 * A short excerpt of `text` around the first word matching one of `terms`
 * (as produced by `queryTerms`), cut at word boundaries, with `…` where text
 * was left out. Without a matching word: the start of the text.
 */
export function snippet(text: string, terms: readonly string[], maxLength = 240): string {
  const clean = text.replace(/\s+/g, ' ').trim();
  if (clean.length <= maxLength) return clean;
  const wanted = new Set(terms);
  let hit = -1;
  for (const match of clean.matchAll(WORD)) {
    if (tokenize(match[0]).some((token) => wanted.has(token))) {
      hit = match.index;
      break;
    }
  }
  // Show a little context before the hit: about a quarter of the window.
  let start = hit <= 0 ? 0 : Math.max(0, hit - Math.floor(maxLength / 4));
  let end = Math.min(clean.length, start + maxLength);
  start = Math.max(0, end - maxLength);
  if (start > 0) {
    const space = clean.indexOf(' ', start);
    if (space !== -1 && space < (hit === -1 ? end : hit)) start = space + 1;
  }
  if (end < clean.length) {
    const space = clean.lastIndexOf(' ', end);
    if (space > start) end = space;
  }
  return `${start > 0 ? '…' : ''}${clean.slice(start, end)}${end < clean.length ? '…' : ''}`;
}
