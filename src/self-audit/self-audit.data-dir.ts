import { lstat, readdir, stat } from 'node:fs/promises';
import { join, relative, sep } from 'node:path';
import { finding, quoted, SEVERITIES, type SecurityFinding, type Severity } from './self-audit.findings.js';

/**
 * The self-audit's data-dir check (ADR 0023): a bounded walk of the data dir
 * through a `FileProbe`, judging group and other permission bits by reach.
 */

/** What the probe knows about one path. */
export interface ProbeEntry {
  kind: 'dir' | 'file' | 'symlink' | 'other';
  /** Permission bits (`mode & 0o777`). */
  mode: number;
}

/** The file system as the data-dir check sees it. */
export interface FileProbe {
  /** False where file modes mean nothing (Windows): the check is skipped. */
  readonly posixModes: boolean;
  /** The entry at `path` (a symbolic link itself unless `follow`), or null when it does not exist. */
  entry(path: string, follow: boolean): Promise<ProbeEntry | null>;
  /** The names in a directory; throws when it cannot be read. */
  list(dir: string): Promise<string[]>;
  /** Joins a directory and a name. */
  join(dir: string, name: string): string;
}

/** The kind of a `Stats`. */
function kindOf(stats: { isDirectory(): boolean; isFile(): boolean; isSymbolicLink(): boolean }): ProbeEntry['kind'] {
  if (stats.isSymbolicLink()) return 'symlink';
  if (stats.isDirectory()) return 'dir';
  if (stats.isFile()) return 'file';
  return 'other';
}

/**
 * The real file system for the self-audit's data-dir check (ADR 0023):
 * asynchronous `lstat`/`stat` and `readdir`, so a running gateway's event loop
 * keeps serving during the walk. A path that vanished reads as missing.
 */
export const nodeFileProbe: FileProbe = {
  posixModes: process.platform !== 'win32',
  async entry(path, follow) {
    try {
      const stats = follow ? await stat(path) : await lstat(path);
      return { kind: kindOf(stats), mode: stats.mode & 0o777 };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw err;
    }
  },
  list: (dir) => readdir(dir),
  join: (dir, name) => join(dir, name),
};

/** Bounds of the data-dir walk. */
export interface WalkLimits {
  /** Entries examined below the data dir, at most. */
  maxEntries: number;
  /** Levels below the data dir, at most (its children are level 1). */
  maxDepth: number;
}

/** At most 10 000 entries, 6 levels deep: a data dir holds a database, logs and a few small files. */
export const DATA_WALK_LIMITS: WalkLimits = { maxEntries: 10_000, maxDepth: 6 };

/** How many exposed paths a finding names before "and N more". */
const SAMPLE_PATHS = 5;

/** One path with group or other permission bits, judged. */
interface Exposure {
  path: string;
  mode: number;
  severity: Severity;
  why: string;
}

type Audience = 'other' | 'group';

/** The verdict on one audience's bits. */
type Judged = Pick<Exposure, 'severity' | 'why'>;

/**
 * Judges the bits one audience has on an entry. `reachable`: every directory
 * from the data dir down to the entry lets that audience in (x); otherwise
 * the bits are latent (info), one `chmod` away from mattering.
 */
function judgeBits(bits: number, isDir: boolean, reachable: boolean, audience: Audience): Judged | null {
  const who = audience === 'other' ? 'other users' : 'the group';
  const judged = (why: string, reached: Severity): Judged =>
    reachable ? { severity: reached, why } : { severity: 'info', why: `${why}, once a directory above lets ${who} in` };
  const strong: Severity = audience === 'other' ? 'critical' : 'warning';
  if (isDir) {
    if (bits & 0o2) return judged(`${who} may add, replace and delete files in it`, strong);
    if (bits & 0o5) return judged(`${who} may list or enter it`, audience === 'other' ? 'warning' : 'info');
    return null;
  }
  if (bits & 0o6)
    return judged(`${who} may ${bits & 0o4 ? (bits & 0o2 ? 'read and write' : 'read') : 'write'} it`, strong);
  return null; // execute alone opens nothing
}

/** One finding for an audience's exposures: the worst severity, the worst paths named. */
function exposureFinding(
  id: 'data.world_accessible' | 'data.group_accessible',
  dataDir: string,
  exposures: Exposure[],
): SecurityFinding {
  const order = (e: Exposure): number => SEVERITIES.indexOf(e.severity);
  const sorted = [...exposures].sort((a, b) => order(a) - order(b) || a.path.localeCompare(b.path));
  const severity = sorted[0]!.severity;
  const named = sorted
    .slice(0, SAMPLE_PATHS)
    .map((e) => `${e.path} (${e.mode.toString(8).padStart(4, '0')}: ${e.why})`);
  const more = sorted.length > SAMPLE_PATHS ? `; and ${sorted.length - SAMPLE_PATHS} more` : '';
  const bits = id === 'data.world_accessible' ? 'o' : 'g';
  return finding(
    id,
    severity,
    `${sorted.length} path(s) under ${dataDir}: ${named.join('; ')}${more}. The data dir holds the database, ` +
      'the audit log, the logs and the generated admin token.',
    `chmod 700 ${quoted(dataDir)} && chmod -R ${bits}-rwx ${quoted(dataDir)} (the gateway creates everything ` +
      '0700/0600 and tightens what it opens at start).',
  );
}

