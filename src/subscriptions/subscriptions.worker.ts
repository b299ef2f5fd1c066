import { randomBytes } from 'node:crypto';
import { Counter, Gauge, type Registry } from 'prom-client';
import type { Clock } from '../lib/clock.js';
import { isoTime } from '../lib/clock.js';
import type { Logger } from '../lib/logger.js';
import { BlockedTargetError, guardedFetch, type GuardedFetch } from '../lib/outbound.js';
import type { Store } from '../store/index.js';
import {
  claimDelivery,
  dueDeliveryIds,
  getSubscription,
  oldestPending,
  pruneDeliveries,
  recordAttempt,
  releaseLeases,
  type DeliveryRecord,
} from './subscriptions.repo.js';
import { signedHeaders } from './subscriptions.sign.js';

/** How often the worker looks for due deliveries when nothing woke it. */
export const DELIVERY_POLL_MS = 500;
/** Deliveries claimed per query. */
const CLAIM_BATCH = 50;
/** Characters of an error kept on a delivery. */
const ERROR_CHARS = 300;

/** The settings of the worker (config `subscriptions`). */
export interface DeliverySettings {
  allowPrivateTargets: boolean;
  /** Seconds before each retry; after the last, `failed`. */
  retrySchedule: readonly number[];
  timeoutSeconds: number;
  maxConcurrent: number;
  maxResponseBytes: number;
  keepDeliveries: number;
}

/** What one attempt came to. */
export interface AttemptResult {
  ok: boolean;
  status: number | null;
  error: string | null;
  durationMs: number;
}

/** Prometheus series of the deliveries. */
class DeliveryMetrics {
  readonly attempts: Counter<'result'>;
  readonly failures: Counter;
  readonly oldestPendingAge: Gauge;

  constructor(registry: Registry, oldestAgeSeconds: () => Promise<number>) {
    this.attempts = new Counter({
      name: 'gatehouse_subscription_attempts_total',
      help: 'Delivery attempts to subscribers, by result (delivered, http_error, timeout, network_error, refused)',
      labelNames: ['result'],
      registers: [registry],
    });
    this.failures = new Counter({
      name: 'gatehouse_subscription_failures_total',
      help: 'Deliveries that used up the retry schedule and were failed (dead letter)',
      registers: [registry],
    });
    this.oldestPendingAge = new Gauge({
      name: 'gatehouse_subscription_oldest_pending_seconds',
      help: 'Age of the oldest pending delivery (0 when none is pending)',
      registers: [registry],
      async collect() {
        this.set(await oldestAgeSeconds());
      },
    });
  }
}

/**
 * The delivery worker (DECISIONS §20, ADR 0040): one loop per gateway that claims due deliveries in the database
 * (a conditional update taking a lease, so each attempt is made by one gateway of several; a lease that expires,
 * its holder killed, makes the delivery claimable again), sends each signed, at most `maxConcurrent` at once,
 * and records the result: delivered, or the next attempt on the retry schedule, or failed after its end. Woken
 * at once after a commit that wrote deliveries, else it polls; due times are read from the injected clock.
 */
export class DeliveryWorker {
  private readonly fetch: GuardedFetch;
  private readonly metrics: DeliveryMetrics | null;
  private readonly inFlight = new Set<Promise<void>>();
  private timer: NodeJS.Timeout | null = null;
  private pumping: Promise<void> | null = null;
  private again = false;
  private closed = false;
  private started = false;

  constructor(
    private readonly options: {
      store: Store;
      clock: Clock;
      logger: Logger;
      /** This gateway's instance id: the lease's owner. */
      owner: string;
      settings: DeliverySettings;
      /** Sends `traceparent` on every attempt (DECISIONS §21). */
      tracing: boolean;
      registry?: Registry;
      pollMs?: number;
      /** False when no subscription exists at all: the poll then reads nothing (an idle gateway costs nothing). */
      anySubscription?: () => boolean;
    },
  ) {
    this.fetch = guardedFetch({ allowPrivate: options.settings.allowPrivateTargets });
    const age = async () => {
      const oldest = await oldestPending(options.store.db).catch(() => null);
      return oldest === null ? 0 : Math.max(0, (options.clock.now() - Date.parse(oldest)) / 1000);
    };
    this.metrics = options.registry ? new DeliveryMetrics(options.registry, age) : null;
  }

