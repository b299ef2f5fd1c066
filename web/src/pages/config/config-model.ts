/**
 * The Config page's model: the redacted configuration (GET /config) as leaves addressed by key paths, the
 * operator's edits over it, the partial configuration those edits make (only changed keys are sent, so a
 * redacted `"***"` never goes back as a value), and the list of changes shown before applying.
 */

/** The value at a leaf: anything JSON but a plain object (lists are leaves). */
export type Leaf = unknown;
/** A key path (`['provider', 'pricing', 'gpt-4.1', 'input_per_mtok']`); keys may contain dots. */
export type Path = readonly string[];

/** The placeholder the API shows instead of every secret. */
export const REDACTED = '***';

export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A stable key of a path, for maps. */
export function pathKey(path: Path): string {
  return JSON.stringify(path);
}

/** The dotted form the API uses in messages (`provider.model`). */
export function dotted(path: Path): string {
  return path.join('.');
}

/** Every leaf of `value` with its path; empty objects are leaves too (so they stay visible). */
export function leaves(value: unknown, prefix: string[] = []): Map<string, { path: Path; value: Leaf }> {
  const out = new Map<string, { path: Path; value: Leaf }>();
  const visit = (node: unknown, path: string[]) => {
    if (isObject(node) && Object.keys(node).length > 0) {
      for (const [key, child] of Object.entries(node)) visit(child, [...path, key]);
    } else {
      out.set(pathKey(path), { path, value: node });
    }
  };
  visit(value, prefix);
  return out;
}

export function same(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/** True when the API hid this value (a secret, or a list of them). */
export function isRedacted(value: unknown): boolean {
  return value === REDACTED || (Array.isArray(value) && value.length > 0 && value.every((v) => v === REDACTED));
}

/** The value at `path` of `root`, or undefined. */
export function valueAt(root: unknown, path: Path): unknown {
  let node = root;
  for (const key of path) node = isObject(node) ? node[key] : undefined;
  return node;
}

/** One change the operator made: old → new. */
export interface Change {
  path: Path;
  before: unknown;
  after: unknown;
}

/** The edits that really change something, in the order of the configuration's keys. */
export function changesOf(original: unknown, edits: ReadonlyMap<string, { path: Path; value: Leaf }>): Change[] {
  const out: Change[] = [];
  for (const { path, value } of edits.values()) {
    const before = valueAt(original, path);
    if (!same(before, value)) out.push({ path, before, after: value });
  }
  return out;
}

/** The partial configuration of `changes`, for validate, PUT and PATCH (deep-merged by the server). */
export function patchOf(changes: readonly Change[]): Record<string, unknown> {
  const patch: Record<string, unknown> = {};
  for (const { path, after } of changes) {
    let node = patch;
    path.forEach((key, index) => {
      if (index === path.length - 1) {
        node[key] = after;
      } else {
        const next = node[key];
        node[key] = isObject(next) ? next : {};
        node = node[key] as Record<string, unknown>;
      }
    });
  }
  return patch;
}

/** `original` with the edits applied, for the raw JSON view. */
export function merged(original: unknown, edits: ReadonlyMap<string, { path: Path; value: Leaf }>): unknown {
  const copy = structuredClone(original) as Record<string, unknown>;
  for (const { path, value } of edits.values()) {
    let node = copy;
    path.forEach((key, index) => {
      if (index === path.length - 1) node[key] = value;
      else {
        if (!isObject(node[key])) node[key] = {};
        node = node[key] as Record<string, unknown>;
      }
    });
  }
  return copy;
}

/** A value as the list of changes shows it; secrets never show. */
export function shown(value: unknown, secret: boolean): string {
  if (value === undefined) return '(not set)';
  if (secret && value !== null) return isRedacted(value) ? '(hidden)' : '(new secret, hidden)';
  if (value === null) return 'default';
  return JSON.stringify(value);
}

/** `{path, message}` issues (validate's `errors`, or an error envelope's `details`) by dotted path. */
export function issuesByPath(issues: unknown): Map<string, string> {
  const out = new Map<string, string>();
  if (!Array.isArray(issues)) return out;
  for (const issue of issues as unknown[]) {
    if (!isObject(issue)) continue;
    const { path, message } = issue;
    if (typeof message !== 'string') continue;
    const key = typeof path === 'string' ? path.replace(/^body\.?/, '') : '';
    out.set(key, out.has(key) ? `${out.get(key)}; ${message}` : message);
  }
  return out;
}
