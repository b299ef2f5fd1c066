/**
 * The turn path on PostgreSQL (ADR 0032): the statements of `turn-path.pg.ts`, each folding several builder
 * statements into one round trip — the accept into a live session, the claim (lock and paused turns, busy check
 * and claim, message with first event and context window), the fenced end of one turn, a batch of streamed
 * events. What ADR 0032 keeps on the general path (a claim whose commit went unconfirmed, a pause, an outcome
 * ending two turns) goes to `turn-path.general.ts`.
 */
import type { Transaction } from 'kysely';
import { ensureSession, type SessionRecord } from '../sessions/index.js';
import type { Database, Store } from '../store/index.js';
import { TurnTakenOverError, type GeneralTurnPath } from './turn-path.general.js';
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
import {
  acceptIntoLiveSession,
  acceptIntoNewSession,
  appendTurnEvents,
  claimIfFree,
  finishHeldTurn,
  lockSessionForClaim,
  recordClaimedMessage,
} from './turn-path.pg.js';
import type { TurnRecord } from './turns.repo.js';

/** The turn path of PostgreSQL's folded statements, falling back on `general` where they do not apply. */
export class FoldedTurnPath implements TurnPath {
  constructor(
    private readonly store: Store,
    private readonly general: GeneralTurnPath,
  ) {}

  async acceptIntoLiveSession(trx: Transaction<Database>, input: AcceptInput): Promise<{ seq: number } | null> {
    const accepted = await acceptIntoLiveSession(trx, input);
    return accepted ? { seq: accepted.seq } : null;
  }

  async acceptIntoNewSession(
    trx: Transaction<Database>,
    input: AcceptInput & { session: NewSessionInput },
  ): Promise<{ session: SessionRecord; seq: number | null } | null> {
    return acceptIntoNewSession(trx, input);
  }

  claim(input: ClaimInput): TurnClaim {
    // A claim that must find out whether an earlier attempt committed reads the ledger the general way.
    if (!this.store.shared || input.unconfirmed) return this.general.claim(input);
    return new FoldedClaim(input);
  }

  fence(trx: Transaction<Database>, eventIds: readonly string[], owner: string): Promise<void> {
    return this.general.fence(trx, eventIds, owner);
  }

  async commitOutcome(trx: Transaction<Database>, commit: OutcomeCommit): Promise<Array<TurnRecord | null>> {
    if (commit.kind !== 'end' || !this.store.shared || commit.eventIds.length !== 1) {
      return this.general.commitOutcome(trx, commit);
    }
    // The fence, the outcome and everything it commits in one statement.
    const primary = commit.eventIds[0]!;
    const final = commit.finals.get(primary)!;
    const ended = await finishHeldTurn(trx, {
      eventId: primary,
      owner: commit.owner,
      status: commit.status,
      response: commit.response,
      terminationReason: commit.terminationReason,
      result: commit.resultOf(primary),
      messages: commit.writes.messages,
      usage: commit.writes.usage,
      idempotencyExpiresAt: commit.idempotency.settledExpiry(),
      event: { seq: commit.nextSeq(primary), ...final },
      now: commit.now,
    });
    if (!ended) throw new TurnTakenOverError(primary);
    return [ended];
  }

  async appendEvents(trx: Transaction<Database>, events: readonly StoredTurnEvent[]): Promise<void> {
    await appendTurnEvents(trx, events);
  }
}

/**
 * A claim in three statements: the session's lock with its paused turns and the turn's own seq; the busy check
 * with the claim (a statement of its own, after the lock, so it sees every earlier claim's commit); the message,
 * its count, the first event and the context window.
 */
class FoldedClaim implements TurnClaim {
  constructor(private readonly input: ClaimInput) {}

  /** The paused turns are read with the lock, in the transaction. */
  prepare(): Promise<'ready' | 'blocked' | null> {
    return Promise.resolve('ready');
  }

  async take(trx: Transaction<Database>, now: string): Promise<ClaimTaken> {
    const { sessionKey, eventId, owner } = this.input;
    const gate = await lockSessionForClaim(trx, { sessionKey, eventId });
    if (gate.approval && gate.self && gate.approval.seq < gate.self.seq) {
      return gate.self.status === 'accepted' ? 'approval' : null;
    }
    if (!gate.locked) return 'claiming';
    const claim = await claimIfFree(trx, { sessionKey, eventId, owner, now });
    if (claim.busy) return 'elsewhere';
    return { claimed: claim.claimed, clarification: gate.clarification };
  }

  async record(trx: Transaction<Database>, input: ClaimRecord): Promise<ClaimRecorded> {
    const { message, event, channel, window } = input;
    // The message, its count on the live session, the first event and the context window in one statement.
    const folded = { message, event, window };
    let recorded = await recordClaimedMessage(trx, folded);
    if (recorded === null) {
      await ensureSession(trx, { key: message.sessionKey, channel, now: message.createdAt });
      recorded = (await recordClaimedMessage(trx, folded))!;
    }
    return recorded;
  }
}
