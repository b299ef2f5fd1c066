import type { Clock } from '../lib/clock.js';
import { ProviderError, type ModelProvider } from '../runtime/index.js';
import type { ComponentHealth } from './health.service.js';

/** Delayed callbacks (the shape of `Timers` in turns/), injected so tests drive the probe's timeout and wait. */
export interface ProbeTimers {
  /** Calls `fn` once after `ms` milliseconds; the returned function cancels it. Never keeps the process alive. */
  after(ms: number, fn: () => void): () => void;
}

/** `setTimeout`, unreferenced. */
export const probeTimers: ProbeTimers = {
  after(ms, fn) {
    const timer = setTimeout(fn, ms);
    timer.unref();
    return () => clearTimeout(timer);
  },
};

/** The probe policy (ADR 0024); every field has a default. */
export interface ProviderHealthPolicy {
  /** A probe starts at most once per this many ms. Default 60 s. */
  intervalMs: number;
  /** A probe not answered within this many ms counts as failed. Default 5 s. */
  timeoutMs: number;
  /** A health request waits at most this many ms for a probe in flight, then serves what is known. Default 1 s. */
  waitMs: number;
  /** This many model calls failed in a row … Default 3. */
  failureThreshold: number;
  /** … the last within this many ms: the provider is failing. Default 60 s. */
  failureWindowMs: number;
}

export const DEFAULT_PROVIDER_HEALTH_POLICY: ProviderHealthPolicy = {
  intervalMs: 60_000,
  timeoutMs: 5_000,
  waitMs: 1_000,
  failureThreshold: 3,
  failureWindowMs: 60_000,
};

/** What ProviderHealth needs. */
export interface ProviderHealthOptions {
  /** The provider as configured; its `probe`, when it has one, is the reachability check. */
  provider: Pick<ModelProvider, 'type' | 'model' | 'probe'>;
  clock: Clock;
  timers?: ProbeTimers;
  policy?: Partial<ProviderHealthPolicy>;
  /** Told when the provider turns failing or recovers (one line per change, never per probe). */
  logger?: ChangeLogger;
}

/** The part of the logger ProviderHealth writes to. */
export interface ChangeLogger {
  warn(fields: object, message: string): void;
  info(fields: object, message: string): void;
}

/**
 * The provider's health (ADR 0024): reachability from a cheap probe (the
 * models list), cached and refreshed at most once per `intervalMs` — on
 * demand, when a health request finds it stale, in the background and
 * bounded by `timeoutMs` — plus the outcome of the turns' own model calls
 * (`track`): `failureThreshold` failures in a row, the last within
 * `failureWindowMs`, mean failing; a success clears them. `check()` never
 * waits longer than `waitMs`. The `echo` provider is always reachable and
 * always `degraded` (DECISIONS §9). `close()` aborts a probe in flight and
 * starts no more.
 */
export class ProviderHealth {
  readonly #provider: ProviderHealthOptions['provider'];
  readonly #clock: Clock;
  readonly #timers: ProbeTimers;
  readonly #policy: ProviderHealthPolicy;
  readonly #logger: ProviderHealthOptions['logger'];
  /** The outcome of the last probe: null when the server answered, undefined before the first. */
  #probeError: string | null | undefined = undefined;
  #probeStartedAt: number | null = null;
  #inflight: Promise<void> | null = null;
  /** Ends the probe in flight with a result (the first of answer, timeout, close wins). */
  #settle: ((error: string | null) => void) | null = null;
  #failures = { count: 0, at: 0, message: '' };
  /** The upstream's redacted text of the last failure, for the log line only. */
  #detail: string | null = null;
  #reported: 'ok' | 'failing' = 'ok';
  #closed = false;

  constructor(options: ProviderHealthOptions) {
    this.#provider = options.provider;
    this.#clock = options.clock;
    this.#timers = options.timers ?? probeTimers;
    this.#policy = { ...DEFAULT_PROVIDER_HEALTH_POLICY, ...options.policy };
    this.#logger = options.logger;
  }

  /**
   * Wraps `provider` so that the outcome of every model call counts: a
   * success clears the failures (and shows the server reachable), a failure
   * adds one. Aborted calls (an interrupted turn, shutdown) do not count.
   */
  track(provider: ModelProvider): ModelProvider {
    const complete = async (request: Parameters<ModelProvider['complete']>[0]) => {
      try {
        const response = await provider.complete(request);
        this.recordSuccess();
        return response;
      } catch (err) {
        this.recordFailure(err);
        throw err;
      }
    };
    const tracked: ModelProvider = { type: provider.type, model: provider.model, complete };
    if (provider.probe) tracked.probe = (signal) => provider.probe?.(signal) ?? Promise.resolve();
    return tracked;
  }

