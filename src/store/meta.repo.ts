import type { Kysely } from 'kysely';
import type { Database } from './database.js';

/**
 * The value stored under `key` in gateway_meta, or null when absent. Works
 * with `store.db` or a transaction.
 */
export async function getMeta(db: Kysely<Database>, key: string): Promise<string | null> {
  const row = await db.selectFrom('gateway_meta').select('value').where('key', '=', key).executeTakeFirst();
  return row?.value ?? null;
}

/**
 * Inserts or replaces `key` (one upsert statement, same SQL on both
 * databases). `executor` is `store.db`, a transaction, or a group-commit
 * `trx`; `nowIso` is an ISO 8601 timestamp from the injected clock.
 */
export async function setMeta(executor: Kysely<Database>, key: string, value: string, nowIso: string): Promise<void> {
  await executor
    .insertInto('gateway_meta')
    .values({ key, value, updated_at: nowIso })
    .onConflict((oc) => oc.column('key').doUpdateSet({ value, updated_at: nowIso }))
    .execute();
}
