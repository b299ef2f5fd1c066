import { type Kysely, type Selectable, type Transaction, sql } from 'kysely';
import { prepared, type Database, type UsageRecordsTable } from '../store/index.js';

/** `store.db`, a transaction, or a group-commit `trx`: every function here composes inside the caller's transaction. */
type Executor = Kysely<Database> | Transaction<Database>;

/** One model call's usage, as `recordUsage` takes it. */
export interface UsageInput {
  id: string;
  eventId: string;
  sessionKey: string;
  channel: string;
  model: string;
  inputTokens: number;
  outputTokens: number;
  /** Cost in nano-USD (1e-9 USD), an integer; exact below 2^53 (about 9 million USD). */
  costNanoUsd: number;
  now: string;
}

/** Stores the usage of one model call. Rejects with the driver's unique-violation error on a duplicate id. */
export async function recordUsage(ex: Executor, input: UsageInput): Promise<void> {
  await insertUsage.run(ex, usageRow(input));
}

/** Stores the usage of one model call unless its id is stored already (a repeated write); true when it stored it. */
export async function recordUsageOnce(ex: Executor, input: UsageInput): Promise<boolean> {
  return (await insertUsageOnce.rows(ex, usageRow(input))).length > 0;
}

type UsageRow = Selectable<UsageRecordsTable>;

/** A usage record as its table's row. */
export function usageRow(input: UsageInput): UsageRow {
  return {
    id: input.id,
    event_id: input.eventId,
    session_key: input.sessionKey,
    channel: input.channel,
    model: input.model,
    input_tokens: input.inputTokens,
    output_tokens: input.outputTokens,
    cost_nano_usd: input.costNanoUsd,
    created_at: input.now,
  };
}

/** The row's columns, each read once (a prepared query's inputs are handed to the builder as they are). */
function usageValues(row: UsageRow): UsageRow {
  return {
    id: row.id,
    event_id: row.event_id,
    session_key: row.session_key,
    channel: row.channel,
    model: row.model,
    input_tokens: row.input_tokens,
    output_tokens: row.output_tokens,
    cost_nano_usd: row.cost_nano_usd,
    created_at: row.created_at,
  };
}

const insertUsage = prepared((ex, row: UsageRow) => ex.insertInto('usage_records').values(usageValues(row)));
const insertUsageOnce = prepared((ex, row: UsageRow) =>
  ex
    .insertInto('usage_records')
    .values(usageValues(row))
    .onConflict((oc) => oc.column('id').doNothing())
    .returning('id'),
);

/**
 * Total cost in nano-USD of the usage recorded at or after `sinceIso`, 0 when
 * none. Summed as integers by the database (cast to bigint, so PostgreSQL does
 * not answer with a numeric string).
 */
export async function spentNanoUsdSince(
  ex: Executor,
  sinceIso: string,
  of: { agent?: string; principal?: string } = {},
): Promise<number> {
  if (of.agent === undefined && of.principal === undefined) {
    const row = await ex
      .selectFrom('usage_records')
      .select(sql<number>`cast(coalesce(sum(cost_nano_usd), 0) as bigint)`.as('spent'))
      .where('created_at', '>=', sinceIso)
      .executeTakeFirstOrThrow();
    return Number(row.spent);
  }
  // One agent's or one principal's spend: its sessions' model calls (a session's agent and owner never change).
  let query = ex
    .selectFrom('usage_records as u')
    .innerJoin('sessions as s', 's.key', 'u.session_key')
    .select(sql<number>`cast(coalesce(sum(u.cost_nano_usd), 0) as bigint)`.as('spent'))
    .where('u.created_at', '>=', sinceIso);
  if (of.agent !== undefined) query = query.where('s.agent', '=', of.agent);
  if (of.principal !== undefined) query = query.where('s.principal', '=', of.principal);
  const row = await query.executeTakeFirstOrThrow();
  return Number(row.spent);
}
