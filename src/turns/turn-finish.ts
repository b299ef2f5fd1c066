/**
 * The end of a turn (ADR 0026, 0014, 0029): its outcome — the staged reply and usage, the ledger's end or pause,
 * the idempotency TTL, the final event — stored in one durable commit behind the fence, then handed to waiters
 * and delivered. A store refusing the commit keeps the outcome for a `finish` job; a turn another gateway took
 * over drops it.
 */
import type { Clock } from '../lib/clock.js';
import { isoTime } from '../lib/clock.js';
import type { Logger } from '../lib/logger.js';
import type { Idempotency } from '../idempotency/index.js';
import { ProviderError, type AgentOutcome, type TurnTotals } from '../runtime/index.js';
import { StoreUnavailableError, type Store } from '../store/index.js';
import type { ContextCache } from './context-cache.js';
import type { TurnEventHub, TurnEventType } from './turn-events.js';
import type { EventOutbox, OutboxEvent } from './turn-outbox.js';
import { TurnTakenOverError, type OutcomeCommit, type TurnPath } from './turn-path.js';
import type { JobResult } from './turn-queue.js';
import type { TurnTimings } from './turn-timings.js';
import type { TurnTrace } from './turn-trace.js';
import type { TurnWaiters } from './turn-waiters.js';
import type { TurnWrites } from './turn-writes.js';
import { messageView, presentTurn } from './turns.presenter.js';
import type { TerminalTurnStatus } from './turn-status.js';
import type { TurnRecord } from './turns.repo.js';

/** What ending a turn uses (the runner's options). */
export interface TurnFinishDeps {
  store: Store;
  /** The store's own statements for each step of a turn (chosen once, where the message path is built). */
  path: TurnPath;
  hub: TurnEventHub;
  /** Told of each outcome (or pause) once it is durable, before its final event: waiting answers need no read. */
  waiters?: Pick<TurnWaiters, 'settled'>;
  /** Where each turn's moments are marked (`Server-Timing`). */
  timings?: TurnTimings;
  /** Context windows kept in memory (only where this process is the database's one writer). */
  contextCache?: ContextCache;
  /** Starts the TTL of a finished turn's idempotency records, in its ledger transaction. */
  idempotency: Pick<Idempotency, 'settle' | 'settledExpiry'>;
  clock: Clock;
  logger: Logger;
  /** This process's instance id (ledger `owner`): the fence's. */
  owner: string;
  /** Told when a run ends or pauses (metrics). */
  onOutcome?: (status: string, durationMs: number) => void;
  /** Told once a turn of `sessionKey` ended or paused and its outcome is stored (the session may go on). */
  onSessionFree?: (sessionKey: string) => void;
  /** Event subscriptions (DECISIONS §20): the outcome's deliveries are written in its commit. */
  outbox?: EventOutbox | null;
}

/** True when `err` (or an error it wraps) says the store cannot be reached or cannot write right now. */
export function isStoreUnavailable(err: unknown): boolean {
  for (let e = err, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    if (e instanceof StoreUnavailableError) return true;
  }
  return false;
}

/** The outcome of a turn the store failed under after its first model call, tool or command (ADR 0014). */
export function storeUnavailableOutcome(totals: TurnTotals): AgentOutcome {
  return { status: 'interrupted', reason: 'store_unavailable', totals };
}

/**
 * Stores a turn's outcome and tells listeners. When the store refuses it,
 * the outcome is not lost: a `finish` job carrying it (and the reply and
 * usage it stores) takes the head of the lane and writes it once the store
 * is back (the turn's event numbering stays open until then).
 */
