import type { Kysely, Transaction } from 'kysely';
import { appendMessageOnce, touchSession, type MessageRecord } from '../sessions/index.js';
import type { Database } from '../store/index.js';
import { recordUsageOnce, type UsageInput } from '../usage/index.js';

/** `store.db`, a transaction, or a group-commit `trx`. */
type Executor = Kysely<Database> | Transaction<Database>;

/**
 * What a turn has produced but not yet stored: the model's reply and tool
 * calls (messages) and each model call's usage. They are kept as data and
 * stored with the turn's next commit — the outcome's, for a reply without
 * tools — so a turn costs one commit after its model call instead of one per
 * row. Stored idempotently (`storeTurnWrites`), so the same writes can be
 * committed again when the store lost the answer to a commit (ADR 0014).
 */
export interface TurnWrites {
  messages: MessageRecord[];
  usage: UsageInput[];
}

/** Nothing staged. */
export function noWrites(): TurnWrites {
  return { messages: [], usage: [] };
}

/** True when nothing is staged. */
export function isEmpty(writes: TurnWrites): boolean {
  return writes.messages.length === 0 && writes.usage.length === 0;
}

/**
 * Stores staged rows inside the caller's transaction: each message and usage
 * row once (by id), and each session's activity counted for the messages this
 * call stored.
 */
export async function storeTurnWrites(trx: Executor, writes: TurnWrites, now: string): Promise<void> {
  const added = new Map<string, number>();
  for (const message of writes.messages) {
    if (await appendMessageOnce(trx, message)) added.set(message.sessionKey, (added.get(message.sessionKey) ?? 0) + 1);
  }
  for (const [sessionKey, messagesAdded] of added) await touchSession(trx, sessionKey, { now, messagesAdded });
  for (const usage of writes.usage) await recordUsageOnce(trx, usage);
}
