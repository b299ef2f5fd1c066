/**
 * The general turn path: the builder statements one by one (ADR 0026, 0029), but for the accept into a live
 * session (one `insert … select`). SQLite runs it for every turn (in process, a statement costs microseconds, and
 * it has no data-modifying CTEs); PostgreSQL runs it wherever ADR 0032 keeps the general path (a claim whose
 * commit went unconfirmed, a pause, an outcome ending two turns).
 */
import { sql, type Transaction } from 'kysely';
import { appendMessage, ensureSession, touchSessionCounted, type SessionRecord } from '../sessions/index.js';
import { preparedSql, type Database, type Store } from '../store/index.js';
import { appendTurnEvent, appendTurnEventOnce } from './turn-events.repo.js';
import type {
  AcceptInput,
  ClaimInput,
  ClaimRecord,
  ClaimRecorded,
  ClaimTaken,
  NewSessionInput,
  OutcomeCommit,
  StoredTurnEvent,
  TurnClaim,
  TurnPath,
} from './turn-path.js';
import { storeTurnWrites } from './turn-writes.js';
import {
  acceptParams,
  claimTurn,
  finishTurnReturning,
  getTurn,
  holdsTurns,
  pauseTurnReturning,
  sessionBusyBefore,
  waitingTurnsOfSession,
  type TurnRecord,
} from './turns.repo.js';

/**
 * The accepted turn of a live session (of the caller's principal, when scoped) with the session's context epoch:
 * one statement where reading the session and inserting the turn took two. No row when the session is missing,
 * deleted or another principal's, or the event is in the ledger already. SQLite runs it (PostgreSQL folds its own,
 * `turn-path.pg.ts`); an `insert … select` with `on conflict` needs the `where` it has there.
 */
const acceptLive = preparedSql(
  (input: {
    eventId: string;
    sessionKey: string;
    ownerScope: string | null;
    payload: string;
    owner: string;
    now: string;
  }) => sql<{ seq: number }>`insert into turns
      (event_id, session_key, status, context_epoch, accepted_at, updated_at, payload, owner)
    select cast(${input.eventId} as text), s.key, 'accepted', s.context_epoch, cast(${input.now} as text),
      cast(${input.now} as text), cast(${input.payload} as text), cast(${input.owner} as text)
    from sessions s where s.key = cast(${input.sessionKey} as text) and s.deleted_at is null
      and (cast(${input.ownerScope} as text) is null or s.principal = cast(${input.ownerScope} as text))
    on conflict (event_id) do nothing
    returning seq`,
);

/** A turn's writes refused because another gateway holds the turn now (ADR 0029). */
export class TurnTakenOverError extends Error {
  constructor(readonly eventId: string) {
    super(`turn ${eventId} is held by another gateway`);
    this.name = 'TurnTakenOverError';
  }
}

/** The turn path of the builder statements, for any store. */
export class GeneralTurnPath implements TurnPath {
  constructor(private readonly store: Store) {}

  /** This path creates a session with the builder statements: the caller's general path. */
  acceptIntoNewSession(
    _trx: Transaction<Database>,
    _input: AcceptInput & { session: NewSessionInput },
  ): Promise<{ session: SessionRecord; seq: number | null } | null> {
    return Promise.resolve(null);
  }

  /** The turn inserted with the live session's context epoch, read in the same statement (as on PostgreSQL). */
  async acceptIntoLiveSession(trx: Transaction<Database>, input: AcceptInput): Promise<{ seq: number } | null> {
    const row = await acceptLive.first(trx, acceptParams(input));
    return row ? { seq: row.seq } : null;
  }

  claim(input: ClaimInput): TurnClaim {
    return new GeneralClaim(this.store, input);
  }

  async fence(trx: Transaction<Database>, eventIds: readonly string[], owner: string): Promise<void> {
    if (!this.store.shared) return;
    if (!(await holdsTurns(trx, eventIds, owner))) throw new TurnTakenOverError(eventIds[0]!);
  }

