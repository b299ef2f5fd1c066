/**
 * The webhook's pending queue (spec: Webhook channel rule 6): webhook turns
 * accepted and not yet at an outcome, counted in memory and bounded by
 * `max_pending`. A submission reserves a slot before it reaches intake (so
 * concurrent requests cannot overshoot the limit), then either tracks the new
 * turn or releases the slot (a replay, or a failure); a retry of a turn that
 * is still pending may take a slot past the limit, as intake replays it and
 * it is given straight back. A tracked turn leaves the count the moment
 * its outcome is published (`settle`, driven by the turn's event), or when
 * its watch settles: the ledger shows an outcome (the safety net for an
 * event this process did not see), the watch timed out (bounded), failed,
 * or was aborted by `abortAll()`.
 *
 * Where gateway processes share a database, the bound is cluster-wide (ADR
 * 0028): `share()` hands in the other processes' last reported slots in use,
 * which count against `max_pending` with this process's own.
 */

import { ApiError } from '../../http/errors.js';
import type { SharedGauge } from '../../security/cluster-counts.js';
import type { Admission } from '../../turns/index.js';

/** Seconds a client is told to wait (`Retry-After`) when the pending queue is full. */
export const QUEUE_FULL_RETRY_AFTER_SECONDS = 5;

/** Waits until a turn has an outcome (or gives up); settles either way. */
export type TurnWatch = (eventId: string, signal: AbortSignal) => Promise<unknown>;

/** A slot held by one submission in flight. Exactly one of its methods takes effect. */
export interface PendingReservation {
  /** The submission stored a new turn: count it until its watch settles. */
  track(eventId: string): void;
  /** The submission created nothing (a replay, or it failed): give the slot back. */
  release(): void;
}

/** Options of {@link PendingTurns}. */
export interface PendingTurnsOptions {
  /** `max_pending`: slots in use (tracked + reserved) at which `reserve()` refuses. */
  limit: number;
  watch: TurnWatch;
  /** Told when a watch rejects (the slot is freed anyway). */
  onWatchError: (err: unknown, eventId: string) => void;
}

/** In-memory count of pending webhook turns; see the module comment. */
export class PendingTurns {
  private readonly tracked = new Map<string, AbortController>();
  private reserved = 0;
  private shared: SharedGauge | null = null;

  constructor(private readonly options: PendingTurnsOptions) {}

  /** Counts the other processes' slots in use (their last report) against the limit; null: this process alone. */
  share(gauge: SharedGauge | null): void {
    this.shared = gauge;
  }

  /** Slots the other processes sharing the database reported in use; 0 when not shared. */
  get elsewhere(): number {
    return this.shared?.others() ?? 0;
  }

  /** Turns accepted and not yet at an outcome. */
  get size(): number {
    return this.tracked.size;
  }

  /** Slots in use: tracked turns plus submissions in flight. */
  get inUse(): number {
    return this.tracked.size + this.reserved;
  }

  /** True while `eventId` is tracked (accepted, no outcome yet). */
  has(eventId: string): boolean {
    return this.tracked.has(eventId);
  }

  /**
   * Takes a slot for a submission, or null when the queue is full (here and
   * elsewhere, when shared) (429
   * upstream). `force` takes one regardless: for a retry of a turn that is
   * already pending, which intake answers as a replay (and so gives back).
   */
  reserve(options: { force?: boolean } = {}): PendingReservation | null {
    if (!options.force && this.inUse + this.elsewhere >= this.options.limit) return null;
    this.reserved++;
    let settled = false;
    const settle = (): boolean => {
      if (settled) return false;
      settled = true;
      this.reserved--;
      return true;
    };
    return {
      track: (eventId) => {
        if (settle()) this.track(eventId);
      },
      release: () => {
        settle();
      },
    };
  }

  /**
   * This bound as the message path's admission (spec: Webhook channel rule
   * 6): a slot per submission, else 429 with `Retry-After`. A retry of a
   * turn still pending is answered (replayed), not refused: it adds nothing.
   */
  admission(): Admission {
    return {
      admit: (eventId) => {
        const slot = this.reserve() ?? (eventId !== null && this.has(eventId) ? this.reserve({ force: true }) : null);
        if (!slot) {
          throw new ApiError(
            'RATE_LIMITED',
            'webhook queue is full; retry later',
            { max_pending: this.options.limit, retry_after_seconds: QUEUE_FULL_RETRY_AFTER_SECONDS },
            { 'retry-after': String(QUEUE_FULL_RETRY_AFTER_SECONDS) },
          );
        }
        return { hold: (id) => slot.track(id), release: () => slot.release() };
      },
    };
  }

  /** The turn reached an outcome (its event was published): its slot is free at once. */
  settle(eventId: string): void {
    const controller = this.tracked.get(eventId);
    if (!controller) return;
    this.tracked.delete(eventId);
    controller.abort();
  }

  /** Aborts every watch and forgets every tracked turn (the channel stopped; the turns go on). */
  abortAll(): void {
    const controllers = [...this.tracked.values()];
    this.tracked.clear();
    for (const controller of controllers) controller.abort();
  }

  private track(eventId: string): void {
    if (this.tracked.has(eventId)) return; // already counted (cannot happen for a new event; stay bounded anyway)
    const controller = new AbortController();
    this.tracked.set(eventId, controller);
    const forget = (): void => {
      if (this.tracked.get(eventId) === controller) this.tracked.delete(eventId);
    };
    let watching: Promise<unknown>;
    try {
      watching = this.options.watch(eventId, controller.signal);
    } catch (err) {
      this.options.onWatchError(err, eventId);
      forget();
      return;
    }
    void watching.then(forget, (err: unknown) => {
      this.options.onWatchError(err, eventId);
      forget();
    });
  }
}