  /** Releases what a predecessor under this instance id held (all leases on a database of one writer), then polls. */
  async start(): Promise<void> {
    if (this.started || this.closed) return;
    this.started = true;
    const { store, owner } = this.options;
    await store.writer
      .run((trx) => releaseLeases(trx, store.shared ? owner : null))
      .catch((err: unknown) => {
        this.options.logger.warn({ err: (err as Error).message }, 'releasing delivery leases failed');
      });
    this.timer = setInterval(() => this.wake(), this.options.pollMs ?? DELIVERY_POLL_MS);
    this.timer.unref();
    this.wake();
  }

  /** Looks for due deliveries now; coalesces bursts. Never throws. */
  wake(): void {
    if (!this.started || this.closed) return;
    if (this.pumping) {
      this.again = true;
      return;
    }
    this.pumping = this.pump()
      .catch((err: unknown) => this.options.logger.warn({ err: (err as Error).message }, 'delivery claim failed'))
      .finally(() => {
        this.pumping = null;
        if (this.again) {
          this.again = false;
          this.wake();
        }
      });
  }

  /** Stops claiming, waits for the attempts in flight (each bounded by the timeout), closes the connections. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.pumping;
    await Promise.allSettled([...this.inFlight]);
    await this.fetch.close().catch(() => undefined);
  }

  private async pump(): Promise<void> {
    const { store, clock, settings } = this.options;
    if (this.options.anySubscription?.() === false) return;
    while (!this.closed) {
      const room = settings.maxConcurrent - this.inFlight.size;
      if (room <= 0) return; // an attempt that ends wakes the worker again
      const nowMs = clock.now();
      const now = isoTime(nowMs);
      const ids = await dueDeliveryIds(store.db, now, Math.min(room, CLAIM_BATCH));
      if (ids.length === 0) return;
      let claimedAny = false;
      for (const id of ids) {
        const leaseUntil = isoTime(nowMs + settings.timeoutSeconds * 1000 + 30_000);
        const claimed = await store.writer.run((trx) =>
          claimDelivery(trx, { id, owner: this.options.owner, now, leaseUntil }),
        );
        if (!claimed) continue;
        claimedAny = true;
        const attempt: Promise<void> = this.deliver(claimed)
          .catch((err: unknown) => this.options.logger.warn({ err: (err as Error).message }, 'delivery failed'))
          .finally(() => {
            this.inFlight.delete(attempt);
            this.wake();
          });
        this.inFlight.add(attempt);
      }
      if (!claimedAny) return;
    }
  }

  /** One attempt of a claimed delivery, and its result recorded. */
  private async deliver(delivery: DeliveryRecord): Promise<void> {
    const { store, clock, settings, owner } = this.options;
    const subscription = await getSubscription(store.db, delivery.subscriptionId);
    let result: AttemptResult;
    if (!subscription) {
      result = { ok: false, status: null, error: 'subscription deleted', durationMs: 0 };
    } else {
      result = await this.attempt({
        id: delivery.id,
        url: subscription.url,
        secret: subscription.secret,
        body: delivery.body,
      });
    }
    const nowMs = clock.now();
    const attempts = delivery.attempts + 1;
    const wait = settings.retrySchedule[attempts - 1];
    const finalFailure = !result.ok && (wait === undefined || !subscription);
    const status = result.ok ? 'delivered' : finalFailure ? 'failed' : 'pending';
    const recorded = await store.writer.run((trx) =>
      recordAttempt(trx, {
        id: delivery.id,
        owner,
        status,
        nextAttemptAt: isoTime(status === 'pending' ? nowMs + wait! * 1000 : nowMs),
        lastStatus: result.status,
        lastError: result.error,
        deliveredAt: result.ok ? isoTime(nowMs) : null,
      }),
    );
    if (recorded && finalFailure) this.metrics?.failures.inc();
    if (recorded && status !== 'pending' && subscription) {
      await store.writer
        .run((trx) => pruneDeliveries(trx, subscription.id, settings.keepDeliveries))
        .catch(() => undefined);
    }
    if (!result.ok) {
      this.options.logger.info(
        {
          delivery_id: delivery.id,
          subscription_id: delivery.subscriptionId,
          attempts,
          status: result.status,
          err: result.error,
        },
        status === 'failed' ? 'delivery failed; no retry left' : 'delivery attempt failed; retried later',
      );
    }
  }

