import type { Kysely, Selectable, Transaction } from 'kysely';
import { prepared, type Database, type TurnsTable } from '../store/index.js';

/** `store.db`, a transaction, or a group-commit `trx`: every function here composes inside the caller's transaction. */
type Executor = Kysely<Database> | Transaction<Database>;

/** What an accept statement (either store's) inserts: the turn, into a session of `ownerScope` (null: any). */
export interface AcceptRow<Owner extends string | null = string | null> {
  eventId: string;
  sessionKey: string;
  ownerScope: string | null;
  payload: unknown;
  owner: Owner;
  now: string;
}

/** The parameters of an accept statement: the payload as JSON text. */
export function acceptParams<Owner extends string | null>(input: AcceptRow<Owner>) {
  const { eventId, sessionKey, ownerScope, payload, owner, now } = input;
  return { eventId, sessionKey, ownerScope, payload: JSON.stringify(payload ?? null), owner, now };
}

import {
  TERMINAL_STATUSES,
  isTerminalStatus,
  type OpenTurnStatus,
  type TerminalTurnStatus,
  type TurnStatus,
  type WaitingTurnStatus,
} from './turn-status.js';

/** One row of the turn ledger. */
export interface TurnRecord {
  /** Arrival order across every process sharing the database. */
  seq: number;
  eventId: string;
  sessionKey: string;
  status: TurnStatus;
  currentTool: string | null;
  response: string | null;
  terminationReason: string | null;
  contextEpoch: number;
  acceptedAt: string;
  startedAt: string | null;
  finishedAt: string | null;
  updatedAt: string;
  /** What the turn needs to run (the inbound event), as given to `insertTurn`. */
  payload: unknown;
  /** The final result handed to waiters; null until finished (or when finished without one). */
  result: unknown;
  /** What a waiting turn waits for; null otherwise. */
  pending: unknown;
  /** Gateway instance that runs (or last ran) it; null before any claim. */
  owner: string | null;
}

/**
 * Records an accepted turn. Idempotent on `eventId`: when the event is already
 * in the ledger nothing is written and the existing row is returned with
 * `inserted: false` (race-safe: `insert … on conflict (event_id) do nothing`).
 */
export async function insertTurn(
  ex: Executor,
  input: {
    eventId: string;
    sessionKey: string;
    contextEpoch: number;
    payload: unknown;
    owner: string | null;
    now: string;
  },
): Promise<{ inserted: boolean; turn: TurnRecord }> {
  const row = await insertAccepted.first(ex, {
    eventId: input.eventId,
    sessionKey: input.sessionKey,
    contextEpoch: input.contextEpoch,
    now: input.now,
    payload: JSON.stringify(input.payload ?? null),
    owner: input.owner,
  });
  if (row) return { inserted: true, turn: toTurn(row) };
  const existing = await getTurn(ex, input.eventId);
  if (!existing) throw new Error(`insertTurn(${input.eventId}): conflicting row vanished`);
  return { inserted: false, turn: existing };
}

const insertAccepted = prepared(
  (
    ex,
    input: {
      eventId: string;
      sessionKey: string;
      contextEpoch: number;
      now: string;
      payload: string;
      owner: string | null;
    },
  ) =>
    ex
      .insertInto('turns')
      .values({
        event_id: input.eventId,
        session_key: input.sessionKey,
        status: 'accepted',
        context_epoch: input.contextEpoch,
        accepted_at: input.now,
        updated_at: input.now,
        payload: input.payload,
        owner: input.owner,
      })
      .onConflict((oc) => oc.column('event_id').doNothing())
      .returningAll(),
);

const turnOf = prepared((ex, input: { eventId: string }) =>
  ex.selectFrom('turns').selectAll().where('event_id', '=', input.eventId),
);

/** The turn of `eventId`, or null. */
export async function getTurn(ex: Executor, eventId: string): Promise<TurnRecord | null> {
  const row = await turnOf.first(ex, { eventId });
  return row ? toTurn(row) : null;
}

