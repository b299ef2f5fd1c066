import type { AgentOutcome, PendingState } from '../runtime/index.js';
import { realTimers, type Timers } from './timers.js';
import type { TurnWrites } from './turn-writes.js';
import type { TurnTrace } from './turn-trace.js';

/**
 * A unit of work on a session: run an accepted turn (`seq`, its arrival order
 * in the ledger, keeps the lane in order), resume one the approve/deny route
 * moved to running, or store the outcome of a turn whose ending the store
 * refused (ADR 0014).
 */
export type TurnJob =
  | {
      kind: 'turn';
      eventId: string;
      seq?: number;
      /** Its acceptance created the session (a key never seen): the claim has no paused turn to look for. */
      newSession?: boolean;
      /** Accepted without an idempotency key: no record to settle (a hint; absent, the record is looked for). */
      unkeyed?: boolean;
    }
  | { kind: 'resume'; eventId: string; resolution: 'approve' | 'deny'; pending: PendingState }
  | {
      kind: 'finish';
      eventId: string;
      eventIds: string[];
      outcome: AgentOutcome;
      startedMs: number;
      /** The reply and usage to store with the outcome (none when absent). */
      writes?: TurnWrites;
      /** The run's trace, ended with the outcome (tracing on). */
      trace?: TurnTrace;
    };

/**
 * What running a job did: finished (or skipped); found the session blocked by
 * a turn awaiting approval; or could not go on because the store failed, and
 * `retry` must run first in its lane after a backoff (the same job, or the one
 * that takes over from it).
 */
export type JobResult = 'done' | 'blocked' | { retry: TurnJob };

/** Backoff of a lane whose head job asks to be retried: `baseMs` doubled per failure, at most `maxMs`. */
export interface RetryBackoff {
  baseMs: number;
  maxMs: number;
}

/** Default backoff: 100 ms, 200 ms, … at most 2 s, so a lane resumes within 2 s of the store coming back. */
export const DEFAULT_RETRY_BACKOFF: RetryBackoff = { baseMs: 100, maxMs: 2_000 };

interface SessionLane {
  jobs: TurnJob[];
  running: boolean;
  blocked: boolean;
  /** Listed in `ready` (kept as a flag so readiness checks stay O(1)). */
  listed: boolean;
  /** Consecutive retries of the head job. */
  failures: number;
  /** Cancels the backoff timer while the lane waits to retry its head job. */
  parked: (() => void) | null;
  /** At least the highest `seq` of the lane's turn jobs (-1: none yet); a turn above it goes to the end at once. */
  maxSeq: number;
  /** When it was last listed in `ready` (ms of `now`): how long its head job has waited for a slot. */
  readySince: number;
}

/**
 * How loaded the queue is, for admission (`limits.overload`): the sessions
 * whose next job waits for a free slot (not for an earlier turn of their
 * own), how long the first of them has waited, and the mean run time of a job.
 */
export interface QueueLoad {
  /** Sessions whose head job waits for one of the `maxConcurrent` slots. */
  ready: number;
  /** ms the session longest in line has waited for a slot (0 when none waits). */
  oldestWaitMs: number;
  /** Mean run time of the recent jobs in ms (an exponential average; 0 before the first). */
  meanRunMs: number;
  maxConcurrent: number;
  /** Jobs waiting, as `size`; and the `maxQueued` bound. */
  queued: number;
  maxQueued: number;
}

/** Weight of the newest job in the mean run time. */
const RUN_TIME_WEIGHT = 0.2;

/** The ledger events a job stands for (a clarification answer's finish also ends the turn it resumed). */
function idsOf(job: TurnJob): readonly string[] {
  return job.kind === 'finish' ? job.eventIds : [job.eventId];
}

/**
 * Per-session FIFO lanes with a global concurrency limit: turns of one
 * session run one at a time in arrival order; sessions run in parallel up to
 * `maxConcurrent` (DECISIONS §5). Bounded: at most `maxQueued` jobs wait.
 * The queue only caches what the ledger already holds durably — a job lost
 * with the process is found again at start-up as an `accepted` turn.
 *
 * A job that fails on the store keeps its place: it goes back to the head of
 * its lane, which waits out a bounded backoff while its slot serves other
 * sessions; later turns of that session wait behind it (ADR 0014).
 */
export class TurnQueue {
  private readonly lanes = new Map<string, SessionLane>();
  /** Sessions with work and no running job, in the order they became ready. */
  private readonly ready: string[] = [];
  /** Event id → jobs in a lane (waiting, parked or running) that stand for it. */
  private readonly held = new Map<string, number>();
  private active = 0;
  private queued = 0;
  private closed = false;
  private idleWaiters: Array<() => void> = [];
  private readonly timers: Timers;
  private readonly backoff: RetryBackoff;
  private readonly now: () => number;
  private meanRunMs = 0;

