import type { Clock } from '../lib/clock.js';
import type { RateGroup } from '../lib/rate-groups.js';
import type { SharedWindows } from './cluster-counts.js';

/**
 * Per-token rate limits (spec "Limits"; DECISIONS §4): fixed one-minute
 * windows in four groups — `read` 120, `write` 30, `analytics` 10,
 * `lifecycle` 5 per minute per token by default (`security.rate_limits`).
 * Applies only in the standard and extended profiles; the caller decides that.
 * Where gateway processes share a database, the windows count across them
 * (ADR 0028): the other processes' last-known counts are added to this one's.
 */

export { RATE_GROUPS, type RateGroup } from '../lib/rate-groups.js';

/** The outcome of one request against a limit; the fields feed the `X-RateLimit-*` headers. */
export interface RateDecision {
  /** False when the request is over the limit (→ 429). */
  allowed: boolean;
  /** `X-RateLimit-Limit`. */
  limit: number;
  /** `X-RateLimit-Remaining`; never negative. */
  remaining: number;
  /** `X-RateLimit-Reset`: whole seconds until the window ends, at least 1. */
  resetSeconds: number;
}

/** Default window: one minute (spec "per 1 minute"). */
export const DEFAULT_WINDOW_MS = 60_000;
/** Default hard cap on tracked keys. */
export const DEFAULT_MAX_KEYS = 50_000;

/** A generic fixed-window counter: counts per key within windows aligned to `floor(now / windowMs)`. */
export interface WindowCounter {
  /** Counts one event for `key` if it is under `limit`; reports the decision. */
  hit(key: string, limit: number): RateDecision;
  /** Number of keys tracked in the current window. */
  size(): number;
}

/** Options of `createWindowCounter`. */
export interface WindowCounterOptions {
  clock: Clock;
  /** Window length in ms; default 60 000. */
  windowMs?: number;
  /** Hard cap on tracked keys; beyond it the oldest key is evicted. Default 50 000. */
  maxKeys?: number;
  /**
   * The other processes' counts of the same windows (ADR 0028): added to the
   * local count in every decision, and told every local count. Absent: this
   * process counts alone.
   */
  shared?: SharedWindows;
}

/**
 * Creates a fixed-window counter. Memory is bounded: all windows are aligned,
 * so when a new window starts every older entry is stale and is dropped at
 * once; within a window, a hard cap evicts the oldest key (insertion order).
 * If the clock steps backwards the current window is kept (counts never reset early).
 * With `shared`, a request is refused once the local count plus the other
 * processes' last-known count reaches the limit.
 */
export function createWindowCounter(options: WindowCounterOptions): WindowCounter {
  const windowMs = options.windowMs ?? DEFAULT_WINDOW_MS;
  const maxKeys = options.maxKeys ?? DEFAULT_MAX_KEYS;
  if (!(windowMs > 0)) throw new RangeError('windowMs must be positive');
  if (!(maxKeys >= 1)) throw new RangeError('maxKeys must be at least 1');
  const counts = new Map<string, number>();
  const shared = options.shared;
  let window = Number.NEGATIVE_INFINITY;

  function advance(now: number): void {
    const current = Math.floor(now / windowMs);
    if (current > window) {
      window = current;
      counts.clear(); // sweep: every entry belongs to a past window
    }
  }

  return {
    hit(key: string, limit: number): RateDecision {
      const now = options.clock.now();
      advance(now);
      const resetSeconds = Math.max(1, Math.ceil(((window + 1) * windowMs - now) / 1000));
      const windowStart = window * windowMs;
      const used = counts.get(key) ?? 0;
      const elsewhere = shared ? shared.others(key, windowStart) : 0;
      if (used + elsewhere >= limit) {
        return { allowed: false, limit, remaining: 0, resetSeconds };
      }
      if (used === 0) {
        while (counts.size >= maxKeys) {
          const oldest = counts.keys().next();
          if (oldest.done === true) break;
          counts.delete(oldest.value);
        }
      }
      counts.set(key, used + 1);
      shared?.report(key, windowStart, used + 1);
      return { allowed: true, limit, remaining: Math.max(0, limit - used - elsewhere - 1), resetSeconds };
    },
    size(): number {
      advance(options.clock.now());
      return counts.size;
    },
  };
}

/** Per-token, per-group rate limiter. */
export interface RateLimiter {
  /** Counts one request of `group` for `key` (a token fingerprint or principal) and decides. */
  hit(key: string, group: RateGroup): RateDecision;
  /** Number of (key, group) counters held for the current window. */
  size(): number;
}

/** Options of `createRateLimiter`. */
export interface RateLimiterOptions {
  /** Requests per window per key, per group (`security.rate_limits`). */
  limits: Record<RateGroup, number>;
  clock: Clock;
  /** Window length in ms; default 60 000. */
  windowMs?: number;
  /** Hard cap on tracked counters; default 50 000. */
  maxKeys?: number;
  /** The other gateway processes' counts (ADR 0028); absent on a gateway that counts alone. */
  shared?: SharedWindows;
  /** A key's own limits (a principal's `rate_limits`, DECISIONS §18); undefined: `limits`. */
  limitsFor?: (key: string) => Record<RateGroup, number> | undefined;
}

/**
 * Creates the rate limiter: fixed windows aligned to `floor(now / windowMs)`,
 * groups and keys counted independently. A refused request is not counted.
 */
export function createRateLimiter(options: RateLimiterOptions): RateLimiter {
  const counter = createWindowCounter({
    clock: options.clock,
    ...(options.windowMs !== undefined ? { windowMs: options.windowMs } : {}),
    ...(options.maxKeys !== undefined ? { maxKeys: options.maxKeys } : {}),
    ...(options.shared !== undefined ? { shared: options.shared } : {}),
  });
  return {
    hit(key: string, group: RateGroup): RateDecision {
      // A group name holds no `:`, so `group:key` never collides across groups (it is also the shared row's key).
      const limit = options.limitsFor?.(key)?.[group] ?? options.limits[group];
      return counter.hit(`${group}:${key}`, limit);
    },
    size(): number {
      return counter.size();
    },
  };
}
