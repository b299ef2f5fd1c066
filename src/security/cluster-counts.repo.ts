import type { Kysely, Transaction } from 'kysely';
import type { Database } from '../store/index.js';

/**
 * The rows of `cluster_counts` (migration 010, ADR 0028): each gateway
 * process sharing the database writes its own counts there, and reads the
 * sums of the other live processes. Keys are rate groups with token
 * fingerprints, or gauge names: never a secret.
 */

/** `store.db`, a transaction, or a group-commit `trx`. */
type Executor = Kysely<Database> | Transaction<Database>;

/** One count of this process: a window count (`windowStart` its start, ms) or a gauge value (`windowStart` 0). */
export interface CountRow {
  kind: 'window' | 'gauge';
  key: string;
  windowStart: number;
  count: number;
}

/** Rows per insert statement: well under both databases' bound on bound parameters. */
const ROWS_PER_STATEMENT = 1000;

/**
 * Writes `rows` as instance `instanceId`'s counts (one batched upsert per
 * 1000 rows), each replacing the instance's previous value of its key.
 * Idempotent: the op may run again in a retried batch.
 */
export async function writeCounts(
  ex: Executor,
  instanceId: string,
  rows: readonly CountRow[],
  now: string,
): Promise<void> {
  for (let at = 0; at < rows.length; at += ROWS_PER_STATEMENT) {
    const values = rows.slice(at, at + ROWS_PER_STATEMENT).map((row) => ({
      instance_id: instanceId,
      kind: row.kind,
      key: row.key,
      window_start: row.windowStart,
      count: row.count,
      updated_at: now,
    }));
    await ex
      .insertInto('cluster_counts')
      .values(values)
      .onConflict((oc) =>
        oc.columns(['instance_id', 'kind', 'key', 'window_start']).doUpdateSet((eb) => ({
          count: eb.ref('excluded.count'),
          updated_at: eb.ref('excluded.updated_at'),
        })),
      )
      .execute();
  }
}

/** What `readOthers` selects. */
export interface ReadOthersOptions {
  /** This process: its own rows are left out. */
  self: string;
  /** Window rows starting after this (ms) are read: the current window, and any a process with a clock ahead started. */
  windowsAfter: number;
  /** Only instances whose heartbeat (`gateway_instances`) is at or after this ISO time count. */
  staleBeforeIso: string;
  /** Most rows returned: the gauges, then the largest window counts. */
  limit: number;
}

/**
 * The sums over the other live instances of each window count and gauge,
 * in one statement. A dead instance (no heartbeat since `staleBeforeIso`,
 * or no longer registered) counts for nothing.
 */
export async function readOthers(ex: Executor, options: ReadOthersOptions): Promise<CountRow[]> {
  const rows = await ex
    .selectFrom('cluster_counts')
    .select((eb) => ['kind', 'key', 'window_start', eb.fn.sum<number | string>('count').as('total')])
    .where('instance_id', '!=', options.self)
    .where('instance_id', 'in', (eb) =>
      eb.selectFrom('gateway_instances').select('id').where('heartbeat_at', '>=', options.staleBeforeIso),
    )
    .where((eb) =>
      eb.or([
        eb('kind', '=', 'gauge'),
        eb.and([eb('kind', '=', 'window'), eb('window_start', '>', options.windowsAfter)]),
      ]),
    )
    .groupBy(['kind', 'key', 'window_start'])
    .orderBy('kind') // gauges ('gauge' < 'window') are never cut off by the limit
    .orderBy('total', 'desc')
    .limit(options.limit)
    .execute();
  return rows.map((row) => ({
    kind: row.kind,
    key: row.key,
    windowStart: Number(row.window_start),
    count: Number(row.total),
  }));
}

/** What `pruneCounts` deletes. */
export interface PruneOptions {
  /** Window rows starting at or before this (ms): windows long past. */
  windowsUpTo: number;
  /** Gauge rows of instances without a heartbeat since this ISO time (dead or gone). */
  staleBeforeIso: string;
}

/**
 * Deletes rows that can no longer count: windows long past (whoever wrote
 * them) and gauges of dead instances. A dead instance's window rows go with
 * their window; until then they are not read. Returns the rows deleted.
 */
export async function pruneCounts(ex: Executor, options: PruneOptions): Promise<number> {
  const windows = await ex
    .deleteFrom('cluster_counts')
    .where('kind', '=', 'window')
    .where('window_start', '<=', options.windowsUpTo)
    .executeTakeFirst();
  const gauges = await ex
    .deleteFrom('cluster_counts')
    .where('kind', '=', 'gauge')
    .where('instance_id', 'not in', (eb) =>
      eb.selectFrom('gateway_instances').select('id').where('heartbeat_at', '>=', options.staleBeforeIso),
    )
    .executeTakeFirst();
  return Number(windows.numDeletedRows + gauges.numDeletedRows);
}

/** Deletes every row of `instanceId` (its clean shutdown). */
export async function deleteInstanceCounts(ex: Executor, instanceId: string): Promise<void> {
  await ex.deleteFrom('cluster_counts').where('instance_id', '=', instanceId).execute();
}