  constructor(
    private readonly options: {
      maxConcurrent: number;
      maxQueued: number;
      run: (sessionKey: string, job: TurnJob) => Promise<JobResult>;
      onError: (err: unknown) => void;
      /** Told when a job is put back to be retried (with the failures so far and the backoff chosen). */
      onRetry?: (sessionKey: string, job: TurnJob, failures: number, delayMs: number) => void;
      timers?: Timers;
      backoff?: RetryBackoff;
      /** Milliseconds of the time waits and run times are measured in (the message path's clock). */
      now?: () => number;
    },
  ) {
    this.timers = options.timers ?? realTimers;
    this.backoff = options.backoff ?? DEFAULT_RETRY_BACKOFF;
    this.now = options.now ?? Date.now;
  }

  /** The load admission judges a new turn by (see `QueueLoad`); O(1). */
  load(): QueueLoad {
    const first = this.ready.length > 0 ? this.lanes.get(this.ready[0]!) : undefined;
    return {
      ready: this.ready.length,
      oldestWaitMs: first?.listed ? Math.max(0, this.now() - first.readySince) : 0,
      meanRunMs: this.meanRunMs,
      maxConcurrent: this.options.maxConcurrent,
      queued: this.queued,
      maxQueued: this.options.maxQueued,
    };
  }

  /** Jobs waiting (not running), including those waiting out a backoff. */
  get size(): number {
    return this.queued;
  }

  /** Jobs running now. */
  get running(): number {
    return this.active;
  }

  /** True when another job may be queued. */
  hasRoom(): boolean {
    return !this.closed && this.queued < this.options.maxQueued;
  }

  /** True when a job for this ledger event waits, backs off or runs in a lane. */
  holds(eventId: string): boolean {
    return this.held.has(eventId);
  }

  /**
   * Queues a job in its session's lane; false when full or closed. A `turn`
   * job with a `seq` goes before the waiting turn jobs that arrived after it
   * (a turn found again by recovery keeps its place); otherwise at the end.
   * `force` admits a job whose event is already durable even past the bound
   * (the overshoot is bounded by intakes in flight, which checked `hasRoom`).
   */
  enqueue(sessionKey: string, job: TurnJob, options: { force?: boolean } = {}): boolean {
    if (this.closed || (!options.force && !this.hasRoom())) return false;
    const lane = this.lane(sessionKey);
    let at = lane.jobs.length;
    if (job.kind === 'turn' && job.seq !== undefined) {
      const seq = job.seq;
      // Arrivals come in `seq` order but for turns found again: only those search their lane (a backlog can be long).
      if (seq <= lane.maxSeq) {
        const later = lane.jobs.findIndex((j) => j.kind === 'turn' && j.seq !== undefined && j.seq > seq);
        if (later !== -1) at = later;
      }
      lane.maxSeq = Math.max(lane.maxSeq, seq);
    }
    lane.jobs.splice(at, 0, job);
    this.add(job);
    this.markReady(sessionKey, lane);
    this.pump();
    return true;
  }

  /** Unblocks a session with a resume job placed first in its lane. */
  resume(sessionKey: string, job: TurnJob): boolean {
    if (this.closed) return false;
    const lane = this.lane(sessionKey);
    lane.jobs.unshift(job);
    this.add(job);
    lane.blocked = false;
    this.markReady(sessionKey, lane);
    this.pump();
    return true;
  }

  /** True when the session's lane waits to be let try its head job again (`recheck`). */
  isBlocked(sessionKey: string): boolean {
    return this.lanes.get(sessionKey)?.blocked === true;
  }

  /**
   * Lets a blocked session try its head job again (its runner checks once
   * more whether a turn still awaits approval): for when the turn it waited
   * for ended some other way. False when the session has no blocked lane.
   */
  recheck(sessionKey: string): boolean {
    const lane = this.lanes.get(sessionKey);
    if (this.closed || !lane?.blocked) return false;
    lane.blocked = false;
    this.markReady(sessionKey, lane);
    this.pump();
    return true;
  }

  /**
   * Ends every backoff now (the store is known to be back): each waiting lane
   * retries its head job at once. Answers how many lanes were woken.
   */
  wake(): number {
    if (this.closed) return 0;
    let woken = 0;
    for (const [sessionKey, lane] of this.lanes) {
      if (!lane.parked) continue;
      lane.parked();
      lane.parked = null;
      this.markReady(sessionKey, lane);
      woken++;
    }
    this.pump();
    return woken;
  }

