import type { Kysely, Transaction } from 'kysely';
import { prepared, type Database } from '../store/index.js';

/** `store.db`, a transaction, or a group-commit `trx`: every function here composes inside the caller's transaction. */
type Executor = Kysely<Database> | Transaction<Database>;

/** One stored event of a turn's stream (`delta`, `tool_call`, `tool_result`, `status`, `done`, `error`). */
export interface TurnEventRecord {
  /** 1, 2, … within the turn: the SSE `id:` that `Last-Event-ID` resumes after. */
  seq: number;
  type: string;
  data: unknown;
  createdAt: string;
}

/**
 * Stores event `seq` of the turn `eventId` (`data` as JSON). The caller
 * numbers events (1 + `lastTurnEventSeq`); a duplicate `(eventId, seq)`
 * rejects with the driver's unique-violation error.
 */
export async function appendTurnEvent(
  ex: Executor,
  input: { eventId: string; seq: number; type: string; data: unknown; now: string },
): Promise<void> {
  await insertEvent.run(ex, {
    eventId: input.eventId,
    seq: input.seq,
    type: input.type,
    data: JSON.stringify(input.data ?? null),
    now: input.now,
  });
}

/**
 * Stores event `seq` of the turn unless that number is stored already (a
 * commit repeated after its outcome was lost); true when it stored it.
 */
export async function appendTurnEventOnce(
  ex: Executor,
  input: { eventId: string; seq: number; type: string; data: unknown; now: string },
): Promise<boolean> {
  const rows = await insertEventOnce.rows(ex, {
    eventId: input.eventId,
    seq: input.seq,
    type: input.type,
    data: JSON.stringify(input.data ?? null),
    now: input.now,
  });
  return rows.length > 0;
}

const insertEventOnce = prepared(
  (ex, input: { eventId: string; seq: number; type: string; data: string; now: string }) =>
    ex
      .insertInto('turn_events')
      .values({
        event_id: input.eventId,
        seq: input.seq,
        type: input.type,
        data: input.data,
        created_at: input.now,
      })
      .onConflict((oc) => oc.columns(['event_id', 'seq']).doNothing())
      .returning('seq'),
);

const insertEvent = prepared((ex, input: { eventId: string; seq: number; type: string; data: string; now: string }) =>
  ex.insertInto('turn_events').values({
    event_id: input.eventId,
    seq: input.seq,
    type: input.type,
    data: input.data,
    created_at: input.now,
  }),
);

/** The turn's events with `seq > afterSeq`, in seq order, at most `limit` (0 replays from the start). */
export async function listTurnEvents(
  ex: Executor,
  eventId: string,
  afterSeq: number,
  limit: number,
): Promise<TurnEventRecord[]> {
  const rows = await eventsAfter.rows(ex, { eventId, afterSeq, limit });
  return rows.map((row) => ({
    seq: row.seq,
    type: row.type,
    data: JSON.parse(row.data) as unknown,
    createdAt: row.created_at,
  }));
}

const eventsAfter = prepared((ex, input: { eventId: string; afterSeq: number; limit: number }) =>
  ex
    .selectFrom('turn_events')
    .select(['seq', 'type', 'data', 'created_at'])
    .where('event_id', '=', input.eventId)
    .where('seq', '>', input.afterSeq)
    .orderBy('seq')
    .limit(input.limit),
);

/** The highest stored seq of the turn, 0 when it has no events. */
export async function lastTurnEventSeq(ex: Executor, eventId: string): Promise<number> {
  const row = await lastSeq.first(ex, { eventId });
  return row?.last === null || row?.last === undefined ? 0 : Number(row.last);
}

const lastSeq = prepared((ex, input: { eventId: string }) =>
  ex
    .selectFrom('turn_events')
    .select((eb) => eb.fn.max<number | null>('seq').as('last'))
    .where('event_id', '=', input.eventId),
);
