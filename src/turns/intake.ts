import { ApiError, errors } from '../http/errors.js';
import type { Clock } from '../lib/clock.js';
import { isoTime } from '../lib/clock.js';
import type { IdGenerator } from '../lib/ids.js';
import {
  contentFingerprint,
  principalScope,
  resolveKey,
  webhookScope,
  type Idempotency,
  type KeyedRequest,
  type Original,
} from '../idempotency/index.js';
import type { IdentityCheck } from '../security/identity.js';
import {
  ensureSessionCreated,
  ownerScope,
  ownsSession,
  presentSession,
  type SessionOrigin,
} from '../sessions/index.js';
import type { Transaction } from 'kysely';
import type { Database, Store } from '../store/index.js';
import { MAX_CONTEXT_MESSAGES, payloadOf, type Inbound, type StoredTrace, type Submitted } from './inbound.js';
import type { EventOutbox, OutboxEvent } from './turn-outbox.js';
import type { QueueLoad, TurnQueue } from './turn-queue.js';
import type { TurnTimings } from './turn-timings.js';
import type { TurnTracer } from './turn-trace.js';
import type { TurnPath } from './turn-path.js';
import { insertTurn } from './turns.repo.js';

/**
 * Load shedding at the door (`limits.overload`, ADR 0043): what a new turn
 * gets when the gateway cannot take it now, each a 503 UNAVAILABLE with
 * `Retry-After` (null: it may come in). Work the gateway creates itself
 * (tasks, cron) is bounded where it is made and never shed here.
 */
export interface LoadShedder {
  /** The process is over a limit (memory watermark, event-loop delay): asked first, before anything is read. */
  pressure(): ApiError | null;
  /** The turn queue cannot take another turn in time: asked before the acceptance touches the store. */
  refuse(load: QueueLoad): ApiError | null;
  /** Starts what it samples (with the message path); `close` stops it (the message path's shutdown). */
  start?(): void;
  close?(): void;
}

/** Seconds a client is told to wait when the turn queue is at `agent.max_queued_turns`. */
const QUEUE_FULL_RETRY_AFTER_SECONDS = 5;

/** Sources of work the gateway creates itself: never shed (their own runners bound them). */
const OWN_WORK: ReadonlySet<string> = new Set(['task', 'cron']);

export interface IntakeOptions {
  store: Store;
  /** The store's own statements for a turn: here, the accept into a live session. */
  path: TurnPath;
  clock: Clock;
  ids: IdGenerator;
  queue: TurnQueue;
  idempotency: Idempotency;
  /** The user identity check by auth mode (DECISIONS §4); throws 403. */
  checkIdentity: IdentityCheck;
  /** This process's instance id (ledger `owner`). */
  owner: string;
  /** Told of every message newly accepted (after its commit). */
  onAccepted?: (sessionKey: string, eventId: string) => void;
  /** Where each turn's moments are marked (`Server-Timing`). */
  timings?: TurnTimings;
  /** Tracing (DECISIONS §21): the turn's trace begins here and is stored with it; null or absent when off. */
  tracer?: TurnTracer | null;
  /** Event subscriptions (DECISIONS §20): `message.received` and `session.created` written with the acceptance. */
  outbox?: EventOutbox | null;
  /**
   * Who a session this message creates belongs to and which agent runs it
   * (DECISIONS §17-18); throws the entry point's 4xx for a requested agent
   * that is unknown (404) or not the principal's (403). Absent: `main`,
   * owned by `default`.
   */
  originOf?: (inbound: Inbound) => SessionOrigin;
  /** Load shedding (`limits.overload`); absent: only the queue's bound refuses. */
  shedder?: LoadShedder | null;
}

/**
 * The first step of the message path, for every entry point (HTTP,
 * WebSocket, webhook, tasks, cron): the identity check, the key rules, the
 * idempotency claim or replay, the session and the ledger `accepted` — one
 * transaction, committed and durable before anything is acknowledged (a
 * waited turn whose entry point answers only with its outcome rides on the
 * turn's own durable commits: `Inbound.outcomeOnly`) — then the turn queue.
 */
export class Intake {
  constructor(private readonly options: IntakeOptions) {}