  /** Stops starting new jobs (shutdown). Queued jobs stay in the ledger as accepted. */
  close(): void {
    this.closed = true;
    for (const key of this.ready) {
      const lane = this.lanes.get(key);
      if (lane) lane.listed = false;
    }
    this.ready.length = 0;
    for (const lane of this.lanes.values()) {
      lane.parked?.();
      lane.parked = null;
    }
  }

  /** Resolves when no job is running (or after `timeoutMs`); true when idle. */
  async idle(timeoutMs: number): Promise<boolean> {
    if (this.active === 0) return true;
    let timer: NodeJS.Timeout | undefined;
    const result = await Promise.race([
      new Promise<boolean>((resolve) => this.idleWaiters.push(() => resolve(true))),
      new Promise<boolean>((resolve) => {
        timer = setTimeout(() => resolve(false), timeoutMs);
      }),
    ]);
    clearTimeout(timer);
    return result;
  }

  private add(job: TurnJob): void {
    this.queued++;
    for (const id of idsOf(job)) this.held.set(id, (this.held.get(id) ?? 0) + 1);
  }

  private drop(job: TurnJob): void {
    for (const id of idsOf(job)) {
      const n = (this.held.get(id) ?? 1) - 1;
      if (n > 0) this.held.set(id, n);
      else this.held.delete(id);
    }
  }

  private lane(sessionKey: string): SessionLane {
    let lane = this.lanes.get(sessionKey);
    if (!lane) {
      lane = {
        jobs: [],
        running: false,
        blocked: false,
        listed: false,
        failures: 0,
        parked: null,
        maxSeq: -1,
        readySince: 0,
      };
      this.lanes.set(sessionKey, lane);
    }
    return lane;
  }

  private markReady(sessionKey: string, lane: SessionLane): void {
    if (!lane.running && !lane.blocked && !lane.parked && lane.jobs.length > 0 && !lane.listed) {
      lane.listed = true;
      lane.readySince = this.now();
      this.ready.push(sessionKey);
    }
  }

  private pump(): void {
    while (!this.closed && this.active < this.options.maxConcurrent && this.ready.length > 0) {
      const sessionKey = this.ready.shift()!;
      const lane = this.lanes.get(sessionKey);
      if (!lane) continue;
      lane.listed = false;
      if (lane.running || lane.blocked || lane.parked || lane.jobs.length === 0) continue;
      const job = lane.jobs.shift()!;
      this.queued--;
      lane.running = true;
      this.active++;
      void this.execute(sessionKey, lane, job);
    }
  }

  private async execute(sessionKey: string, lane: SessionLane, job: TurnJob): Promise<void> {
    let result: JobResult = 'done';
    const startedMs = this.now();
    try {
      result = await this.options.run(sessionKey, job);
    } catch (err) {
      this.options.onError(err);
    }
    if (result === 'done') {
      const ranMs = Math.max(0, this.now() - startedMs);
      this.meanRunMs = this.meanRunMs === 0 ? ranMs : this.meanRunMs + RUN_TIME_WEIGHT * (ranMs - this.meanRunMs);
    }
    // Whatever happened, the slot and the lane are released here (ADR 0014).
    lane.running = false;
    this.active--;
    if (result === 'blocked') {
      // Put it back in line; it runs once the paused turn is resolved. If that was resolved while this
      // job ran (a resume job is already waiting first), the lane is not blocked: the resume runs first.
      let at = 0;
      while (at < lane.jobs.length && lane.jobs[at]!.kind === 'resume') at++;
      lane.jobs.splice(at, 0, job);
      this.queued++;
      lane.blocked = at === 0;
      lane.failures = 0;
    } else if (result === 'done') {
      this.drop(job);
      lane.failures = 0;
    } else {
      // The store failed: the job (or the one taking over from it) keeps the head of its lane.
      const next = result.retry;
      lane.jobs.unshift(next);
      this.add(next);
      this.drop(job);
      lane.failures++;
      if (!this.closed) {
        const delayMs = Math.min(this.backoff.maxMs, this.backoff.baseMs * 2 ** Math.min(lane.failures - 1, 30));
        this.options.onRetry?.(sessionKey, next, lane.failures, delayMs);
        lane.parked = this.timers.after(delayMs, () => {
          lane.parked = null;
          this.markReady(sessionKey, lane);
          this.pump();
        });
      }
    }
    if (lane.jobs.length === 0 && !lane.blocked) this.lanes.delete(sessionKey);
    else this.markReady(sessionKey, lane);
    if (this.active === 0) {
      const waiters = this.idleWaiters;
      this.idleWaiters = [];
      for (const wake of waiters) wake();
    }
    this.pump();
  }
}
