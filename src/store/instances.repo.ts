import type { Kysely, Transaction } from 'kysely';
import type { Database } from './database.js';
import type { Store } from './store.js';

/** `store.db`, a transaction, or a group-commit `trx`: every function here composes inside the caller's transaction. */
type Executor = Kysely<Database> | Transaction<Database>;

/**
 * Announces gateway instance `id` (started and heartbeat at `now`). Re-registering
 * an existing id resets both timestamps.
 */
export async function registerInstance(ex: Executor, id: string, now: string): Promise<void> {
  await ex
    .insertInto('gateway_instances')
    .values({ id, started_at: now, heartbeat_at: now })
    .onConflict((oc) => oc.column('id').doUpdateSet({ started_at: now, heartbeat_at: now }))
    .execute();
}

/**
 * Refreshes the instance's heartbeat. Returns false when it is not registered
 * (removed as stale by another instance): the caller should register again.
 */
export async function heartbeat(ex: Executor, id: string, now: string): Promise<boolean> {
  const result = await ex
    .updateTable('gateway_instances')
    .set({ heartbeat_at: now })
    .where('id', '=', id)
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

/** Ids of the instances whose heartbeat is at or after `staleBeforeIso`, sorted. */
export async function liveInstances(ex: Executor, staleBeforeIso: string): Promise<string[]> {
  const rows = await ex
    .selectFrom('gateway_instances')
    .select('id')
    .where('heartbeat_at', '>=', staleBeforeIso)
    .orderBy('id')
    .execute();
  return rows.map((row) => row.id);
}

/** Forgets the instance (clean shutdown, or a stale one). Returns whether it was registered. */
export async function removeInstance(ex: Executor, id: string): Promise<boolean> {
  const result = await ex.deleteFrom('gateway_instances').where('id', '=', id).executeTakeFirst();
  return result.numDeletedRows > 0n;
}

/**
 * Owners whose work (turns, task claims) must be left alone by recovery:
 * `self`, plus, when other processes may share the database
 * (`store.shared`, PostgreSQL), every instance whose heartbeat is at or
 * after `staleBeforeIso`. On SQLite only `self` (one process per database
 * file), without a query. Distinct ids, `self` first.
 */
export async function liveOwners(
  store: Pick<Store, 'shared' | 'db'>,
  self: string,
  staleBeforeIso: string,
): Promise<string[]> {
  if (!store.shared) return [self];
  return [...new Set([self, ...(await liveInstances(store.db, staleBeforeIso))])];
}
