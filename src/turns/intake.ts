import { errors, IdempotencyConflictError } from '../http/errors.js';
import type { Clock } from '../lib/clock.js';
import { isoTime } from '../lib/clock.js';
import type { IdGenerator } from '../lib/ids.js';
import {
  deriveEventId,
  type IdempotencyCache,
  type IdempotencyLedgerGauge,
} from '../idempotency/idempotency.service.js';
import {
  claimIdempotencyKey,
  getIdempotencyRecord,
  setIdempotencyEventId,
  type IdempotencyRecord,
} from '../idempotency/idempotency.repo.js';
import { ensureSession } from '../sessions/sessions.repo.js';
import type { Store } from '../store/index.js';
import type { InboundPayload } from './turn-runner.js';
import type { TurnQueue } from './turn-queue.js';
import { insertTurn } from './turns.repo.js';

/** One inbound message, from any entry point. */
export interface SubmitInput {
  sessionKey: string;
  payload: InboundPayload;
  /** Present for keyed requests. */
  idempotency?: { scope: string; key: string; fingerprint: string; wait: boolean };
}

/** What intake did: stored a new event, or found the original of a retry. */
export type SubmitResult =
  | { replay: false; eventId: string; sessionKey: string }
  | { replay: true; eventId: string; sessionKey: string; originalWait: boolean };

/** spec: Limits — idempotency record lifetime. */
const TTL_MS = 3_600_000;

/**
 * The one door every message comes through (HTTP, WebSocket, webhook, tasks,
 * cron): idempotency claim, session, ledger `accepted` — one transaction,
 * committed before anything is acknowledged — then the turn queue.
 */
export class Intake {
  constructor(
    private readonly options: {
      store: Store;
      clock: Clock;
      ids: IdGenerator;
      queue: TurnQueue;
      cache: IdempotencyCache;
      gauge: IdempotencyLedgerGauge;
      owner: string;
      /** Told of every keyed request answered from an existing record (metrics). */
      onReplay?: () => void;
      /** Told of every message newly accepted (after its commit). */
      onAccepted?: (sessionKey: string, eventId: string) => void;
    },
  ) {}

  /**
   * Accepts a message durably and queues its turn. Throws 409 (changed
   * content for a key), 503 (store down, idempotency ceiling, queue full);
   * in every failure nothing is published.
   */
  async submit(input: SubmitInput): Promise<SubmitResult> {
    const { store, clock, cache, gauge, queue } = this.options;
    const idem = input.idempotency;
    const nowMs = clock.now();
    if (idem) {
      const hit = cache.get(idem.scope, idem.key, nowMs);
      if (hit) {
        if (hit.fingerprint !== idem.fingerprint) throw new IdempotencyConflictError();
        this.options.onReplay?.();
        return { replay: true, eventId: hit.eventId, sessionKey: hit.sessionKey, originalWait: hit.wait };
      }
    }
    try {
      if (!queue.hasRoom()) throw errors.unavailable('too many messages queued; retry later');
      if (idem) gauge.assertRoom();
    } catch (err) {
      // A retry creates nothing: answer it from the store even at the bounds (cold cache, e.g. after a restart).
      const existing = idem ? await getIdempotencyRecord(store.db, idem.scope, idem.key, isoTime(nowMs)) : null;
      if (!existing) throw err;
      return this.replay(idem!, existing);
    }

    const now = isoTime(nowMs);
    const derivedId = idem ? deriveEventId(idem.scope, idem.key) : this.options.ids.next('evt');
    const outcome = await store.writer.run(async (trx) => {
      let eventId = derivedId;
      if (idem) {
        const claim = await claimIdempotencyKey(trx, {
          scope: idem.scope,
          key: idem.key,
          fingerprint: idem.fingerprint,
          eventId,
          sessionKey: input.sessionKey,
          wait: idem.wait,
          createdAt: now,
          // An acknowledgement is complete once given; a waited result expires from its turn's end.
          expiresAt: idem.wait ? null : isoTime(nowMs + TTL_MS),
        });
        if (!claim.created) return { created: false as const, existing: claim.existing };
      }
      const session = await ensureSession(trx, { key: input.sessionKey, channel: input.payload.channel, now });
      const insert = () =>
        insertTurn(trx, {
          eventId,
          sessionKey: input.sessionKey,
          contextEpoch: session.contextEpoch,
          payload: input.payload,
          owner: this.options.owner,
          now,
        });
      let turn = await insert();
      if (idem && !turn.inserted) {
        // The claim created a record, yet the derived id is in the ledger: an earlier life of this key
        // (its record expired) used it. This is a new event: give it its own id.
        eventId = this.options.ids.next('evt');
        await setIdempotencyEventId(trx, idem.scope, idem.key, eventId);
        turn = await insert();
      }
      return { created: true as const, inserted: turn.inserted, eventId };
    });

    if (!outcome.created) return this.replay(idem!, outcome.existing);
    const eventId = outcome.eventId;
    if (idem) {
      gauge.added();
      cache.set(idem.scope, idem.key, {
        fingerprint: idem.fingerprint,
        eventId,
        sessionKey: input.sessionKey,
        wait: idem.wait,
        staleAfter: nowMs + TTL_MS,
      });
    }
    // The event is durable: queue it even if the queue filled meanwhile. If the process dies
    // first, start-up recovery finds it `accepted` and runs it — it is never lost.
    if (outcome.inserted) {
      queue.enqueue(input.sessionKey, { kind: 'turn', eventId }, { force: true });
      this.options.onAccepted?.(input.sessionKey, eventId);
    }
    return { replay: false, eventId, sessionKey: input.sessionKey };
  }

  /** The answer to a retry whose record is in the store: 409 for changed content, else the original event. */
  private replay(idem: NonNullable<SubmitInput['idempotency']>, existing: IdempotencyRecord): SubmitResult {
    if (existing.fingerprint !== idem.fingerprint) throw new IdempotencyConflictError();
    this.options.cache.set(idem.scope, idem.key, {
      fingerprint: existing.fingerprint,
      eventId: existing.eventId,
      sessionKey: existing.sessionKey,
      wait: existing.wait,
      staleAfter: Date.parse(existing.createdAt) + TTL_MS,
    });
    this.options.onReplay?.();
    return { replay: true, eventId: existing.eventId, sessionKey: existing.sessionKey, originalWait: existing.wait };
  }
}
