import { principalKeyPart } from '../sessions/index.js';
import type { Clock } from '../lib/clock.js';
import { isoTime } from '../lib/clock.js';
import type { Logger } from '../lib/logger.js';
import { type Store, liveOwners } from '../store/index.js';
import {
  endedTurn,
  isPausedStatus,
  isRunningStatus,
  isTerminalStatus,
  type MessagePath,
  type TurnRecord,
} from '../turns/index.js';
import type { Principal } from '../http/route.js';
import { DEFAULT_TASK_PRINCIPAL, type TaskRecord } from './tasks.repo.js';
import { TASK_CANCELLED_REASON, type TaskRunOutcome, type TaskService } from './tasks.service.js';

/**
 * How often the runner looks for work on its own (recovery of what dead
 * processes left), and how often a cancelled task whose turn has not started
 * yet looks again to interrupt it.
 */
export const DEFAULT_TASK_POLL_MS = 2_000;
/** An instance whose heartbeat is older than this is dead (as the message path judges it). */
const STALE_INSTANCE_MS = 20_000;
/** Tasks finished per recovery pass. */
const RECOVERY_BATCH = 100;

/** Interval timers, injectable so tests can drive the poll by hand. */
export interface TaskTimers {
  /** Calls `fn` every `ms` until the returned function is called. */
  every(ms: number, fn: () => void): () => void;
}

/** Node's timers, unref'd so an idle runner never keeps the process alive. */
export const nodeTimers: TaskTimers = {
  every(ms, fn) {
    const handle = setInterval(fn, ms);
    handle.unref();
    return () => clearInterval(handle);
  },
};

/** What the runner uses: the message path's door, waiters and interrupt, never the runtime itself. */
export interface TaskRunnerOptions {
  service: TaskService;
  store: Store;
  clock: Clock;
  logger: Logger;
  /** The message path's door: submit a task's turn, wait for it, interrupt it, read its ledger record. */
  messages: Pick<MessagePath, 'submit' | 'waitFor' | 'interrupt' | 'runningTurns' | 'turn'>;
  /** This process's gateway instance id (the message path's `owner`). */
  owner: string;
  /** `tasks.max_concurrent`: claimed tasks running at once across every process (live: `setMaxConcurrent`). */
  maxConcurrent: number;
  /** Poll interval; default 2 s. */
  pollMs?: number;
  timers?: TaskTimers;
}

/**
 * Runs the agent's tasks (DECISIONS §9): pending tasks with no assignee or
 * assignee `agent`, highest priority first, then oldest, at most
 * `maxConcurrent` at once across every process sharing the database (the
 * claim is one conditional UPDATE). Each runs as a turn in session
 * `gateway:task:<id>` submitted through intake under the task's principal
 * (`taskPrincipal`); the turn's outcome finishes
 * the task (completed with the response, or failed with the error). A
 * cancelled task's turn is interrupted and the task stays cancelled.
 *
 * A run waits on the message path's door for its turn to end, with no
 * polling; `notify()` (a task was created or changed, here or in another
 * process over the bus) claims work and wakes every run to look at its task
 * again (cancelled: interrupt the turn; finished by a person: let go). The
 * poll every `pollMs` is for recovery: claimed tasks
 * whose turn ended while nobody waited (a dead process, a restart) are
 * finished from the ledger, and claims whose claimer died before submitting
 * fail with `process_restart`. One loop, owned here; `close()` stops it.
 */
export class TaskRunner {
  private readonly inFlight = new Map<string, Promise<void>>();
  private readonly pollMs: number;
  private maxConcurrent: number;
  private readonly log: Logger;
  private stopTimer: (() => void) | null = null;
  private started = false;
  private closed = false;
  private pumping: Promise<void> | null = null;
  private again = false;
  /** The recovery sweep in progress; ticks never overlap sweeps. */
  private sweeping: Promise<void> | null = null;
  /** One per run waiting for its turn: aborted by `notify()` and `close()` so the run looks at its task again. */
  private readonly wakes = new Set<AbortController>();

  constructor(private readonly options: TaskRunnerOptions) {
    this.pollMs = options.pollMs ?? DEFAULT_TASK_POLL_MS;
    this.maxConcurrent = positive(options.maxConcurrent);
    this.log = options.logger.child({ source: 'tasks' });
  }