  async commitOutcome(trx: Transaction<Database>, commit: OutcomeCommit): Promise<Array<TurnRecord | null>> {
    const { eventIds, owner, writes, finals, nextSeq, now } = commit;
    await this.fence(trx, eventIds, owner);
    await storeTurnWrites(trx, writes, now);
    const records: Array<TurnRecord | null> = [];
    for (const id of eventIds) {
      if (commit.kind === 'pause') {
        const { status, pending, response, currentTool } = commit;
        records.push(await pauseTurnReturning(trx, id, { status, pending, response, currentTool, now }));
      } else {
        const { status, response, terminationReason } = commit;
        const result = commit.resultOf(id);
        records.push(await finishTurnReturning(trx, id, { status, response, terminationReason, result, now }));
        await commit.idempotency.settle(trx, id);
      }
      const final = finals.get(id)!;
      await appendTurnEventOnce(trx, { eventId: id, seq: nextSeq(id), ...final, now });
    }
    return records;
  }

  async appendEvents(trx: Transaction<Database>, events: readonly StoredTurnEvent[]): Promise<void> {
    for (const each of events) await appendTurnEvent(trx, each);
  }
}

/**
 * A claim in builder statements: the session's paused turns read before the transaction; in it, where shared,
 * the session's lock and busy check (ADR 0029), then the claim, and the message counted, stored and announced
 * one statement at a time.
 */
class GeneralClaim implements TurnClaim {
  private waiting: { approval: TurnRecord | null; clarification: TurnRecord | null } | null = null;

  constructor(
    private readonly store: Store,
    private readonly input: ClaimInput,
  ) {}

  async prepare(): Promise<'ready' | 'blocked' | null> {
    const { store } = this;
    const { sessionKey, eventId, unconfirmed, newSession } = this.input;
    // A session its turn's acceptance created had no turn before it: none of its turns can be paused yet.
    if (newSession) return 'ready';
    this.waiting = await waitingTurnsOfSession(store.db, sessionKey);
    if (this.waiting.approval) {
      // A turn awaiting approval blocks the later turns of its session (ADR 0005).
      const turn = await getTurn(store.db, eventId);
      if (!turn || (turn.status !== 'accepted' && !unconfirmed)) return null;
      if (this.waiting.approval.seq < turn.seq) return 'blocked';
    }
    return 'ready';
  }

  async take(trx: Transaction<Database>, now: string): Promise<ClaimTaken> {
    const { store } = this;
    const { sessionKey, eventId, owner, unconfirmed } = this.input;
    const clarification = this.waiting?.clarification ?? null;
    if (store.shared && !unconfirmed) {
      // One turn of a session at a time, in arrival order, across every process (ADR 0029): the session's
      // lock (never waited for) orders the claims, and no earlier turn of it may be accepted or running.
      if (!(await store.tryLock(trx, `session:${sessionKey}`))) return 'claiming';
      if (await sessionBusyBefore(trx, sessionKey, eventId)) return 'elsewhere';
    }
    const claimed = await claimTurn(trx, eventId, { owner, now });
    return { claimed, clarification };
  }

  async record(trx: Transaction<Database>, input: ClaimRecord): Promise<ClaimRecorded> {
    const { message, event, channel } = input;
    const { sessionKey, createdAt: now } = message;
    // The live session counts the message (one statement); one deleted meanwhile is revived first.
    let touched = await touchSessionCounted(trx, sessionKey, { now, messagesAdded: 1 });
    if (touched === null) {
      await ensureSession(trx, { key: sessionKey, channel, now });
      touched = (await touchSessionCounted(trx, sessionKey, { now, messagesAdded: 1 }))!;
    }
    const { epoch } = touched;
    await appendMessage(trx, { ...message, contextEpoch: epoch });
    await appendTurnEvent(trx, { eventId: message.eventId, seq: 1, ...event, now });
    // Counted first in the session's life: no other message shares its epoch.
    return touched.messageCount === 1 ? { epoch, first: true } : { epoch };
  }
}
