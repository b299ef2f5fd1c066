import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { tightenPrivateFileSync } from '../../lib/private-files.js';
import { DataDirTakenError, errorMessage, StoreUnavailableError } from '../errors.js';

/** The lock file in the data dir: an empty SQLite database whose exclusive lock the holding process keeps. */
export const DATA_DIR_LOCK_FILE = 'gatehouse.lock';
/** Beside it, who holds the lock: for the refusal's message only, never for deciding anything. */
export const DATA_DIR_HOLDER_FILE = 'gatehouse.lock.json';

/** Who holds a data dir, as its holder wrote it down. */
export interface LockHolder {
  pid: number;
  host: string;
  started_at: string;
}

/** A held lock; `release` gives it up (idempotent). */
export interface HeldLock {
  release(): void;
}

/** Locks this process holds, so none is collected (and so released) while the gateway runs. */
const held = new Set<BetterSqlite3.Database>();

/**
 * Holds `<dataDir>/gatehouse.lock` for as long as this process lives, or
 * until `release()`: one SQLite gateway per data dir (DECISIONS §11).
 *
 * The lock is SQLite's own exclusive lock on an empty database file (a
 * POSIX record lock underneath), taken with `BEGIN EXCLUSIVE` and never
 * committed. The kernel drops it when the process dies however it dies
 * (kill -9 included), so a crash never blocks its own restart, and nothing
 * compares pids: a recycled pid or a zombie holds nothing. SQLite keeps
 * track of its locks across connections of one process, so a second
 * gateway in the same process is refused too.
 *
 * A predecessor that is still being torn down by the kernel may hold the
 * lock for a few milliseconds after its SIGKILL: the claim retries every
 * 25 ms for up to `waitMs` (default 3000) before it refuses with
 * DataDirTakenError, naming the holder from `gatehouse.lock.json`. Throws
 * StoreUnavailableError when the file cannot be created or opened (a full or
 * read-only disk).
 */
export async function lockDataDir(dataDir: string, options: { waitMs?: number } = {}): Promise<HeldLock> {
  const path = join(dataDir, DATA_DIR_LOCK_FILE);
  const deadline = Date.now() + (options.waitMs ?? 3000);
  let database: BetterSqlite3.Database;
  try {
    // Opened by SQLite alone: an open and close of the file elsewhere in this process would drop its locks.
    database = new BetterSqlite3(path, { timeout: 0 });
    tightenPrivateFileSync(path);
  } catch (error) {
    throw new StoreUnavailableError(`cannot open the data dir lock ${path}: ${errorMessage(error)}`, {
      cause: error,
    });
  }
  for (;;) {
    try {
      database.pragma('journal_mode = MEMORY'); // the lock writes nothing: no journal file beside it
      database.exec('BEGIN EXCLUSIVE');
      break;
    } catch (error) {
      if ((error as { code?: unknown }).code !== 'SQLITE_BUSY') {
        database.close();
        throw new StoreUnavailableError(`cannot lock ${path}: ${errorMessage(error)}`, { cause: error });
      }
      if (Date.now() >= deadline) {
        database.close();
        throw new DataDirTakenError(dataDir, describeHolder(readHolder(dataDir)));
      }
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  }
  held.add(database);
  const holderPath = join(dataDir, DATA_DIR_HOLDER_FILE);
  const holder: LockHolder = { pid: process.pid, host: hostname(), started_at: new Date().toISOString() };
  try {
    writeFileSync(holderPath, `${JSON.stringify(holder)}\n`, { mode: 0o600 });
  } catch {
    // Only a note for a refused successor's message: a full disk must not refuse the start for it.
    rmSync(holderPath, { force: true });
  }
  let released = false;
  return {
    release() {
      if (released) return;
      released = true;
      if (readHolder(dataDir)?.pid === process.pid) rmSync(holderPath, { force: true });
      held.delete(database);
      database.close(); // ends the open transaction: the lock goes with it
    },
  };
}

/** The holder as written down in the data dir, or null when there is no readable note. */
export function readHolder(dataDir: string): LockHolder | null {
  try {
    const parsed = JSON.parse(readFileSync(join(dataDir, DATA_DIR_HOLDER_FILE), 'utf8')) as Partial<LockHolder>;
    if (typeof parsed.pid !== 'number' || typeof parsed.host !== 'string') return null;
    return { pid: parsed.pid, host: parsed.host, started_at: String(parsed.started_at ?? '') };
  } catch {
    return null;
  }
}

function describeHolder(holder: LockHolder | null): string {
  if (!holder) return 'another process';
  return `another gateway (pid ${holder.pid} on ${holder.host}${holder.started_at ? `, started ${holder.started_at}` : ''})`;
}
