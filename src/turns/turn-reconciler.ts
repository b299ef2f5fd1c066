import type { Logger } from '../lib/logger.js';
import type { Store } from '../store/index.js';
import type { Timers } from './timers.js';
import { listTurnsByStatus, type TurnOwnerFilter, type TurnRecord } from './turns.repo.js';

/** Pause between two passes. */
export const RECONCILE_INTERVAL_MS = 1_000;
/** Most turns of each status one pass reads. */
export const RECONCILE_BATCH = 200;
/** Most orphan candidates remembered between passes. */
const SUSPECTS_KEPT = 10_000;

export interface TurnReconcilerOptions {
  store: Store;
  /** Whose turns to look at (this process's; on a database of its own, every owner's). */
  owners: TurnOwnerFilter;
  timers: Timers;
  logger: Logger;
  /** True when a lane or the runner holds the turn (it is not orphaned). */
  isHeld(eventId: string): boolean;
  /** Queues an accepted turn again, in its arrival order. */
  requeue(turn: TurnRecord): void;
  /**
   * Ends running turns nothing runs as `interrupted` (store_unavailable) with
   * their final event; answers those it ended. May reject (store down).
   */
  interrupt(turns: TurnRecord[]): Promise<string[]>;
  intervalMs?: number;
  batch?: number;
}

/** What one pass did. */
export interface ReconcilePass {
  requeued: number;
  interrupted: number;
}

/**
 * The message path's safety net (ADR 0014): one owned background loop that
 * compares the ledger with what the turn queue and the runner hold, and
 * resolves the difference — `accepted` turns no lane holds are queued again
 * in arrival order; `running` turns nothing runs are ended `interrupted`
 * (store_unavailable). Such leftovers come from a step whose commit outlived
 * its connection (the caller was told 503, yet the row is there) or from a
 * job lost to an unexpected error.
 *
 * A turn is acted on only when a later pass finds it orphaned again, so
 * the moment between a commit and its queueing is never mistaken for a
 * leftover. Each pass reads at most `batch` turns of each status, paging on
 * through the ledger on later passes. A pass that meets an unreachable store
 * gives up until the next one; after an outage the leftovers are resolved
 * within about two intervals of the store coming back.
 */
export class TurnReconciler {
  private readonly intervalMs: number;
  private readonly batch: number;
  private cancel: (() => void) | null = null;
  private current: Promise<unknown> | null = null;
  private closed = false;
  private passes = 0;
  /** Orphan candidates → the pass that first saw them; acted on when a later pass sees them again. */
  private readonly suspects = new Map<string, number>();
  private cursors = { accepted: 0, running: 0 };
  private failing = false;

  constructor(private readonly options: TurnReconcilerOptions) {
    this.intervalMs = options.intervalMs ?? RECONCILE_INTERVAL_MS;
    this.batch = options.batch ?? RECONCILE_BATCH;
  }

  /** Starts the loop: a pass every `intervalMs`, never two at once. */
  start(): void {
    if (this.closed || this.cancel) return;
    this.schedule();
  }

  /** Stops the loop and waits for a pass in flight. Idempotent. */
  async close(): Promise<void> {
    this.closed = true;
    this.cancel?.();
    this.cancel = null;
    await this.current?.catch(() => undefined);
  }

  /** One bounded pass (the loop's step; tests call it directly). Rejects when the store fails. */
  async pass(): Promise<ReconcilePass> {
    const pass = ++this.passes;
    const { store, owners } = this.options;
    const accepted = await this.page('accepted', owners);
    const running = await this.page('running', owners);
    const act = (turns: TurnRecord[]): TurnRecord[] => {
      const due: TurnRecord[] = [];
      for (const turn of turns) {
        if (this.options.isHeld(turn.eventId)) {
          this.suspects.delete(turn.eventId);
          continue;
        }
        const first = this.suspects.get(turn.eventId);
        if (first === undefined) this.suspects.set(turn.eventId, pass);
        else if (first < pass) due.push(turn);
      }
      return due;
    };
    const requeue = act(accepted);
    const interrupt = act(running);
    this.forgetStale(pass);
    let requeued = 0;
    for (const turn of requeue) {
      if (this.options.isHeld(turn.eventId)) continue; // queued meanwhile
      this.options.requeue(turn);
      this.suspects.delete(turn.eventId);
      requeued++;
    }
    const orphans = interrupt.filter((turn) => !this.options.isHeld(turn.eventId));
    const ended = orphans.length > 0 ? await this.options.interrupt(orphans) : [];
    for (const id of ended) this.suspects.delete(id);
    if (requeued > 0 || ended.length > 0) {
      this.options.logger.warn(
        { source: 'turns', requeued, interrupted: ended.length, driver: store.driver },
        'reconciled turns the message path had lost hold of',
      );
    }
    return { requeued, interrupted: ended.length };
  }

  /**
   * Forgets suspects not confirmed for a long time (they ended, or were taken
   * up, out of this pass's page), keeping the memory bounded.
   */
  private forgetStale(pass: number): void {
    if (this.suspects.size <= SUSPECTS_KEPT && pass % 100 !== 0) return;
    for (const [id, first] of this.suspects) if (first < pass - 100) this.suspects.delete(id);
    if (this.suspects.size > SUSPECTS_KEPT) this.suspects.clear(); // they are found again on later passes
  }

  /** The next page of turns in `status`, starting over from the oldest once the end is reached. */
  private async page(status: 'accepted' | 'running', owners: TurnOwnerFilter): Promise<TurnRecord[]> {
    const turns = await listTurnsByStatus(this.options.store.db, [status], {
      limit: this.batch,
      afterSeq: this.cursors[status],
      ...owners,
    });
    this.cursors[status] = turns.length < this.batch ? 0 : turns[turns.length - 1]!.seq;
    return turns;
  }

  private schedule(): void {
    this.cancel = this.options.timers.after(this.intervalMs, () => {
      this.cancel = null;
      if (this.closed) return;
      const run = this.pass().then(
        () => {
          if (this.failing) this.options.logger.info({ source: 'turns' }, 'turn reconciler reaches the store again');
          this.failing = false;
        },
        (err: unknown) => {
          if (!this.failing) {
            this.options.logger.warn(
              { source: 'turns', err: (err as Error).message },
              'turn reconciler cannot read the store; it keeps trying',
            );
          }
          this.failing = true;
        },
      );
      this.current = run;
      void run.finally(() => {
        if (this.current === run) this.current = null;
        if (!this.closed) this.schedule();
      });
    });
  }
}