  /** Tasks this process is running (ids). */
  running(): string[] {
    return [...this.inFlight.keys()];
  }

  /**
   * Recovers tasks left by a dead process (after the message path's own
   * recovery, so their turns are settled), starts the poll and claims work.
   */
  async start(): Promise<void> {
    if (this.started || this.closed) return;
    this.started = true;
    await this.recover();
    this.stopTimer = (this.options.timers ?? nodeTimers).every(this.pollMs, () => this.tick());
    this.notify();
  }

  /**
   * Applies a new `tasks.max_concurrent` (live config). A higher bound
   * claims more at once; a lower one lets running tasks finish and claims
   * again only below it. Throws for a bound below 1.
   */
  setMaxConcurrent(maxConcurrent: number): void {
    this.maxConcurrent = positive(maxConcurrent);
    this.notify();
  }

  /** Looks for claimable work now (a task was created or changed). Never throws; coalesces bursts. */
  notify(): void {
    for (const wake of this.wakes) wake.abort();
    if (!this.started || this.closed) return;
    if (this.pumping) {
      this.again = true;
      return;
    }
    this.pumping = this.pump()
      .catch((err: unknown) => this.log.warn({ err: errorText(err) }, 'task claim failed'))
      .finally(() => {
        this.pumping = null;
        if (this.again) {
          this.again = false;
          this.notify();
        }
      });
  }

  /**
   * Stops claiming tasks and resolves once every run of this process has
   * settled. Runs whose turn is running in this process go on until the
   * turn ends (the message path's shutdown bounds that); the others (turn
   * not started, or waiting for a person) are let go at once and their
   * tasks stay `running` until recovery finishes them from the ledger.
   * Idempotent.
   */
  async close(): Promise<void> {
    if (!this.closed) {
      this.closed = true;
      this.stopTimer?.();
      this.stopTimer = null;
      for (const wake of this.wakes) wake.abort();
    }
    await this.pumping;
    await this.sweeping;
    while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight.values()]);
  }

  private tick(): void {
    if (this.sweeping) return;
    this.sweeping = this.recover()
      .catch((err: unknown) => this.log.warn({ err: errorText(err) }, 'task recovery sweep failed'))
      .finally(() => {
        this.sweeping = null;
        this.notify();
      });
  }

  /** Claims while this process and the database-wide bound have room. */
  private async pump(): Promise<void> {
    const { service, owner } = this.options;
    while (!this.closed && this.inFlight.size < this.maxConcurrent) {
      const task = await service.claimNext(owner, this.maxConcurrent);
      if (!task) return;
      this.launch(task);
    }
  }

  private launch(task: TaskRecord): void {
    const run = this.run(task)
      .catch((err: unknown) => this.log.error({ task_id: task.id, err: errorText(err) }, 'task run failed'))
      .finally(() => {
        this.inFlight.delete(task.id);
        this.notify();
      });
    this.inFlight.set(task.id, run);
  }

  /** Submits the task's turn, waits for its outcome and finishes the task with it. */
  private async run(task: TaskRecord): Promise<void> {
    const { service, messages } = this.options;
    const sessionKey = task.sessionKey ?? `gateway:task:${task.id}`;
    let eventId: string;
    try {
      const submitted = await messages.submit({
        sessionKey,
        text: taskPrompt(task),
        platform: 'task',
        userId: 'agent',
        chatId: task.id,
        channel: 'task',
        source: 'task',
        principal: taskPrincipal(task),
        identity: 'skip', // work the gateway creates itself
        wait: false,
      });
      eventId = submitted.eventId;
    } catch (err) {
      await service.finishRun(task.id, { status: 'failed', error: `could not start the turn: ${errorText(err)}` });
      return;
    }
    await service.recordEvent(task.id, eventId);
    const turn = await this.awaitTurn(task.id, eventId);
    if (turn) await service.finishRun(task.id, outcomeOf(turn));
  }

  /**
   * Waits on the door for the turn to end. Woken by `notify()`, it looks at
   * the task: a cancelled task's turn is interrupted once it runs (until
   * then it looks again every `pollMs`); a task a person finished is let
   * go. Returns the ended turn, or null when the run is abandoned (task
   * finished elsewhere, a cancelled task's turn paused for a person, or
   * closing while the turn does not run in this process).
   */
  private async awaitTurn(taskId: string, eventId: string): Promise<TurnRecord | null> {
    const { service, messages } = this.options;
    let recheckMs = Number.MAX_SAFE_INTEGER;
    for (;;) {
      // Closing: only a turn running in this process still ends soon (the message path's shutdown bounds it).
      if (this.closed && !messages.runningTurns().includes(eventId)) return null;
      const wake = new AbortController();
      this.wakes.add(wake);
      let turn: TurnRecord | null;
      try {
        turn = await messages.waitFor(eventId, recheckMs, wake.signal, 'terminal');
      } finally {
        this.wakes.delete(wake);
      }
      if (turn && isTerminalStatus(turn.status)) return turn;
      const task = await service.get(taskId);
      if (!task) return null;
      turn = await messages.turn(eventId);
      if (!turn) return null;
      if (isTerminalStatus(turn.status)) return turn;
      if (task.status === 'cancelled') {
        // Interrupting works once the turn runs; a paused turn has nothing to interrupt.
        if (isPausedStatus(turn.status)) return null;
        const running = isRunningStatus(turn.status);
        if (running) messages.interrupt(eventId, TASK_CANCELLED_REASON);
        recheckMs = running ? Number.MAX_SAFE_INTEGER : this.pollMs;
      } else if (task.status !== 'running') {
        return null;
      }
    }
  }

  /**
   * Finishes claimed tasks whose turn ended while no run of this process
   * waited for it, and fails claims of dead processes that never submitted.
   */
  private async recover(): Promise<void> {
    const { service, store, clock, owner } = this.options;
    for (const task of await service.tasksWithFinishedTurns(RECOVERY_BATCH)) {
      if (this.inFlight.has(task.id) || !task.eventId) continue;
      const turn = await this.options.messages.turn(task.eventId);
      if (!turn || !isTerminalStatus(turn.status)) continue;
      const finished = await service.finishRun(task.id, outcomeOf(turn));
      if (finished) this.log.info({ task_id: task.id, status: finished.status }, 'task finished from the ledger');
    }
    const live = await liveOwners(store, owner, isoTime(clock.now() - STALE_INSTANCE_MS));
    for (const task of await service.orphanedClaims(live, RECOVERY_BATCH)) {
      if (this.inFlight.has(task.id)) continue;
      const failed = await service.finishRun(task.id, { status: 'failed', error: 'process_restart' });
      if (failed) this.log.info({ task_id: task.id }, 'task of a dead process failed');
    }
  }
}

