/**
 * Paragraph-aware chunking of documents before indexing (DECISIONS §9:
 * knowledge "chunks and indexes the text").
 */

/** Chunk size bounds, in characters (UTF-16 code units). */
export interface ChunkOptions {
  /** A chunk is closed at a paragraph boundary once it has at least this much text; default 800. */
  minChars?: number;
  /** No chunk is longer than this, overlap included; default 1200. */
  maxChars?: number;
  /** Characters of the previous chunk's end repeated at the start of the next (cut at a word); default 100. */
  overlapChars?: number;
}

const SENTENCE_END = /(?<=[.!?。！？])\s+/u;

/**
 * Splits `text` into chunks of about `minChars`..`maxChars` characters:
 * whole paragraphs (separated by blank lines) are packed together; a
 * paragraph too long for one chunk is split at sentence ends, and a sentence
 * too long at a space (or anywhere, for text without spaces). Each chunk
 * after the first starts with the last ~`overlapChars` of the previous one,
 * so a passage cut at a boundary is still found whole in one of them. The
 * last chunk may be shorter than `minChars`. Blank text gives no chunks.
 * Linear in the length of the text.
 */
export function chunkText(text: string, options: ChunkOptions = {}): string[] {
  const maxChars = options.maxChars ?? 1200;
  const minChars = Math.min(options.minChars ?? 800, maxChars);
  const overlapChars = Math.min(options.overlapChars ?? 100, Math.floor(maxChars / 4));
  const budget = maxChars - overlapChars - 1; // the overlap and its separating space

  const units: string[] = [];
  for (const raw of text.replace(/\r\n?/g, '\n').split(/\n[ \t]*\n/)) {
    const paragraph = raw.trim();
    if (paragraph !== '') units.push(...splitLong(paragraph, budget));
  }

  const chunks: string[] = [];
  let current = '';
  let overlap = '';
  const close = (): void => {
    chunks.push(overlap === '' ? current : `${overlap} ${current}`);
    overlap = tail(current, overlapChars);
    current = '';
  };
  for (const unit of units) {
    if (current === '') {
      current = unit;
    } else if (current.length + 2 + unit.length <= budget) {
      current = `${current}\n\n${unit}`;
    } else if (current.length >= minChars - overlap.length) {
      close();
      current = unit;
    } else {
      // Too short to close: fill the chunk with the start of this unit, carry the rest.
      const room = budget - current.length - 2;
      const [head, rest] = splitAt(unit, room);
      current = `${current}\n\n${head}`;
      close();
      current = rest;
    }
  }
  if (current !== '') close();
  return chunks;
}

/** Pieces of at most `limit` characters: sentences first, then words, then hard cuts. */
function splitLong(paragraph: string, limit: number): string[] {
  if (paragraph.length <= limit) return [paragraph];
  const pieces: string[] = [];
  let current = '';
  for (const sentence of paragraph.split(SENTENCE_END)) {
    let rest = sentence;
    while (rest.length > limit) {
      const [head, tailPart] = splitAt(rest, limit);
      if (current !== '') {
        pieces.push(current);
        current = '';
      }
      pieces.push(head);
      rest = tailPart;
    }
    if (rest === '') continue;
    if (current === '') current = rest;
    else if (current.length + 1 + rest.length <= limit) current = `${current} ${rest}`;
    else {
      pieces.push(current);
      current = rest;
    }
  }
  if (current !== '') pieces.push(current);
  return pieces;
}

/** Splits at the last space within `limit` characters (or exactly at `limit` when there is none). */
function splitAt(text: string, limit: number): [string, string] {
  if (text.length <= limit) return [text, ''];
  const room = Math.max(1, limit);
  const space = text.lastIndexOf(' ', room);
  const cut = space > room / 2 ? space : room;
  return [text.slice(0, cut).trimEnd(), text.slice(cut).trimStart()];
}

/** The last ~`length` characters of `text`, starting at a word. */
function tail(text: string, length: number): string {
  if (length <= 0) return '';
  if (text.length <= length) return text.replace(/\s+/g, ' ');
  const start = text.length - length;
  const space = text.indexOf(' ', start);
  const piece = space !== -1 && space < text.length - 1 ? text.slice(space + 1) : text.slice(start);
  return piece.replace(/\s+/g, ' ').trim();
}