/** A path relative to the data dir (the data dir itself named so), always with `/`. */
function shown(dataDir: string, path: string): string {
  const rel = relative(dataDir, path);
  return rel === '' ? 'the data dir itself' : rel.split(sep).join('/');
}

/**
 * Walks the data dir (bounded by `limits`, symbolic links not followed) and
 * reports paths with group or other permission bits: `data.world_accessible`
 * (critical when another user can read or write a file or write a directory
 * through directories that let them in; warning when they can only list or
 * enter a directory; info when a private directory above shields the bits),
 * `data.group_accessible` (the same for the group, one step milder),
 * `data.scan_incomplete` (info: the bounds were hit, or directories could not
 * be read) and `data.dir_missing` (info).
 */
export async function auditDataDir(
  dataDir: string,
  probe: FileProbe,
  limits: WalkLimits = DATA_WALK_LIMITS,
): Promise<SecurityFinding[]> {
  if (!probe.posixModes) {
    return [
      finding(
        'data.scan_incomplete',
        'info',
        `File modes are not POSIX permissions on this platform, so ${dataDir} was not checked.`,
        "Check the data dir's access control list by hand: only the gateway's user should read it.",
      ),
    ];
  }
  let root: ProbeEntry | null;
  try {
    root = await probe.entry(dataDir, true);
  } catch (err) {
    return [
      finding(
        'data.scan_incomplete',
        'info',
        `${dataDir} could not be examined (${(err as NodeJS.ErrnoException).code ?? 'unreadable'}).`,
        "Run the audit as the gateway's user.",
      ),
    ];
  }
  if (root === null || root.kind !== 'dir') {
    return [
      finding(
        'data.dir_missing',
        'info',
        root === null
          ? `data_dir ${dataDir} does not exist; the gateway creates it (0700) at its first start.`
          : `data_dir ${dataDir} exists but is not a directory; the gateway cannot start on it.`,
        root === null ? 'Nothing to do.' : 'Point data_dir at a directory (or remove the file).',
      ),
    ];
  }

  interface Dir {
    path: string;
    depth: number;
    mode: number;
    reach: Record<Audience, boolean>;
  }
  const exposures: Record<Audience, Exposure[]> = { other: [], group: [] };
  const judge = (path: string, entry: ProbeEntry, reach: Record<Audience, boolean>): void => {
    const isDir = entry.kind === 'dir';
    for (const [audience, shift] of [
      ['other', 0],
      ['group', 3],
    ] as const) {
      const judged = judgeBits((entry.mode >> shift) & 0o7, isDir, reach[audience], audience);
      if (judged) exposures[audience].push({ ...judged, path: shown(dataDir, path), mode: entry.mode & 0o777 });
    }
  };

  const rootReach = { other: true, group: true }; // what lies above the data dir is not judged
  judge(dataDir, root, rootReach);
  const queue: Dir[] = [{ path: dataDir, depth: 0, mode: root.mode, reach: rootReach }];
  let examined = 0;
  let unreadable = 0;
  let truncated = false;
  walk: for (let next = 0; next < queue.length; next++) {
    const dir = queue[next]!;
    let names: string[];
    try {
      names = (await probe.list(dir.path)).sort();
    } catch {
      unreadable++;
      continue;
    }
    if (names.length > 0 && dir.depth >= limits.maxDepth) {
      truncated = true;
      continue;
    }
    const reach = {
      other: dir.reach.other && (dir.mode & 0o001) !== 0,
      group: dir.reach.group && (dir.mode & 0o010) !== 0,
    };
    for (const name of names) {
      if (examined >= limits.maxEntries) {
        truncated = true;
        break walk;
      }
      examined++;
      const path = probe.join(dir.path, name);
      let entry: ProbeEntry | null;
      try {
        entry = await probe.entry(path, false);
      } catch {
        unreadable++;
        continue;
      }
      if (entry === null || entry.kind === 'symlink') continue; // gone meanwhile, or a link: not followed
      judge(path, entry, reach);
      if (entry.kind === 'dir') queue.push({ path, depth: dir.depth + 1, mode: entry.mode, reach });
    }
  }

  const out: SecurityFinding[] = [];
  if (exposures.other.length > 0) out.push(exposureFinding('data.world_accessible', dataDir, exposures.other));
  if (exposures.group.length > 0) out.push(exposureFinding('data.group_accessible', dataDir, exposures.group));
  if (truncated || unreadable > 0) {
    const why = [
      ...(truncated
        ? [
            `the walk stopped at its bound (${limits.maxEntries} entries, ${limits.maxDepth} levels) after ${examined} entries`,
          ]
        : []),
      ...(unreadable > 0 ? [`${unreadable} path(s) could not be read`] : []),
    ];
    out.push(
      finding(
        'data.scan_incomplete',
        'info',
        `${dataDir} was checked in part: ${why.join('; ')}.`,
        "Keep only the gateway's files in the data dir, or check the rest by hand (e.g. `find DATA_DIR -perm /077`).",
      ),
    );
  }
  return out;
}
