import { chmodSync, closeSync, fchmodSync, fstatSync, mkdirSync, openSync, statSync, type OpenMode } from 'node:fs';
import { chmod, mkdir, open, stat, type FileHandle } from 'node:fs/promises';

/**
 * Files only the gateway's own user may read (ADR 0013): the data directory
 * and the directories under it 0700; the database, the audit log and the log
 * files 0600. Created with those modes, and tightened when an older install
 * left them wider: every group and other bit is cleared, the owner's bits
 * stay (a tighter mode is never loosened). Changing a mode is best effort: a filesystem without
 * POSIX modes (or a file owned by another user) keeps what it has, and the
 * caller goes on.
 */

/** Mode of a private directory. */
export const PRIVATE_DIR_MODE = 0o700;
/** Mode of a private file. */
export const PRIVATE_FILE_MODE = 0o600;

/** Group and other permission bits: none may remain on a private path. */
const SHARED_BITS = 0o077;

/** The mode without group and other bits, or null when it has none to clear. */
function tightened(mode: number): number | null {
  return (mode & SHARED_BITS) === 0 ? null : mode & 0o700;
}

function tightenSync(path: string): void {
  try {
    const mode = tightened(statSync(path).mode);
    if (mode !== null) chmodSync(path, mode);
  } catch {
    // best effort (see the module comment); a missing path is the caller's concern
  }
}

/** Creates `dir` (and missing parents) with mode 0700, or tightens it to 0700 when it exists. */
export function ensurePrivateDirSync(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
  tightenSync(dir);
}

/** Async `ensurePrivateDirSync`. */
export async function ensurePrivateDir(dir: string): Promise<void> {
  await mkdir(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
  try {
    const mode = tightened((await stat(dir)).mode);
    if (mode !== null) await chmod(dir, mode);
  } catch {
    // best effort
  }
}

/** Clears the group and other bits of an existing file; a missing file is left missing. */
export function tightenPrivateFileSync(path: string): void {
  tightenSync(path);
}

/**
 * Opens (creating when missing) a file with mode 0600, or tightens it when
 * it already existed wider. Returns the descriptor; throws as `openSync`.
 */
export function openPrivateFileSync(path: string, flags: OpenMode): number {
  const fd = openSync(path, flags, PRIVATE_FILE_MODE);
  try {
    const mode = tightened(fstatSync(fd).mode);
    if (mode !== null) fchmodSync(fd, mode);
  } catch {
    // best effort
  }
  return fd;
}

/** Creates an empty private file when missing, tightens it otherwise (e.g. before a library opens it). */
export function touchPrivateFileSync(path: string): void {
  closeSync(openPrivateFileSync(path, 'a'));
}

/** Async `openPrivateFileSync`: a FileHandle on a file of mode 0600. */
export async function openPrivateFile(path: string, flags: OpenMode): Promise<FileHandle> {
  const handle = await open(path, flags, PRIVATE_FILE_MODE);
  try {
    const mode = tightened((await handle.stat()).mode);
    if (mode !== null) await handle.chmod(mode);
  } catch {
    // best effort
  }
  return handle;
}
