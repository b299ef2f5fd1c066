/**
 * `depth` objects nested as `{a: {a: …}}`, built with a loop (no recursion, so any depth is cheap to make).
 * The innermost object is empty, or holds `a: leaf` when a leaf is given.
 */
export function deepObject(depth: number, leaf?: unknown): Record<string, unknown> {
  const root: Record<string, unknown> = {};
  let node = root;
  for (let i = 1; i < depth; i++) {
    const next: Record<string, unknown> = {};
    node.a = next;
    node = next;
  }
  if (leaf !== undefined) node.a = leaf;
  return root;
}