export async function settleOutcome(
  deps: TurnFinishDeps,
  eventIds: string[],
  outcome: AgentOutcome,
  startedMs: number,
  writes: TurnWrites,
  options: {
    metrics?: boolean;
    trace?: TurnTrace | null;
    /** The one turn ending was accepted without an idempotency key (`TurnJob.unkeyed`): no record to settle. */
    unkeyed?: boolean;
  } = {},
): Promise<JobResult> {
  let records: Array<TurnRecord | null>;
  const trace = options.trace ?? null;
  try {
    records = await finishTurns(deps, eventIds, outcome, writes, trace, options.unkeyed === true);
    for (const message of writes.messages) {
      deps.contextCache?.append(message.sessionKey, message.contextEpoch, [message]);
    }
  } catch (err) {
    for (const message of writes.messages) deps.contextCache?.forget(message.sessionKey);
    if (err instanceof TurnTakenOverError) {
      // Another gateway adopted the turn while this one was silent: its outcome there stands, this one's is dropped.
      deps.logger.warn(
        { source: 'turns', event_id: eventIds[0], owner: deps.owner },
        'turn taken over by another gateway; this outcome is not stored',
      );
      for (const id of eventIds) deps.hub.release(id);
      return 'done';
    }
    if (!isStoreUnavailable(err)) {
      for (const id of eventIds) deps.hub.release(id);
      throw err;
    }
    deps.logger.warn(
      { source: 'turns', event_id: eventIds[0], err: (err as Error).message },
      'store unavailable when ending the turn; its outcome is stored once it is back',
    );
    const retried = { kind: 'finish' as const, eventId: eventIds[0]!, eventIds, outcome, startedMs, writes };
    return { retry: trace ? { ...retried, trace } : retried };
  }
  for (const id of eventIds) deps.hub.release(id);
  if (options.metrics !== false) deps.onOutcome?.(outcome.status, deps.clock.now() - startedMs);
  if (deps.store.shared && deps.onSessionFree) {
    const sessionKey = records.find((record) => record !== null)?.sessionKey;
    if (sessionKey) deps.onSessionFree(sessionKey);
  }
  return 'done';
}

/**
 * Writes the outcome in one durable commit — the staged reply and usage,
 * the ledger's end (or pause), the idempotency TTL and the turn's final
 * event — then hands the ledger record to waiters and delivers the final
 * event (so whoever hears of it finds it stored). Repeatable: a commit
 * whose answer was lost writes nothing twice.
 */