/**
 * The principal a task's turn is submitted under (DECISIONS §18): the
 * task's owner, so its session is the owner's and the turn runs under the
 * owner's budget and memory. Null for the default principal's tasks: work
 * the gateway creates itself, whose sessions are `default`'s.
 */
export function taskPrincipal(task: Pick<TaskRecord, 'principal'>): Principal | null {
  // Built-in principals (default, admin, channels) share the single owner's sessions, as before principals.
  if (task.principal === DEFAULT_TASK_PRINCIPAL || principalKeyPart({ id: task.principal }) === '') return null;
  return { role: 'api', id: task.principal, fingerprint: null, scope: `principal:${task.principal}` };
}

/** The message the agent gets for a task: its title, then its description. */
export function taskPrompt(task: Pick<TaskRecord, 'title' | 'description'>): string {
  const description = task.description?.trim();
  return description ? `${task.title}\n\n${description}` : task.title;
}

/**
 * A task's outcome from its ended turn: completed → completed with the
 * response; failed → the turn's error message; incomplete and interrupted →
 * failed with the termination reason (`process_restart`, `shutdown`,
 * `budget_exceeded`…). Throws for a turn that has not ended.
 */
export function outcomeOf(turn: TurnRecord): TaskRunOutcome {
  const ended = endedTurn(turn);
  if (!ended) throw new Error(`turn ${turn.eventId} has not ended (${turn.status})`);
  return ended.completed
    ? { status: 'completed', result: ended.response }
    : { status: 'failed', error: ended.failure ?? ended.reason };
}

function positive(maxConcurrent: number): number {
  if (!Number.isInteger(maxConcurrent) || maxConcurrent < 1) {
    throw new Error(`tasks.max_concurrent must be a positive integer, not ${maxConcurrent}`);
  }
  return maxConcurrent;
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
