import type { StoreDriver } from './store.js';
import { lockInstance, type InstanceLockEvents } from './postgres/instance-lock.js';
import { lockDataDir } from './sqlite/data-dir-lock.js';

export type { InstanceLockEvents } from './postgres/instance-lock.js';

/** A gateway's hold on its identity; `release` gives it up at the end of shutdown (idempotent). */
export interface InstanceClaim {
  release(): Promise<void>;
}

/** What to claim, and where. */
export interface InstanceClaimOptions {
  driver: StoreDriver;
  dataDir: string;
  /** PostgreSQL: `storage.url`. */
  url?: string | null;
  /** This gateway's instance id (ledger owner, bus sender). */
  id: string;
  /** How long to wait for a predecessor's lock to be freed (it may be dying right now); the driver's default otherwise. */
  waitMs?: number;
  /** PostgreSQL: told when the lock's connection drops and the claim is renewed. */
  events: InstanceLockEvents;
}

/**
 * Claims this gateway's identity with a lock that the operating system or
 * the database frees when the process dies, so a crash never blocks its own
 * restart and no pid is ever compared (ADR 0035):
 *
 * - SQLite: the data dir itself (`gatehouse.lock`), whatever the instance id
 *   or port: one gateway per SQLite database. Refused with DataDirTakenError.
 * - PostgreSQL: the instance id, by a session-level advisory lock on a
 *   connection of its own. Refused with InstanceTakenError.
 *
 * Rejects with StoreUnavailableError when the lock cannot be taken at all
 * (unwritable data dir, unreachable database).
 */
export async function claimInstance(options: InstanceClaimOptions): Promise<InstanceClaim> {
  if (options.driver === 'sqlite') {
    const lock = await lockDataDir(options.dataDir, options.waitMs !== undefined ? { waitMs: options.waitMs } : {});
    return { release: () => Promise.resolve(lock.release()) };
  }
  const lock = await lockInstance({
    url: options.url,
    id: options.id,
    events: options.events,
    ...(options.waitMs !== undefined ? { waitMs: options.waitMs } : {}),
  });
  return { release: () => lock.close() };
}