async function finishTurns(
  deps: TurnFinishDeps,
  eventIds: string[],
  outcome: AgentOutcome,
  writes: TurnWrites,
  trace: TurnTrace | null,
  unkeyed: boolean,
): Promise<Array<TurnRecord | null>> {
  const { store, path, hub, logger, waiters, timings } = deps;
  const now = isoTime(deps.clock.now());
  const primary = eventIds[0]!;
  /** The final event of each turn: stored in the outcome's transaction, delivered after it. */
  const finals = new Map<string, { type: TurnEventType; data: Record<string, unknown> }>();
  const stored = { eventIds, owner: deps.owner, writes, finals, nextSeq: (id: string) => hub.nextSeq(id), now };
  let commit: OutcomeCommit;
  if (outcome.status === 'waiting_approval' || outcome.status === 'waiting_clarification') {
    const pending = outcome.pending;
    for (const id of eventIds) {
      const message = messageView(id, outcome.status, outcome.response, null, outcome.totals);
      finals.set(id, { type: 'status', data: { status: outcome.status, message } });
    }
    commit = {
      ...stored,
      kind: 'pause',
      status: outcome.status,
      pending,
      response: outcome.response,
      currentTool: pending.calls[0]?.name ?? null,
    };
  } else {
    let status: TerminalTurnStatus;
    let content: string | null = null;
    let messageId: string | null = null;
    let reason: string | null = null;
    let error: { code: string; message: string } | null = null;
    switch (outcome.status) {
      case 'completed':
        status = 'completed';
        content = outcome.content;
        messageId = outcome.messageId;
        reason = 'completed';
        break;
      case 'incomplete':
        status = 'incomplete';
        content = outcome.content;
        messageId = outcome.messageId;
        reason = outcome.reason;
        break;
      case 'interrupted':
        status = 'interrupted';
        reason = outcome.reason;
        break;
      case 'failed': {
        status = 'failed';
        const isProvider = outcome.error.name === 'ProviderError';
        reason = isProvider ? 'provider_error' : 'internal_error';
        // The client gets the provider's name and what went wrong (`openai: HTTP 500`), never the upstream's text.
        error = isProvider
          ? { code: 'UPSTREAM_ERROR', message: `model provider failed: ${outcome.error.message}` }
          : { code: 'INTERNAL_ERROR', message: 'internal error' };
        if (isProvider) {
          // The cause in a word (ECONNREFUSED, HTTP 401, timeout) and the upstream's text, secrets redacted: log only.
          const text = providerLogText(outcome.error);
          const fields = { source: 'turns', event_id: primary, cause: providerCause(outcome.error), err: text };
          logger.error(fields, `turn failed: ${text}`);
        } else logger.error({ source: 'turns', event_id: primary, err: outcome.error }, 'turn failed');
        break;
      }
    }
    for (const id of eventIds) {
      // A stream ends with `done` (the Message) or `error` (the error object) — DECISIONS §5.
      finals.set(
        id,
        error
          ? { type: 'error', data: { error: { ...error, details: { event_id: id } }, status } }
          : {
              type: 'done',
              data: { status, message: messageView(id, status, content, messageId, outcome.totals) },
            },
      );
    }
    const resultOf = (id: string): unknown => {
      const message = messageView(id, status, content, messageId, outcome.totals);
      return error ? { error, message } : { message };
    };
    commit = {
      ...stored,
      kind: 'end',
      status,
      response: content,
      terminationReason: reason,
      resultOf,
      // A turn accepted without a key has no record whose TTL could start: nothing to update.
      idempotency: unkeyed && eventIds.length === 1 ? withoutRecords(deps.idempotency) : deps.idempotency,
    };
  }
  const outbox = deps.outbox ?? null;
  const eventType = outcomeEventType(commit.status);
  // Nothing subscribes: the commit is the outcome's own statements, not one more (ADR 0040).
  const reported = eventType !== null && outbox !== null && outbox.wants(eventType);
  let written = 0;
  const records = await store.writer.run(async (trx) => {
    const ended = await path.commitOutcome(trx, commit);
    if (reported) {
      // One delivery per turn this commit ended or paused; a repeated commit ends nothing and writes nothing.
      const events: OutboxEvent[] = ended
        .filter((record): record is TurnRecord => record !== null)
        .map((record) => ({ type: eventType, timestamp: now, data: presentTurn(record) }));
      written = events.length > 0 ? await outbox.write(trx, events) : 0;
    }
    return ended;
  });
  if (written > 0) outbox?.committed();
  timings?.mark(primary, 'stored');
  trace?.stored();
  for (const record of records) if (record) waiters?.settled(record);
  for (const id of eventIds) {
    const final = finals.get(id)!;
    hub.publish(id, final.type, final.data, { stored: true });
  }
  trace?.delivered(commit.status);
  return records;
}

/** The subscription event an outcome reports (DECISIONS §20), null for one no event names. */
function outcomeEventType(status: string): string | null {
  if (status === 'completed') return 'turn.completed';
  if (status === 'failed') return 'turn.failed';
  if (status === 'waiting_approval') return 'turn.waiting_approval';
  return null;
}

/** The short cause of a provider failure (`ProviderError.reason`), for the failed turn's log line. */
function providerCause(err: Error): string {
  return err instanceof ProviderError ? err.reason : 'provider error';
}

/** A provider failure with the upstream's redacted text (`ProviderError.logText`), for the failed turn's log line. */
function providerLogText(err: Error): string {
  return err instanceof ProviderError ? err.logText : err.message;
}

/** The idempotency of a turn known to have no record: `settle` has nothing to update. */
function withoutRecords(idempotency: TurnFinishDeps['idempotency']): TurnFinishDeps['idempotency'] {
  return { settle: () => Promise.resolve(), settledExpiry: () => idempotency.settledExpiry() };
}
