import type { PendingState } from '../runtime/index.js';

/** A unit of work on a session: run an accepted turn, or resume one the approve/deny route moved to running. */
export type TurnJob =
  | { kind: 'turn'; eventId: string }
  | { kind: 'resume'; eventId: string; resolution: 'approve' | 'deny'; pending: PendingState };

/** What running a job did: finished (or skipped), or found the session blocked by a turn awaiting approval. */
export type JobResult = 'done' | 'blocked';

interface SessionLane {
  jobs: TurnJob[];
  running: boolean;
  blocked: boolean;
  /** Listed in `ready` (kept as a flag so readiness checks stay O(1)). */
  listed: boolean;
}

/**
 * Per-session FIFO lanes with a global concurrency limit: turns of one
 * session run one at a time in arrival order; sessions run in parallel up to
 * `maxConcurrent` (DECISIONS §5). Bounded: at most `maxQueued` jobs wait.
 * The queue only caches what the ledger already holds durably — a job lost
 * with the process is found again at start-up as an `accepted` turn.
 */
export class TurnQueue {
  private readonly lanes = new Map<string, SessionLane>();
  /** Sessions with work and no running job, in the order they became ready. */
  private readonly ready: string[] = [];
  private active = 0;
  private queued = 0;
  private closed = false;
  private idleWaiters: Array<() => void> = [];

  constructor(
    private readonly options: {
      maxConcurrent: number;
      maxQueued: number;
      run: (sessionKey: string, job: TurnJob) => Promise<JobResult>;
      onError: (err: unknown) => void;
    },
  ) {}

  /** Jobs waiting (not running). */
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

  /**
   * Queues a job at the end of its session's lane; false when full or closed.
   * `force` admits a job whose event is already durable even past the bound
   * (the overshoot is bounded by intakes in flight, which checked `hasRoom`).
   */
  enqueue(sessionKey: string, job: TurnJob, options: { force?: boolean } = {}): boolean {
    if (this.closed || (!options.force && !this.hasRoom())) return false;
    const lane = this.lane(sessionKey);
    lane.jobs.push(job);
    this.queued++;
    this.markReady(sessionKey, lane);
    this.pump();
    return true;
  }

  /** Unblocks a session with a resume job placed first in its lane. */
  resume(sessionKey: string, job: TurnJob): boolean {
    if (this.closed) return false;
    const lane = this.lane(sessionKey);
    lane.jobs.unshift(job);
    this.queued++;
    lane.blocked = false;
    this.markReady(sessionKey, lane);
    this.pump();
    return true;
  }

  /** Stops starting new jobs (shutdown). Queued jobs stay in the ledger as accepted. */
  close(): void {
    this.closed = true;
    for (const key of this.ready) {
      const lane = this.lanes.get(key);
      if (lane) lane.listed = false;
    }
    this.ready.length = 0;
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

  private lane(sessionKey: string): SessionLane {
    let lane = this.lanes.get(sessionKey);
    if (!lane) {
      lane = { jobs: [], running: false, blocked: false, listed: false };
      this.lanes.set(sessionKey, lane);
    }
    return lane;
  }

  private markReady(sessionKey: string, lane: SessionLane): void {
    if (!lane.running && !lane.blocked && lane.jobs.length > 0 && !lane.listed) {
      lane.listed = true;
      this.ready.push(sessionKey);
    }
  }

  private pump(): void {
    while (!this.closed && this.active < this.options.maxConcurrent && this.ready.length > 0) {
      const sessionKey = this.ready.shift()!;
      const lane = this.lanes.get(sessionKey);
      if (!lane) continue;
      lane.listed = false;
      if (lane.running || lane.blocked || lane.jobs.length === 0) continue;
      const job = lane.jobs.shift()!;
      this.queued--;
      lane.running = true;
      this.active++;
      void this.execute(sessionKey, lane, job);
    }
  }

  private async execute(sessionKey: string, lane: SessionLane, job: TurnJob): Promise<void> {
    let result: JobResult = 'done';
    try {
      result = await this.options.run(sessionKey, job);
    } catch (err) {
      this.options.onError(err);
    }
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
