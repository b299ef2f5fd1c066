import { describe, expect, it } from 'vitest';
import { chunkText } from './chunker.js';

const sentence = (i: number) => `Sentence number ${i} talks about topic ${i % 7} in some detail.`;
const paragraph = (from: number, count: number) =>
  Array.from({ length: count }, (_, i) => sentence(from + i)).join(' ');

describe('chunkText', () => {
  it('gives no chunk for blank text and one chunk for short text', () => {
    expect(chunkText('  \n\n \t')).toEqual([]);
    expect(chunkText('  hello world  ')).toEqual(['hello world']);
  });

  it('packs paragraphs into chunks of about 800..1200 characters', () => {
    const text = Array.from({ length: 40 }, (_, i) => paragraph(i * 5, 5)).join('\n\n');
    const chunks = chunkText(text);
    expect(chunks.length).toBeGreaterThan(5);
    for (const chunk of chunks.slice(0, -1)) {
      expect(chunk.length).toBeGreaterThanOrEqual(800);
      expect(chunk.length).toBeLessThanOrEqual(1200);
    }
    expect(chunks.at(-1)!.length).toBeLessThanOrEqual(1200);
  });

  it('keeps whole paragraphs together where they fit', () => {
    const paragraphs = Array.from({ length: 12 }, (_, i) => paragraph(i * 3, 3));
    const chunks = chunkText(paragraphs.join('\n\n'));
    const first = chunks[0]!;
    // The first chunk ends at a paragraph boundary: its last paragraph is whole.
    const lastParagraph = first.split('\n\n').at(-1)!;
    expect(paragraphs).toContain(lastParagraph);
  });

  it('overlaps consecutive chunks a little', () => {
    const chunks = chunkText(Array.from({ length: 20 }, (_, i) => paragraph(i * 4, 4)).join('\n\n'));
    for (let i = 1; i < chunks.length; i++) {
      const head = chunks[i]!.slice(0, 40);
      const previous = chunks[i - 1]!.replace(/\s+/g, ' ');
      expect(previous).toContain(head.split(' ').slice(0, 4).join(' '));
    }
  });

  it('splits text without paragraphs, sentences or even spaces', () => {
    const oneParagraph = paragraph(0, 200);
    const byWords = 'word '.repeat(3000);
    const noSpaces = 'x'.repeat(5000);
    for (const text of [oneParagraph, byWords, noSpaces]) {
      const chunks = chunkText(text);
      expect(chunks.length).toBeGreaterThan(1);
      for (const chunk of chunks) expect(chunk.length).toBeLessThanOrEqual(1200);
    }
    // Nothing lost: every character of the text without spaces is covered.
    expect(
      chunkText(noSpaces)
        .map((c) => c.replace(/\s/g, ''))
        .join('').length,
    ).toBeGreaterThanOrEqual(5000);
  });

  it('handles CRLF and honours custom bounds', () => {
    const chunks = chunkText(Array.from({ length: 10 }, (_, i) => paragraph(i, 2)).join('\r\n\r\n'), {
      minChars: 100,
      maxChars: 300,
      overlapChars: 20,
    });
    for (const chunk of chunks) {
      expect(chunk.length).toBeLessThanOrEqual(300);
      expect(chunk).not.toContain('\r');
    }
  });

  it('chunks 10 MiB quickly', () => {
    const text = paragraph(0, 20)
      .concat('\n\n')
      .repeat(Math.ceil((10 * 1024 * 1024) / 1300));
    const started = performance.now();
    const chunks = chunkText(text);
    expect(performance.now() - started).toBeLessThan(3000);
    expect(chunks.length).toBeGreaterThan(8000);
  });
});
