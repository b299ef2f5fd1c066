/**
 * "Did you mean …?" for a mistyped name: the closest of `candidates` by edit distance (insertions, deletions,
 * substitutions and swaps of two neighbours, each counting one), when it is close enough to be the likely
 * intent: at most a third of the word's length away (at least one edit), and no other candidate as close.
 * Used for unknown commands of the command line and unknown keys of the configuration.
 */
export function didYouMean(word: string, candidates: Iterable<string>): string | undefined {
  const limit = Math.max(1, Math.floor(word.length / 3));
  let best: string | undefined;
  let bestDistance = Infinity;
  let tie = false;
  for (const candidate of candidates) {
    if (candidate === word) continue;
    const distance = editDistance(word.toLowerCase(), candidate.toLowerCase());
    if (distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
      tie = false;
    } else if (distance === bestDistance) {
      tie = true;
    }
  }
  return best !== undefined && bestDistance <= limit && !tie ? best : undefined;
}

/** Optimal string alignment distance: Levenshtein plus the swap of two adjacent characters. */
function editDistance(a: string, b: string): number {
  const rows: number[][] = Array.from({ length: a.length + 1 }, (_, i) => [i]);
  for (let j = 1; j <= b.length; j++) rows[0]![j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let d = Math.min(rows[i - 1]![j]! + 1, rows[i]![j - 1]! + 1, rows[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d = Math.min(d, rows[i - 2]![j - 2]! + 1);
      rows[i]![j] = d;
    }
  }
  return rows[a.length]![b.length]!;
}
