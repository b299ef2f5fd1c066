import { ConfigError } from '../config/config.load.js';
import { statfsSync } from 'node:fs';
import { DataDirTakenError, InstanceTakenError, StoreUnavailableError } from '../store/index.js';
import { CliError, EXIT } from './io.js';

/** Error codes that mean the disk refused a write for want of space. */
const DISK_FULL_CODES = new Set(['SQLITE_FULL', 'ENOSPC', 'EDQUOT']);

/** What SQLite and the OS say when an error lost its code on the way up. */
const DISK_FULL_TEXT = /database or disk is full|no space left on device/i;

/** Below this many free bytes, an I/O error at start is taken for a full disk. */
const NEARLY_FULL_BYTES = 1024 * 1024;

/** True when the file system holding `dir` has less than NEARLY_FULL_BYTES free for this user. */
function diskNearlyFull(dir: string): boolean {
  try {
    const stats = statfsSync(dir);
    return stats.bavail * stats.bsize < NEARLY_FULL_BYTES;
  } catch {
    return false;
  }
}

/** The errors along `err`'s `cause` chain, outermost first (bounded). */
function causes(err: unknown): unknown[] {
  const chain: unknown[] = [];
  for (let e = err, depth = 0; e !== undefined && e !== null && depth < 8; depth++) {
    chain.push(e);
    e = e instanceof Error ? e.cause : undefined;
  }
  return chain;
}

function codeOf(err: unknown): string | null {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : null;
}

/**
 * An operator's one line for a start that failed for a reason outside the
 * code (a full disk, a data dir or instance id held by another live gateway,
 * a database out of reach), as a CliError exiting 1 with no stack trace;
 * null for anything else, which stays a fatal error with its stack.
 */
export function startFailure(err: unknown, dataDir: string): CliError | null {
  const chain = causes(err);
  const full =
    chain.find((e) => DISK_FULL_CODES.has(codeOf(e) ?? '') || (e instanceof Error && DISK_FULL_TEXT.test(e.message))) ??
    // SQLite reports a full disk as an I/O error where it extends its shared-memory file: ask the file system.
    (chain.some((e) => /^SQLITE_IOERR/.test(codeOf(e) ?? '')) && diskNearlyFull(dataDir) ? chain.at(-1) : undefined);
  if (full !== undefined) {
    const sqlite = chain.some(
      (e) => /^SQLITE_/.test(codeOf(e) ?? '') || (e instanceof Error && /SQLite/.test(e.message)),
    );
    const what = sqlite ? 'SQLite could not write' : 'a file could not be written';
    return new CliError(
      `data dir ${dataDir}: the disk is full (${what}); free some space and start again\nstart-up refused`,
      EXIT.failure,
    );
  }
  if (err instanceof ConfigError) return new CliError(`${err.message}\nstart-up refused`, EXIT.usage);
  if (err instanceof DataDirTakenError || err instanceof InstanceTakenError) {
    return new CliError(`${err.message}\nstart-up refused`, EXIT.failure);
  }
  if (err instanceof StoreUnavailableError) {
    return new CliError(`the store is unavailable: ${err.message}\nstart-up refused`, EXIT.failure);
  }
  return null;
}