/** The newest `limit` turns of a session, newest first. */
export async function listSessionTurns(ex: Executor, sessionKey: string, limit: number): Promise<TurnRecord[]> {
  const rows = await ex
    .selectFrom('turns')
    .selectAll()
    .where('session_key', '=', sessionKey)
    .orderBy('seq', 'desc')
    .limit(limit)
    .execute();
  return rows.map(toTurn);
}

/**
 * Atomically moves an accepted turn to running for `owner` (one conditional
 * update: `where status = 'accepted'`), setting `started_at`, `owner` and
 * `updated_at`. Returns the running turn, or null when it is not accepted (some
 * other process or worker claimed it first, or it is missing or finished).
 * Exactly one of any number of concurrent claims wins.
 */
export async function claimTurn(
  ex: Executor,
  eventId: string,
  input: { owner: string; now: string },
): Promise<TurnRecord | null> {
  const row = await claim.first(ex, { eventId, owner: input.owner, now: input.now });
  return row ? toTurn(row) : null;
}

const claim = prepared((ex, input: { eventId: string; owner: string; now: string }) =>
  ex
    .updateTable('turns')
    .set({ status: 'running', started_at: input.now, owner: input.owner, updated_at: input.now })
    .where('event_id', '=', input.eventId)
    .where('status', '=', 'accepted')
    .returningAll(),
);

/**
 * Records progress of a running turn: `updated_at = now`, and `current_tool`
 * when given (null clears it; absent leaves it). Returns false when the turn
 * is not running.
 */
export async function updateTurnProgress(
  ex: Executor,
  eventId: string,
  input: { currentTool?: string | null; now: string },
): Promise<boolean> {
  const query = input.currentTool !== undefined ? progressWithTool : progress;
  return (await query.affected(ex, { eventId, now: input.now, currentTool: input.currentTool ?? null })) > 0;
}

const progress = prepared((ex, input: { eventId: string; now: string }) =>
  ex
    .updateTable('turns')
    .set({ updated_at: input.now })
    .where('event_id', '=', input.eventId)
    .where('status', '=', 'running'),
);
const progressWithTool = prepared((ex, input: { eventId: string; now: string; currentTool: string | null }) =>
  ex
    .updateTable('turns')
    .set({ updated_at: input.now, current_tool: input.currentTool })
    .where('event_id', '=', input.eventId)
    .where('status', '=', 'running'),
);

/**
 * Pauses a running turn in `waiting_approval` or `waiting_clarification`,
 * storing what it waits for in `pending` (and `response`/`current_tool` when
 * given). Only from running; returns whether it paused.
 */