  /**
   * Sends one delivery now: signed, through the outbound guard (the address checked at connect time, no
   * redirect followed), bounded by the timeout; reads at most `maxResponseBytes` of the answer.
   */
  async attempt(input: { id: string; url: string; secret: string; body: string }): Promise<AttemptResult> {
    const { clock, settings } = this.options;
    const started = Date.now();
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      'user-agent': 'Gatehouse-Webhooks',
      ...signedHeaders({ id: input.id, timestampMs: clock.now(), body: input.body, secret: input.secret }),
    };
    if (this.options.tracing) headers.traceparent = traceparentOf(input.body);
    const signal = AbortSignal.timeout(settings.timeoutSeconds * 1000);
    let result: AttemptResult;
    let label: string;
    try {
      const response = await this.fetch(input.url, { method: 'POST', headers, body: input.body, signal });
      await drain(response, settings.maxResponseBytes, signal);
      const ok = response.status >= 200 && response.status < 300;
      label = ok ? 'delivered' : 'http_error';
      result = { ok, status: response.status, error: ok ? null : `HTTP ${response.status}`, durationMs: 0 };
    } catch (err) {
      const timedOut = signal.aborted;
      label = err instanceof BlockedTargetError ? 'refused' : timedOut ? 'timeout' : 'network_error';
      const message = timedOut ? `timed out after ${settings.timeoutSeconds} s` : causeOf(err);
      result = { ok: false, status: null, error: message.slice(0, ERROR_CHARS), durationMs: 0 };
    }
    this.metrics?.attempts.inc({ result: label });
    return { ...result, durationMs: Date.now() - started };
  }
}

/** Reads at most `max` bytes of an answer, then lets the rest go. */
async function drain(response: Response, max: number, signal: AbortSignal): Promise<void> {
  if (!response.body) return;
  const reader = response.body.getReader();
  let read = 0;
  try {
    while (read < max && !signal.aborted) {
      const chunk = await reader.read();
      if (chunk.done) return;
      read += (chunk.value as Uint8Array).byteLength;
    }
  } finally {
    await reader.cancel().catch(() => undefined);
  }
}

/** What went wrong, in a line: the innermost cause's code or message. */
function causeOf(err: unknown): string {
  if (err instanceof BlockedTargetError) return err.message;
  let current: unknown = err;
  for (let depth = 0; depth < 4; depth++) {
    const cause = (current as { cause?: unknown } | null)?.cause;
    if (!(cause instanceof Error)) break;
    current = cause;
  }
  const error = current as { code?: unknown; message?: unknown };
  if (typeof error.code === 'string') return error.code;
  return typeof error.message === 'string' ? error.message : 'network error';
}

/** A `traceparent` for an attempt: the turn's trace when the event carries one, else a new trace. */
function traceparentOf(body: string): string {
  let traceId: string | null = null;
  try {
    const data = (JSON.parse(body) as { data?: { trace_id?: unknown } }).data;
    if (typeof data?.trace_id === 'string' && /^[0-9a-f]{32}$/.test(data.trace_id)) traceId = data.trace_id;
  } catch {
    /* a body the worker wrote is JSON */
  }
  return `00-${traceId ?? randomBytes(16).toString('hex')}-${randomBytes(8).toString('hex')}-01`;
}
