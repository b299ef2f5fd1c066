/**
 * The turn path's port: the steps of a turn whose statements depend on the store (ADR 0026, 0029, 0032) —
 * accepting into a live or new session, claiming, fencing, committing the outcome and storing streamed events — behind
 * one small interface, with one implementation per store: `turn-path.general.ts` (the builder statements one by
 * one: SQLite, and PostgreSQL wherever ADR 0032 keeps the general path) and `turn-path.folded.ts` (PostgreSQL's
 * folded statements of `turn-path.pg.ts`). `turnPathFor` chooses once, where the message path is built; nothing
 * else in turns/ asks which database it runs on.
 */
import type { Transaction } from 'kysely';
import type { Idempotency } from '../idempotency/index.js';
import type { ContextBudget, MessageRecord, SessionOrigin, SessionRecord, SizedEntry } from '../sessions/index.js';
import type { Database, Store } from '../store/index.js';
import { FoldedTurnPath } from './turn-path.folded.js';
import { GeneralTurnPath } from './turn-path.general.js';
import type { TurnWrites } from './turn-writes.js';
import type { TerminalTurnStatus, WaitingTurnStatus } from './turn-status.js';
import type { TurnRecord } from './turns.repo.js';

export { TurnTakenOverError } from './turn-path.general.js';

/** The database-specific steps of a turn; every step runs inside the caller's writer transaction (`trx`). */
export interface TurnPath {
  /**
   * Accept: inserts the accepted turn of a live session with the session's context epoch in one step. Null
   * (nothing written) when the session is missing, deleted or another principal's, or the event is in the
   * ledger already: the caller goes on to `acceptIntoNewSession`, then the general path.
   */
  acceptIntoLiveSession(trx: Transaction<Database>, input: AcceptInput): Promise<{ seq: number } | null>;
  /**
   * Accept, after `acceptIntoLiveSession` found no live session: creates the session (a key with no row at all)
   * and inserts its accepted turn in one step. Answers the new session and the turn's seq (null: the event is in
   * the ledger already, nothing inserted for it). Null when the key has a row (deleted, or another principal's)
   * or this store has no such step: the caller takes the general path (ensure the session, insert the turn).
   */
  acceptIntoNewSession(
    trx: Transaction<Database>,
    input: AcceptInput & { session: NewSessionInput },
  ): Promise<{ session: SessionRecord; seq: number | null } | null>;
  /** Claim (`accepted → running`): the steps of one attempt, which the caller runs in order. */
  claim(input: ClaimInput): TurnClaim;
  /**
   * The fence (ADR 0029): where several processes share the database, rejects with TurnTakenOverError unless
   * `owner` still holds every one of `eventIds` (open, and their rows locked until the commit). Nothing where
   * this process is the database's one writer.
   */
  fence(trx: Transaction<Database>, eventIds: readonly string[], owner: string): Promise<void>;
  /**
   * Outcome: stores what ends (or pauses) `eventIds` as one commit — the staged writes, the ledger's end or
   * pause (first terminal status wins), the idempotency TTL of an end, each turn's final event (once) — behind
   * the fence. Answers each turn's ledger record (null: it had already ended, or was not running to pause).
   * Rejects with TurnTakenOverError, nothing stored, when another gateway holds a turn now. Repeatable.
   */
  commitOutcome(trx: Transaction<Database>, commit: OutcomeCommit): Promise<Array<TurnRecord | null>>;
  /** Streamed events: stores the events (of any turns) published while one write waited for its batch. */
  appendEvents(trx: Transaction<Database>, events: readonly StoredTurnEvent[]): Promise<void>;
}

/** The store's turn path: PostgreSQL folds its statements (ADR 0032); every other store runs the general path. */
export function turnPathFor(store: Store): TurnPath {
  const general = new GeneralTurnPath(store);
  return store.driver === 'postgres' ? new FoldedTurnPath(store, general) : general;
}

/** A turn accepted into the ledger (`accepted`). */
export interface AcceptInput {
  eventId: string;
  sessionKey: string;
  /** Accept only into a session of this principal (`ownerScope`); null: any session (DECISIONS §18). */
  ownerScope: string | null;
  payload: unknown;
  owner: string;
  now: string;
}

/** The session an acceptance creates: its key, channel, time and origin (agent, principal). */
export interface NewSessionInput extends SessionOrigin {
  key: string;
  channel: string;
  now: string;
}