  /**
   * Accepts a message durably and queues its turn, or answers a retry with
   * its original. Throws 403 (identity), 400 (key rules), the admission's
   * refusal, 409 (changed content for a key), 503 (store down, idempotency
   * ceiling, queue full, overloaded: the last two with Retry-After); in every
   * failure nothing is published.
   */
  async submit(inbound: Inbound): Promise<Submitted> {
    const shedder = OWN_WORK.has(inbound.source) ? null : this.options.shedder;
    const pressure = shedder?.pressure();
    if (pressure) throw pressure;
    if (inbound.context && inbound.context.length > MAX_CONTEXT_MESSAGES) {
      throw errors.badRequest(`at most ${MAX_CONTEXT_MESSAGES} context messages`);
    }
    if (inbound.identity !== 'skip') {
      await this.options.checkIdentity({
        platform: inbound.platform,
        userId: inbound.userId,
        loopbackTrusted: inbound.identity.loopbackTrusted,
        ip: inbound.identity.ip,
      });
    }
    const keyed = this.keyedRequest(inbound);
    const trace = this.options.tracer?.begin(inbound);
    const slot = inbound.admission?.admit(keyed ? this.options.idempotency.derivedEventId(keyed) : null);
    try {
      const submitted = await this.accept(inbound, keyed, trace);
      if (submitted.replay) slot?.release();
      else slot?.hold(submitted.eventId);
      return submitted;
    } catch (err) {
      slot?.release();
      throw err;
    }
  }

  /** The keyed request of an inbound message (spec rules 1–2), or null when it carries no key. */
  private keyedRequest(inbound: Inbound): KeyedRequest | null {
    const sources = inbound.idempotency;
    if (!sources) return null;
    const key = resolveKey(sources);
    if (key === undefined) return null;
    const scope =
      sources.scope === 'webhook'
        ? webhookScope(inbound.userId, inbound.chatId)
        : principalScope(inbound.principal ?? { scope: 'anonymous' }, inbound.sessionKey);
    return { scope, key, fingerprint: contentFingerprint(sources.scope, inbound), wait: inbound.wait };
  }

  /**
   * Acceptances past the shedder and not yet queued (their commit is under way): counted as waiting for a slot,
   * so a burst that arrives while commits are slow cannot all pass on the same short queue.
   */
  private admitting = 0;

  /** Set once an acceptance wrote deliveries; the worker is woken after the commit. */
  private reported = false;

  /**
   * Writes the deliveries of the events someone subscribes to, in the acceptance's transaction. Nobody
   * subscribed: `events` is not even built, and no statement runs.
   */
  private async report(trx: Transaction<Database>, events: () => OutboxEvent[]): Promise<void> {
    const outbox = this.options.outbox;
    if (!outbox || !(outbox.wants('message.received') || outbox.wants('session.created'))) return;
    const wanted = events().filter((event) => outbox.wants(event.type));
    if (wanted.length > 0 && (await outbox.write(trx, wanted)) > 0) this.reported = true;
  }

  private async accept(inbound: Inbound, keyed: KeyedRequest | null, trace?: StoredTrace): Promise<Submitted> {
    const { queue, idempotency } = this.options;
    const origin = this.options.originOf?.(inbound) ?? {};
    if (keyed) {
      const original = idempotency.recall(keyed);
      if (original) return replayOf(inbound, original);
    }
    try {
      const load = queue.load();
      const shed = OWN_WORK.has(inbound.source)
        ? null
        : this.options.shedder?.refuse({ ...load, ready: load.ready + this.admitting });
      if (shed) throw shed;
      if (!queue.hasRoom()) throw queueFull();
      if (keyed) idempotency.assertRoom();
    } catch (err) {
      // A retry creates nothing: answer it from the store even at the bounds (cold cache, e.g. after a restart).
      const original = keyed ? await idempotency.lookup(keyed) : null;
      if (!original) throw err;
      return replayOf(inbound, original);
    }

    this.admitting++;
    try {
      return await this.commit(inbound, keyed, origin, trace);
    } finally {
      this.admitting--;
    }
  }