  /** A model call succeeded. */
  recordSuccess(): void {
    this.#failures = { count: 0, at: 0, message: '' };
    // A call that got through shows the server reachable, whatever the last probe saw.
    if (this.#probeError) this.#probeError = null;
    this.#report();
  }

  /**
   * A model call failed with `err`. Only the provider's own failures count: a
   * ProviderError other than an abort (not, say, an error of the caller's
   * stream callback passed through).
   */
  recordFailure(err: unknown): void {
    if (!(err instanceof ProviderError) || err.kind === 'aborted') return;
    this.#failures = { count: this.#failures.count + 1, at: this.#clock.now(), message: err.message };
    this.#detail = err.detail ?? null;
    this.#report();
  }

  /**
   * The provider component now. Starts a probe when the last one started
   * `intervalMs` ago or more (or none did), and waits at most `waitMs` for a
   * probe in flight; then answers from what is known. Never rejects.
   */
  async check(): Promise<ComponentHealth> {
    this.refresh();
    const inflight = this.#inflight;
    if (inflight) {
      let cancel = (): void => undefined;
      const waited = new Promise<void>((resolve) => {
        cancel = this.#timers.after(this.#policy.waitMs, resolve);
      });
      await Promise.race([inflight, waited]);
      cancel();
    }
    return this.state();
  }

  /** Starts a probe in the background when one is due (see `check`); no-op while one runs or once closed. */
  refresh(): void {
    const provider = this.#provider;
    if (this.#closed || this.#inflight || !provider.probe || provider.type === 'echo') return;
    const now = this.#clock.now();
    const last = this.#probeStartedAt;
    // (A clock set back makes the last probe look recent: it is due then too.)
    if (last !== null && now >= last && now - last < this.#policy.intervalMs) return;
    this.#probeStartedAt = now;
    const controller = new AbortController();
    const type = this.#provider.type;
    let cancelTimeout = (): void => undefined;
    this.#inflight = new Promise<void>((resolve) => {
      let settled = false;
      const finish = (error: string | null): void => {
        if (settled) return;
        settled = true;
        cancelTimeout();
        controller.abort(); // a timed-out probe stops; an answered one has nothing left to stop
        this.#inflight = null;
        this.#settle = null;
        if (!this.#closed) {
          this.#probeError = error;
          this.#report();
        }
        resolve();
      };
      this.#settle = finish;
      cancelTimeout = this.#timers.after(this.#policy.timeoutMs, () =>
        finish(`${type}: models call timed out after ${this.#policy.timeoutMs / 1000} s`),
      );
      Promise.resolve()
        .then(() => provider.probe?.(controller.signal))
        .then(
          () => finish(null),
          (err: unknown) => {
            if (err instanceof ProviderError) this.#detail = err.detail ?? null;
            finish(err instanceof ProviderError ? err.message : `${type}: models call failed`);
          },
        );
    });
  }

  /** The provider component from what is known, without probing. */
  state(): ComponentHealth {
    const type = this.#provider.type;
    if (type === 'echo') return { status: 'degraded', message: 'echo provider: offline answers, no model' };
    if (this.#probeError) return { status: 'failing', message: this.#probeError };
    const failures = this.#failures;
    const { failureThreshold, failureWindowMs } = this.#policy;
    if (failures.count >= failureThreshold && this.#clock.now() - failures.at < failureWindowMs) {
      return { status: 'failing', message: `last ${failures.count} model calls failed: ${failures.message}` };
    }
    if (this.#probeError === null) return { status: 'ok' };
    if (!this.#provider.probe) return { status: 'ok', message: 'reachability not probed' };
    return { status: 'unknown', message: 'not checked yet' };
  }

  /** Aborts a probe in flight (its result is dropped); no probe starts afterwards. Idempotent. */
  close(): Promise<void> {
    this.#closed = true;
    this.#settle?.(null);
    return Promise.resolve();
  }

  /** Logs when the provider turns failing or comes back, once per change. */
  #report(): void {
    const now = this.state();
    const next = now.status === 'failing' ? 'failing' : 'ok';
    if (next === this.#reported) return;
    this.#reported = next;
    if (next === 'failing') {
      // The upstream's own words (secrets redacted) go to this log line only, never to health's answer.
      const detail = this.#detail ? { detail: this.#detail } : {};
      this.#logger?.warn(
        { source: 'health', component: 'provider', cause: now.message, ...detail },
        'model provider failing',
      );
    } else {
      this.#logger?.info({ source: 'health', component: 'provider' }, 'model provider reachable again');
    }
  }
}
