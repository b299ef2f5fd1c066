/**
 * Highlighting of search matches (memory and knowledge), built as text and `<mark>` nodes, never HTML. Words
 * are compared the way the server's tokenizer compares them (`src/search/terms.ts`): compatibility-decomposed,
 * combining marks removed, lower-cased, runs of letters and digits; Han, Hiragana and Katakana characters one
 * token each.
 */
import './highlight.css';

const CJK = String.raw`\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}`;
const TOKEN = new RegExp(`[${CJK}]|(?:(?![${CJK}])[\\p{L}\\p{N}])+`, 'gu');
const WORD = /[\p{L}\p{M}\p{N}]+/gu;
const MARKS = /\p{M}/gu;

/** The normalized tokens of `text`, as the server indexes them. */
export function tokens(text: string): string[] {
  const normalized = text.normalize('NFKD').replace(MARKS, '').toLowerCase();
  return [...normalized.matchAll(TOKEN)].map((match) => match[0]);
}

/** The distinct tokens of a query, to highlight in the results. */
export function queryTokens(query: string): Set<string> {
  return new Set(tokens(query));
}

/** A piece of highlighted text: plain, or a match of one of the terms. */
export interface Piece {
  text: string;
  match: boolean;
}

/** Cuts `text` into plain and matching pieces; a word matches when one of its tokens is one of `terms`. */
export function splitMatches(text: string, terms: ReadonlySet<string>): Piece[] {
  const pieces: Piece[] = [];
  if (terms.size === 0) return [{ text, match: false }];
  let last = 0;
  for (const word of text.matchAll(WORD)) {
    if (!tokens(word[0]).some((token) => terms.has(token))) continue;
    if (word.index > last) pieces.push({ text: text.slice(last, word.index), match: false });
    pieces.push({ text: word[0], match: true });
    last = word.index + word[0].length;
  }
  if (last < text.length) pieces.push({ text: text.slice(last), match: false });
  return pieces;
}

/** `text` with the words matching `terms` wrapped in `<mark>`. */
export function Highlighted({ text, terms }: { text: string; terms: ReadonlySet<string> }) {
  return (
    <>
      {splitMatches(text, terms).map((piece, index) =>
        piece.match ? <mark key={index}>{piece.text}</mark> : piece.text,
      )}
    </>
  );
}