  /** The acceptance's one transaction, then the turn queue (see `accept`). */
  private async commit(
    inbound: Inbound,
    keyed: KeyedRequest | null,
    origin: SessionOrigin | Record<string, never>,
    trace?: StoredTrace,
  ): Promise<Submitted> {
    const { store, queue, idempotency } = this.options;
    const nowMs = this.options.clock.now();
    const now = isoTime(nowMs);
    const scope = ownerScope(inbound.principal);
    const payload = payloadOf(inbound);
    if (trace) payload.trace = trace;
    const outcome = await store.writer.run(
      async (trx) => {
        let eventId = keyed ? idempotency.derivedEventId(keyed) : this.options.ids.next('evt');
        if (keyed) {
          const original = await idempotency.claim(trx, keyed, { eventId, sessionKey: inbound.sessionKey, nowMs });
          if (original) return { created: false as const, original };
        }
        // A live session's turn in one statement where the store has one (ADR 0032); anything else takes the
        // general path below.
        const acceptInput = {
          eventId,
          sessionKey: inbound.sessionKey,
          ownerScope: scope,
          payload,
          owner: this.options.owner,
          now,
        };
        const accepted = await this.options.path.acceptIntoLiveSession(trx, acceptInput);
        if (accepted) {
          await this.report(trx, () => received(eventId, inbound, now));
          return { created: true as const, inserted: true, eventId, seq: accepted.seq, newSession: false };
        }
        // No live session of this principal answered: most often there is none. A session created with its
        // turn in one statement where the store has one (ADR 0032); else its insert is tried first.
        const sessionInput = { key: inbound.sessionKey, channel: inbound.channel, now, ...origin };
        const withNew = await this.options.path.acceptIntoNewSession(trx, { ...acceptInput, session: sessionInput });
        const ensured = withNew
          ? { session: withNew.session, created: true }
          : await ensureSessionCreated(trx, sessionInput, { missing: true });
        const session = ensured.session;
        // Another principal's session is as absent as none (DECISIONS §18); the transaction writes nothing.
        if (!ownsSession(scope, session.principal)) throw errors.notFound('session');
        const insert = () =>
          insertTurn(trx, {
            eventId,
            sessionKey: inbound.sessionKey,
            contextEpoch: session.contextEpoch,
            payload,
            owner: this.options.owner,
            now,
          });
        let turn: { inserted: boolean; turn: { seq: number } } =
          withNew && withNew.seq !== null ? { inserted: true, turn: { seq: withNew.seq } } : await insert();
        if (keyed && !turn.inserted) {
          // The claim created a record, yet the derived id is in the ledger: an earlier life of this key
          // (its record expired) used it. This is a new event: give it its own id.
          eventId = this.options.ids.next('evt');
          await idempotency.repoint(trx, keyed, eventId);
          turn = await insert();
        }
        if (turn.inserted) {
          // A session made (or revived) by this acceptance starts now with no message.
          const fresh = session.createdAt === now && session.messageCount === 0;
          await this.report(trx, () => [
            ...(fresh ? [{ type: 'session.created', timestamp: now, data: presentSession(session) }] : []),
            ...received(eventId, inbound, now),
          ]);
        }
        const newSession = ensured.created && turn.inserted;
        return { created: true as const, inserted: turn.inserted, eventId, seq: turn.turn.seq, newSession };
      },
      // An acknowledgement goes ahead of the background turns' writes.
      { durable: !(inbound.wait && inbound.outcomeOnly === true), urgent: true },
    );

    if (!outcome.created) return replayOf(inbound, outcome.original);
    if (this.reported) {
      this.reported = false;
      this.options.outbox?.committed();
    }
    const eventId = outcome.eventId;
    this.options.timings?.mark(eventId, 'accepted');
    if (trace && outcome.inserted) {
      const principal = inbound.principal?.id ?? null;
      const ids = { eventId, sessionKey: inbound.sessionKey, source: inbound.source, channel: inbound.channel };
      this.options.tracer?.accepted({ ...ids, principal }, trace, inbound.text);
    }
    if (keyed) idempotency.remember(keyed, { eventId, sessionKey: inbound.sessionKey });
    // The event is durable: queue it even if the queue filled meanwhile. If the process dies
    // first, start-up recovery finds it `accepted` and runs it — it is never lost.
    if (outcome.inserted) {
      this.options.timings?.mark(eventId, 'queued');
      const hints = { ...(outcome.newSession ? { newSession: true } : {}), ...(keyed ? {} : { unkeyed: true }) };
      queue.enqueue(inbound.sessionKey, { kind: 'turn', eventId, seq: outcome.seq, ...hints }, { force: true });
      this.options.onAccepted?.(inbound.sessionKey, eventId);
    }
    return { eventId, sessionKey: inbound.sessionKey, replay: false, answer: inbound.wait ? 'result' : 'ack' };
  }
}

/** The 503 of a full (or closed) turn queue, with `Retry-After`. */
function queueFull(): ApiError {
  const seconds = QUEUE_FULL_RETRY_AFTER_SECONDS;
  const details = { reason: 'queue_full', retry_after_seconds: seconds };
  return new ApiError('UNAVAILABLE', 'too many messages queued; retry later', details, {
    'retry-after': String(seconds),
  });
}

/** `message.received`: the accepted message as its turn holds it (DECISIONS §20). */
function received(eventId: string, inbound: Inbound, now: string): OutboxEvent[] {
  const { sessionKey, channel, platform, userId, chatId, source, text } = inbound;
  const data = { event_id: eventId, session_key: sessionKey, channel, platform, user_id: userId, chat_id: chatId };
  return [{ type: 'message.received', timestamp: now, data: { ...data, source, text, received_at: now } }];
}

/** spec rules 3, 5 and 6: a retry answers as its original did, and waits when either of them waits. */
function replayOf(inbound: Inbound, original: Original): Submitted {
  return {
    eventId: original.eventId,
    sessionKey: original.sessionKey,
    replay: true,
    answer: inbound.wait || original.originalWait ? 'result' : 'ack',
  };
}
