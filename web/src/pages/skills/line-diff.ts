/**
 * A line diff for the skills page: the longest common subsequence of two texts' lines, walked into kept,
 * removed and added lines. Pure and small; quadratic in the line counts, which is fine for SKILL.md files
 * (inputs beyond `MAX_CELLS` fall back to "everything removed, everything added").
 */

/** One line of a diff: in both texts, only in the old one, or only in the new one. */
export interface DiffLine {
  kind: 'same' | 'removed' | 'added';
  text: string;
}

/** Above this many table cells (old lines × new lines) the diff is not computed line by line. */
const MAX_CELLS = 4_000_000;

/** The lines of `text`, with a final newline not making an empty last line. */
function linesOf(text: string): string[] {
  if (text === '') return [];
  const lines = text.replace(/\r\n/g, '\n').split('\n');
  if (lines[lines.length - 1] === '') lines.pop();
  return lines;
}

/** The diff turning `before` into `after`, line by line, in order. */
export function lineDiff(before: string, after: string): DiffLine[] {
  const a = linesOf(before);
  const b = linesOf(after);
  const n = a.length;
  const m = b.length;
  if (n * m > MAX_CELLS) {
    return [
      ...a.map((text): DiffLine => ({ kind: 'removed', text })),
      ...b.map((text): DiffLine => ({ kind: 'added', text })),
    ];
  }
  // common[i][j]: the length of the longest common subsequence of a[i..] and b[j..], row-major.
  const width = m + 1;
  const common = new Uint32Array((n + 1) * width);
  for (let i = n - 1; i >= 0; i--) {
    for (let j = m - 1; j >= 0; j--) {
      common[i * width + j] =
        a[i] === b[j]
          ? (common[(i + 1) * width + j + 1] ?? 0) + 1
          : Math.max(common[(i + 1) * width + j] ?? 0, common[i * width + j + 1] ?? 0);
    }
  }
  const out: DiffLine[] = [];
  let i = 0;
  let j = 0;
  while (i < n && j < m) {
    if (a[i] === b[j]) {
      out.push({ kind: 'same', text: a[i] ?? '' });
      i++;
      j++;
    } else if ((common[(i + 1) * width + j] ?? 0) >= (common[i * width + j + 1] ?? 0)) {
      out.push({ kind: 'removed', text: a[i] ?? '' });
      i++;
    } else {
      out.push({ kind: 'added', text: b[j] ?? '' });
      j++;
    }
  }
  for (; i < n; i++) out.push({ kind: 'removed', text: a[i] ?? '' });
  for (; j < m; j++) out.push({ kind: 'added', text: b[j] ?? '' });
  return out;
}
