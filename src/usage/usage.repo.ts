import { type Kysely, type Transaction, sql } from 'kysely';
import type { Database } from '../store/index.js';

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
  await ex
    .insertInto('usage_records')
    .values({
      id: input.id,
      event_id: input.eventId,
      session_key: input.sessionKey,
      channel: input.channel,
      model: input.model,
      input_tokens: input.inputTokens,
      output_tokens: input.outputTokens,
      cost_nano_usd: input.costNanoUsd,
      created_at: input.now,
    })
    .execute();
}

/**
 * Total cost in nano-USD of the usage recorded at or after `sinceIso`, 0 when
 * none. Summed as integers by the database (cast to bigint, so PostgreSQL does
 * not answer with a numeric string).
 */
export async function spentNanoUsdSince(ex: Executor, sinceIso: string): Promise<number> {
  const row = await ex
    .selectFrom('usage_records')
    .select(sql<number>`cast(coalesce(sum(cost_nano_usd), 0) as bigint)`.as('spent'))
    .where('created_at', '>=', sinceIso)
    .executeTakeFirstOrThrow();
  return Number(row.spent);
}