export async function pauseTurn(
  ex: Executor,
  eventId: string,
  input: {
    status: WaitingTurnStatus;
    pending: unknown;
    response?: string | null;
    currentTool?: string | null;
    now: string;
  },
): Promise<boolean> {
  const result = await ex
    .updateTable('turns')
    .set({
      status: input.status,
      pending: JSON.stringify(input.pending ?? null),
      updated_at: input.now,
      ...(input.response !== undefined ? { response: input.response } : {}),
      ...(input.currentTool !== undefined ? { current_tool: input.currentTool } : {}),
    })
    .where('event_id', '=', eventId)
    .where('status', '=', 'running')
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

/**
 * Pauses a running turn as `pauseTurn` does, setting `response` and
 * `current_tool` too; returns the paused turn, or null when it was not
 * running (the message path's one statement for a pause).
 */
export async function pauseTurnReturning(
  ex: Executor,
  eventId: string,
  input: {
    status: WaitingTurnStatus;
    pending: unknown;
    response: string | null;
    currentTool: string | null;
    now: string;
  },
): Promise<TurnRecord | null> {
  const row = await pause.first(ex, {
    eventId,
    status: input.status,
    pending: JSON.stringify(input.pending ?? null),
    response: input.response,
    currentTool: input.currentTool,
    now: input.now,
  });
  return row ? toTurn(row) : null;
}

const pause = prepared(
  (
    ex,
    input: {
      eventId: string;
      status: WaitingTurnStatus;
      pending: string;
      response: string | null;
      currentTool: string | null;
      now: string;
    },
  ) =>
    ex
      .updateTable('turns')
      .set({
        status: input.status,
        pending: input.pending,
        updated_at: input.now,
        response: input.response,
        current_tool: input.currentTool,
      })
      .where('event_id', '=', input.eventId)
      .where('status', '=', 'running')
      .returningAll(),
);

/**
 * Atomically moves a turn waiting in `from` back to running for `owner`,
 * clearing `pending`. Returns the running turn, or null when it is not in
 * `from` (already resumed by a concurrent caller, finished, or missing).
 */
export async function resumeTurn(
  ex: Executor,
  eventId: string,
  input: { from: WaitingTurnStatus; owner: string; now: string },
): Promise<TurnRecord | null> {
  const row = await ex
    .updateTable('turns')
    .set({ status: 'running', pending: null, owner: input.owner, updated_at: input.now })
    .where('event_id', '=', eventId)
    .where('status', '=', input.from)
    .returningAll()
    .executeTakeFirst();
  return row ? toTurn(row) : null;
}

/**
 * Ends a turn. The first terminal status wins: the row is updated only while
 * its status is not terminal, so a later finish (or an interrupt racing a
 * completion) changes nothing and returns false. The winner sets `status`,
 * `response`, `termination_reason`, `result`, `finished_at = updated_at = now`
 * and clears `current_tool` and `pending`.
 */
export async function finishTurn(
  ex: Executor,
  eventId: string,
  input: {
    status: TerminalTurnStatus;
    response: string | null;
    terminationReason: string | null;
    result: unknown;
    now: string;
  },
): Promise<boolean> {
  return (await finishTurnReturning(ex, eventId, input)) !== null;
}

/** `finishTurn` that returns the ended turn, or null when it had already ended (first terminal status wins). */
export async function finishTurnReturning(
  ex: Executor,
  eventId: string,
  input: {
    status: TerminalTurnStatus;
    response: string | null;
    terminationReason: string | null;
    result: unknown;
    now: string;
  },
): Promise<TurnRecord | null> {
  const row = await finish.first(ex, {
    eventId,
    status: input.status,
    response: input.response,
    reason: input.terminationReason,
    result: input.result === null || input.result === undefined ? null : JSON.stringify(input.result),
    now: input.now,
  });
  return row ? toTurn(row) : null;
}

const finish = prepared(
  (
    ex,
    input: {
      eventId: string;
      status: TerminalTurnStatus;
      response: string | null;
      reason: string | null;
      result: string | null;
      now: string;
    },
  ) =>
    ex
      .updateTable('turns')
      .set({
        status: input.status,
        response: input.response,
        termination_reason: input.reason,
        result: input.result,
        current_tool: null,
        pending: null,
        finished_at: input.now,
        updated_at: input.now,
      })
      .where('event_id', '=', input.eventId)
      .where('status', 'not in', TERMINAL_STATUSES)
      .returningAll(),
);

/** Owner filter of `listTurnsByStatus` and `interruptTurns`; both parts optional and combined with AND. */
export interface TurnOwnerFilter {
  /** Only turns owned by one of these (an empty list matches nothing). */
  ownerIn?: readonly string[] | null;
  /** Skip turns owned by one of these; unowned turns (owner null) always pass. Empty = no restriction. */
  ownerNotIn?: readonly string[] | null;
}

/**
 * Turns in any of `statuses`, oldest (lowest seq) first, at most `limit`: for
 * recovery after a restart. `ownerNot` skips one owner's turns (unowned turns
 * pass); `ownerIn`/`ownerNotIn` as in TurnOwnerFilter; `afterSeq` pages on
 * (only turns with a higher seq).
 */
export async function listTurnsByStatus(
  ex: Executor,
  statuses: readonly TurnStatus[],
  options: { limit: number; ownerNot?: string | null; afterSeq?: number } & TurnOwnerFilter,
): Promise<TurnRecord[]> {
  if (statuses.length === 0 || options.ownerIn?.length === 0) return [];
  const notIn = [...(options.ownerNotIn ?? []), ...(options.ownerNot != null ? [options.ownerNot] : [])];
  let query = ex.selectFrom('turns').selectAll().where('status', 'in', statuses);
  if (options.afterSeq !== undefined) query = query.where('seq', '>', options.afterSeq);
  if (options.ownerIn) query = query.where('owner', 'in', options.ownerIn);
  if (notIn.length > 0) query = query.where((eb) => eb.or([eb('owner', 'is', null), eb('owner', 'not in', notIn)]));
  const rows = await query.orderBy('seq').limit(options.limit).execute();
  return rows.map(toTurn);
}

/**
 * Marks every turn in `statuses` that passes the owner filter `interrupted`
 * with `termination_reason = reason` (finished_at = updated_at = now,
 * current_tool and pending cleared) and returns their event ids in seq order.
 * Terminal turns are never touched (first terminal status wins), so it is
 * safe against turns finishing concurrently.
 *
 * Typical filters: at shutdown, `{statuses: ['running'], ownerIn: [self]}`;
 * at start-up, `{statuses: ['running'], ownerNotIn: liveInstanceIds}` to
 * interrupt turns of instances that died (and turns with no owner).
 */
export async function interruptTurns(
  ex: Executor,
  input: {
    statuses: readonly OpenTurnStatus[];
    reason: string;
    now: string;
    /** Only these turns (an empty list matches nothing). */
    eventIdIn?: readonly string[];
  } & TurnOwnerFilter,
): Promise<string[]> {
  if (input.statuses.length === 0 || input.ownerIn?.length === 0 || input.eventIdIn?.length === 0) return [];
  let query = ex
    .updateTable('turns')
    .set({
      status: 'interrupted',
      termination_reason: input.reason,
      current_tool: null,
      pending: null,
      finished_at: input.now,
      updated_at: input.now,
    })
    .where('status', 'in', input.statuses)
    .where('status', 'not in', TERMINAL_STATUSES);
  if (input.ownerIn) query = query.where('owner', 'in', input.ownerIn);
  if (input.eventIdIn) query = query.where('event_id', 'in', input.eventIdIn);
  const notIn = input.ownerNotIn ?? [];
  if (notIn.length > 0) query = query.where((eb) => eb.or([eb('owner', 'is', null), eb('owner', 'not in', notIn)]));
  const rows = await query.returning(['event_id', 'seq']).execute();
  return rows.sort((a, b) => a.seq - b.seq).map((row) => row.event_id);
}

/** The oldest turn of the session waiting in `status`, or null. */
export async function waitingTurnForSession(
  ex: Executor,
  sessionKey: string,
  status: WaitingTurnStatus,
): Promise<TurnRecord | null> {
  const row = await ex
    .selectFrom('turns')
    .selectAll()
    .where('session_key', '=', sessionKey)
    .where('status', '=', status)
    .orderBy('seq')
    .limit(1)
    .executeTakeFirst();
  return row ? toTurn(row) : null;
}

/** The oldest turn of the session in each waiting status (one query; the hot path asks before every claim). */
export async function waitingTurnsOfSession(
  ex: Executor,
  sessionKey: string,
): Promise<{ approval: TurnRecord | null; clarification: TurnRecord | null }> {
  // Sorted here: with `order by seq` SQLite walks every turn of the session (turns_by_session) instead of
  // the few paused ones (turns_session_status).
  const rows = await waitingOf.rows(ex, { sessionKey });
  const turns = rows.map(toTurn).sort((a, b) => a.seq - b.seq);
  return {
    approval: turns.find((t) => t.status === 'waiting_approval') ?? null,
    clarification: turns.find((t) => t.status === 'waiting_clarification') ?? null,
  };
}

const waitingOf = prepared((ex, input: { sessionKey: string }) =>
  ex
    .selectFrom('turns')
    .selectAll()
    .where('session_key', '=', input.sessionKey)
    .where('status', 'in', ['waiting_approval', 'waiting_clarification']),
);

/**
 * True when a turn of the session that arrived before `eventId` is still
 * accepted or running, or another of its turns runs: `eventId` must wait its
 * turn (per-session order across processes, ADR 0029). One statement.
 */
export async function sessionBusyBefore(ex: Executor, sessionKey: string, eventId: string): Promise<boolean> {
  const row = await busyBefore.first(ex, { sessionKey, eventId });
  return row !== undefined;
}

const busyBefore = prepared((ex, input: { sessionKey: string; eventId: string }) =>
  ex
    .selectFrom('turns as t')
    .select('t.seq')
    .where('t.session_key', '=', input.sessionKey)
    .where('t.event_id', '!=', input.eventId)
    .where((eb) =>
      eb.or([
        eb('t.status', '=', 'running'),
        eb.and([
          eb('t.status', '=', 'accepted'),
          eb('t.seq', '<', eb.selectFrom('turns as me').select('me.seq').where('me.event_id', '=', input.eventId)),
        ]),
      ]),
    )
    .limit(1),
);

/**
 * The fence of a turn's writes (ADR 0029): true when every one of `eventIds`
 * is still open (not terminal) and owned by `owner`, locking their rows until
 * the transaction ends, so a gateway that adopted them meanwhile (this one
 * was paused past the takeover time) cannot end them under it, nor it under
 * that one. Only where several processes share the database.
 */
export async function holdsTurns(ex: Executor, eventIds: readonly string[], owner: string): Promise<boolean> {
  const rows = await ex
    .selectFrom('turns')
    .select(['event_id', 'owner', 'status'])
    .where('event_id', 'in', eventIds)
    .forUpdate()
    .execute();
  return (
    rows.length === eventIds.length &&
    rows.every((row) => row.owner === owner && !isTerminalStatus(row.status as TurnStatus))
  );
}

/** A `turns` row as a TurnRecord (JSON columns parsed). */
export function toTurn(row: Selectable<TurnsTable>): TurnRecord {
  return {
    seq: row.seq,
    eventId: row.event_id,
    sessionKey: row.session_key,
    status: row.status as TurnStatus,
    currentTool: row.current_tool,
    response: row.response,
    terminationReason: row.termination_reason,
    contextEpoch: row.context_epoch,
    acceptedAt: row.accepted_at,
    startedAt: row.started_at,
    finishedAt: row.finished_at,
    updatedAt: row.updated_at,
    payload: JSON.parse(row.payload) as unknown,
    result: row.result === null ? null : (JSON.parse(row.result) as unknown),
    pending: row.pending === null ? null : (JSON.parse(row.pending) as unknown),
    owner: row.owner,
  };
}

/**
 * The user message a claim stored for `eventId` (its context epoch), or null:
 * tells whether a claim whose commit went unconfirmed did commit as a message.
 */
export async function claimedUserMessage(
  ex: Executor,
  sessionKey: string,
  eventId: string,
): Promise<{ contextEpoch: number } | null> {
  const row = await ex
    .selectFrom('messages')
    .select('context_epoch')
    .where('session_key', '=', sessionKey)
    .where('event_id', '=', eventId)
    .where('role', '=', 'user')
    .limit(1)
    .executeTakeFirst();
  return row ? { contextEpoch: row.context_epoch } : null;
}