/** One attempt to claim a turn. */
export interface ClaimInput {
  sessionKey: string;
  eventId: string;
  /** This process's instance id: the claimed turn's `owner`. */
  owner: string;
  /** An earlier attempt failed without knowing whether it committed: this one checks the ledger. */
  unconfirmed: boolean;
  /**
   * The turn's acceptance created its session (`TurnJob.newSession`): the session had no turn before it, so
   * none of its turns is paused and there is nothing to read before the claim.
   */
  newSession?: boolean;
}

/** The steps of one claim attempt: `prepare` before the claim's transaction, then `take` and `record` in it. */
export interface TurnClaim {
  /**
   * Before the transaction: where this path reads the session's paused turns apart from the claim (ADR 0005),
   * 'blocked' behind an earlier turn awaiting approval, null when the turn is no longer this runner's to claim;
   * 'ready' otherwise.
   */
  prepare(): Promise<'ready' | 'blocked' | null>;
  /** The session's lock and busy check where several processes share the database (ADR 0029), then the claim. */
  take(trx: Transaction<Database>, now: string): Promise<ClaimTaken>;
  /**
   * The claimed turn's user message, counted on the session (revived if deleted meanwhile) and stored with the
   * turn's first event (number 1). Answers the context epoch, and the context window where it was read with
   * these writes (the first model call's, ADR 0032).
   */
  record(trx: Transaction<Database>, input: ClaimRecord): Promise<ClaimRecorded>;
}

/** What a claim's `record` learned. */
export interface ClaimRecorded {
  epoch: number;
  /** The context window read with the claim's writes (the first model call's, ADR 0032). */
  window?: SizedEntry[];
  /** The message is the first of the session's life: the epoch's window holds it alone. */
  first?: boolean;
}

/** What a claim's `take` decided. */
export type ClaimTaken =
  /** The turn claimed (`claimed` null: it was not `accepted`), and the session's turn awaiting clarification. */
  | { claimed: TurnRecord | null; clarification: TurnRecord | null }
  /** Behind an earlier turn of the session awaiting approval (ADR 0005). */
  | 'approval'
  /** Another process claims a turn of the session at this instant (ADR 0029). */
  | 'claiming'
  /** An earlier turn of the session is still accepted, or one runs, elsewhere (ADR 0029). */
  | 'elsewhere'
  /** Not this runner's to claim: it left `accepted` while behind a turn awaiting approval. */
  | null;

/** What a claim stores with the turn: the user's message and the turn's first event. */
export interface ClaimRecord {
  /** Its `createdAt` is the claim's time. */
  message: Omit<MessageRecord, 'contextEpoch'> & { eventId: string };
  event: { type: string; data: Record<string, unknown> };
  /** The session's channel, should the session have to be revived. */
  channel: string;
  /** The context window's budget, where the claim reads it. */
  window: ContextBudget;
}

/** A turn's final event, stored by the outcome's commit, delivered after it. */
export interface FinalEvent {
  type: string;
  data: Record<string, unknown>;
}

interface OutcomeCommitOf {
  /** The turns this outcome ends or pauses; the first carries the stream. */
  eventIds: readonly string[];
  owner: string;
  /** The staged reply, tool calls and usage. */
  writes: TurnWrites;
  /** Each turn's final event, stored numbered `nextSeq(eventId)`. */
  finals: ReadonlyMap<string, FinalEvent>;
  nextSeq: (eventId: string) => number;
  now: string;
}

/** What one outcome commit stores: a pause (awaiting approval or clarification) or an end. */
export type OutcomeCommit =
  | (OutcomeCommitOf & {
      kind: 'pause';
      status: WaitingTurnStatus;
      pending: unknown;
      response: string | null;
      currentTool: string | null;
    })
  | (OutcomeCommitOf & {
      kind: 'end';
      status: TerminalTurnStatus;
      response: string | null;
      terminationReason: string | null;
      /** The result stored with each turn (its Message, and the error of a failed turn). */
      resultOf: (eventId: string) => unknown;
      /** Starts the TTL of the turns' idempotency records. */
      idempotency: Pick<Idempotency, 'settle' | 'settledExpiry'>;
    });

/** A streamed event as stored (`turn_events`). */
export interface StoredTurnEvent {
  eventId: string;
  seq: number;
  type: string;
  data: unknown;
  now: string;
}
