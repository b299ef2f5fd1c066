import { errors } from '../http/errors.js';
import type { Clock } from '../lib/clock.js';
import { isoTime } from '../lib/clock.js';
import type { IdGenerator } from '../lib/ids.js';
import type { Store } from '../store/index.js';
import type { EventOutbox } from '../turns/index.js';
import { presentTask } from './tasks.presenter.js';
import {
  claimNextTask,
  countTasksCompletedSince,
  DEFAULT_TASK_PRINCIPAL,
  getTask,
  insertTask,
  listTasks,
  orphanedClaims,
  parentOf,
  runningTasksWithFinishedTurns,
  setTaskEvent,
  TASK_CLAIM_LOCK,
  updateTask,
  type ListTasksOptions,
  type TaskChanges,
  type TaskRecord,
} from './tasks.repo.js';
import {
  canTransition,
  DEFAULT_PRIORITY,
  isFinished,
  TASK_TRANSITIONS,
  type TaskSource,
  type TaskStatus,
} from './tasks.schema.js';

/** What happened to a task, for the live feed (DECISIONS §8 topic `tasks`). */
export type TaskChangeEvent = 'created' | 'updated' | 'cancelled' | 'completed' | 'failed';

/** Told after every committed change; it must not throw (a throw is swallowed). */
export type TaskChangeListener = (event: TaskChangeEvent, task: TaskRecord) => void;

/** The termination reason a cancelled task's turn is interrupted with. */
export const TASK_CANCELLED_REASON = 'task_cancelled';

/** How deep parent chains are followed when checking for cycles. */
const MAX_PARENT_DEPTH = 1_000;
/** Attempts of a compare-and-set status change racing other writers. */
const MAX_RACE_RETRIES = 5;

/** What the service uses. */
export interface TaskServiceOptions {
  store: Store;
  clock: Clock;
  ids: IdGenerator;
  /**
   * Ends a running turn of this process as `interrupted` with `reason`
   * (the turn runner's `interrupt`); false when it does not run here. A
   * cancelled task's turn running elsewhere is interrupted by the task
   * runner that waits for it.
   */
  interruptTurn?: (eventId: string, reason: string) => boolean;
  /** Publish hook (live feed, runner wake-up). */
  onChange?: TaskChangeListener;
  /** Event subscriptions (DECISIONS §20): `task.completed` is written in the commit that completes the task. */
  outbox?: EventOutbox | null;
}

/** Fields of a new task; absent ones take their defaults (priority 5, source `api`, no labels). */
export interface CreateTaskInput {
  title: string;
  description?: string | null;
  priority?: number;
  labels?: string[];
  assignee?: string | null;
  source?: TaskSource;
  boardId?: string | null;
  parentTaskId?: string | null;
  metadata?: Record<string, unknown>;
  /** The principal that owns the task (DECISIONS §18); default `default`. It never changes. */
  principal?: string;
}

/** A PATCH: any subset of the create fields but the owner, plus `status` and `progress`. */
export interface UpdateTaskInput extends Partial<Omit<CreateTaskInput, 'principal'>> {
  status?: TaskStatus;
  progress?: number;
}

/** How a task the agent ran ended. */
export type TaskRunOutcome = { status: 'completed'; result: string | null } | { status: 'failed'; error: string };

/**
 * Tasks (spec: Task, Tasks; DECISIONS §3, §9): creation, reads, PATCH along
 * the allowed transitions, cancellation, and the runner's claim/finish
 * writes. Every status change is a compare-and-set on the status read, so
 * concurrent PATCH, DELETE and runner writes cannot overwrite each other.
 * Failures are ApiErrors: 404 unknown task, 400 invalid field or transition.
 */
export class TaskService {
  constructor(private readonly options: TaskServiceOptions) {}

  private now(): string {
    return isoTime(this.options.clock.now());
  }

  private emit(event: TaskChangeEvent, task: TaskRecord): void {
    try {
      this.options.onChange?.(event, task);
    } catch {
      /* a broken listener must not fail the write that already committed */
    }
  }

  /** Creates a pending task. 400 when `parentTaskId` names no task. */
  async create(input: CreateTaskInput): Promise<TaskRecord> {
    const now = this.now();
    const id = this.options.ids.next('tsk');
    const parentTaskId = input.parentTaskId ?? null;
    const created = await this.options.store.writer.run(async (trx) => {
      if (parentTaskId !== null && (await parentOf(trx, parentTaskId)) === undefined) return null;
      return insertTask(trx, {
        id,
        title: input.title,
        description: input.description ?? null,
        priority: input.priority ?? DEFAULT_PRIORITY,
        labels: uniqueLabels(input.labels ?? []),
        assignee: normaliseAssignee(input.assignee),
        source: input.source ?? 'api',
        boardId: input.boardId ?? null,
        parentTaskId,
        metadata: input.metadata ?? {},
        principal: input.principal ?? DEFAULT_TASK_PRINCIPAL,
        now,
      });
    });
    if (!created) throw unknownParent();
    this.emit('created', created);
    return created;
  }

  /** The task `id`, or null. */
  get(id: string): Promise<TaskRecord | null> {
    return getTask(this.options.store.db, id);
  }

  /**
   * The task `id`; 404 when there is none, or when `principal` is given and
   * the task is another principal's (as absent as none, DECISIONS §18).
   */
  async require(id: string, principal?: string): Promise<TaskRecord> {
    const task = await this.get(id);
    if (!task || (principal !== undefined && task.principal !== principal)) throw errors.notFound('task');
    return task;
  }

  /** Tasks matching the filters, newest first. */
  list(options: ListTasksOptions): Promise<TaskRecord[]> {
    return listTasks(this.options.store.db, options);
  }

  /**
   * Applies a PATCH. Only the fields present change. `status` must follow
   * the allowed transitions (pending → running | cancelled, running →
   * completed | failed | cancelled; the same status is no change), else
   * 400. Finishing sets `finished_at` (and `progress` 1 on completion unless
   * given); starting sets `started_at`. `progress` of a finished task cannot
   * change (400). A new parent must exist and must not be the task or one
   * of its descendants (400). Cancelling a running task interrupts its turn.
   */
  async update(id: string, patch: UpdateTaskInput): Promise<TaskRecord> {
    if (patch.parentTaskId != null) await this.assertParent(id, patch.parentTaskId);
    for (let attempt = 0; attempt < MAX_RACE_RETRIES; attempt++) {
      const current = await this.require(id);
      const target = patch.status ?? current.status;
      if (!canTransition(current.status, target)) throw badTransition(current.status, target);
      if (patch.progress !== undefined && isFinished(current.status)) {
        throw errors.badRequest(`task is ${current.status}; its progress cannot change`, { status: current.status });
      }
      const now = this.now();
      const changes: TaskChanges = {
        ...(patch.title !== undefined ? { title: patch.title } : {}),
        ...(patch.description !== undefined ? { description: patch.description } : {}),
        ...(patch.priority !== undefined ? { priority: patch.priority } : {}),
        ...(patch.labels !== undefined ? { labels: uniqueLabels(patch.labels) } : {}),
        ...(patch.assignee !== undefined ? { assignee: normaliseAssignee(patch.assignee) } : {}),
        ...(patch.source !== undefined ? { source: patch.source } : {}),
        ...(patch.boardId !== undefined ? { boardId: patch.boardId } : {}),
        ...(patch.parentTaskId !== undefined ? { parentTaskId: patch.parentTaskId } : {}),
        ...(patch.metadata !== undefined ? { metadata: patch.metadata } : {}),
        ...(patch.progress !== undefined ? { progress: patch.progress } : {}),
      };
      if (target !== current.status) {
        changes.status = target;
        if (target === 'running') changes.startedAt = current.startedAt ?? now;
        if (isFinished(target)) changes.finishedAt = now;
        if (target === 'completed' && patch.progress === undefined) changes.progress = 1;
      }
      const completes = target === 'completed' && current.status !== 'completed';
      const updated = await this.commitUpdate(id, { expectedStatus: current.status, changes, now }, completes);
      if (!updated) continue; // the status moved under us: judge the PATCH against the new one
      if (target === 'cancelled' && current.status === 'running') this.interrupt(updated);
      this.emit(target !== current.status && isFinished(target) ? (target as TaskChangeEvent) : 'updated', updated);
      return updated;
    }
    throw errors.unavailable('task kept changing under concurrent updates; retry');
  }

  /**
   * Cancels a pending or running task (DELETE; DECISIONS §9): status
   * `cancelled`, `finished_at` set; a running task's turn is interrupted.
   * 400 when the task is already finished (DECISIONS §3), 404 when unknown.
   */
  async cancel(id: string): Promise<TaskRecord> {
    for (let attempt = 0; attempt < MAX_RACE_RETRIES; attempt++) {
      const current = await this.require(id);
      if (isFinished(current.status)) throw badTransition(current.status, 'cancelled');
      const now = this.now();
      const updated = await this.options.store.writer.run((trx) =>
        updateTask(trx, id, {
          expectedStatus: current.status,
          changes: { status: 'cancelled', finishedAt: now },
          now,
        }),
      );
      if (!updated) continue;
      if (current.status === 'running') this.interrupt(updated);
      this.emit('cancelled', updated);
      return updated;
    }
    throw errors.unavailable('task kept changing under concurrent updates; retry');
  }

  /**
   * Runner: claims the next task for the agent (see `claimNextTask`), at
   * most `maxRunning` claimed tasks running across every process. The claim
   * runs as an exclusive write under TASK_CLAIM_LOCK, so concurrent claims
   * of every process sharing the database are serialised.
   */
  async claimNext(owner: string, maxRunning: number): Promise<TaskRecord | null> {
    const input = { owner, maxRunning, now: this.now() };
    const claimed = await this.options.store.exclusive(TASK_CLAIM_LOCK, (trx) => claimNextTask(trx, input));
    if (claimed) this.emit('updated', claimed);
    return claimed;
  }

  /** Tasks completed since `sinceIso` (analytics). */
  countCompletedSince(sinceIso: string): Promise<number> {
    return countTasksCompletedSince(this.options.store.db, sinceIso);
  }

  /** Runner: records the turn of a claimed task. */
  async recordEvent(id: string, eventId: string): Promise<void> {
    const now = this.now();
    const stored = await this.options.store.writer.run((trx) => setTaskEvent(trx, id, eventId, now));
    if (!stored) return;
    const task = await this.get(id);
    if (task) this.emit('updated', task);
  }

  /**
   * Runner: ends a running task with its turn's outcome (completed: progress
   * 1 and `result`; failed: `error`). A task that is no longer running
   * (cancelled, or finished by a person) is left as it is; returns null then.
   */
  async finishRun(id: string, outcome: TaskRunOutcome): Promise<TaskRecord | null> {
    const now = this.now();
    const changes: TaskChanges =
      outcome.status === 'completed'
        ? { status: 'completed', progress: 1, result: outcome.result, finishedAt: now }
        : { status: 'failed', error: outcome.error, finishedAt: now };
    const updated = await this.commitUpdate(
      id,
      { expectedStatus: 'running', changes, now },
      outcome.status === 'completed',
    );
    if (updated) this.emit(outcome.status, updated);
    return updated;
  }

  /**
   * One update of a task in one commit, with its `task.completed` delivery (DECISIONS §20) in that commit when
   * the update completes it (the runner's completion or a person's PATCH) and a subscription wants the event.
   */
  private async commitUpdate(
    id: string,
    input: { expectedStatus: TaskStatus; changes: TaskChanges; now: string },
    completes: boolean,
  ): Promise<TaskRecord | null> {
    const outbox = this.options.outbox ?? null;
    const reported = completes && outbox !== null && outbox.wants('task.completed');
    let written = 0;
    const updated = await this.options.store.writer.run(async (trx) => {
      const task = await updateTask(trx, id, input);
      if (task && reported) {
        written = await outbox.write(trx, [{ type: 'task.completed', timestamp: input.now, data: presentTask(task) }]);
      }
      return task;
    });
    if (written > 0) outbox?.committed();
    return updated;
  }

  /** Runner recovery: claimed running tasks whose turn has ended. */
  tasksWithFinishedTurns(limit: number): Promise<TaskRecord[]> {
    return runningTasksWithFinishedTurns(this.options.store.db, limit);
  }

  /** Runner recovery: claimed running tasks without a turn whose claimer is not live. */
  orphanedClaims(liveOwners: readonly string[], limit: number): Promise<TaskRecord[]> {
    return orphanedClaims(this.options.store.db, liveOwners, limit);
  }

  /**
   * Levels from task `id` up to its root (a root task is 1; an unknown id
   * is 0), counting no further than `max + 1`.
   */
  async depth(id: string, max: number): Promise<number> {
    const db = this.options.store.db;
    let depth = 0;
    let cursor = id;
    while (depth <= max) {
      const parent = await parentOf(db, cursor);
      if (parent === undefined) break;
      depth++;
      if (parent === null) break;
      cursor = parent;
    }
    return depth;
  }

  private interrupt(task: TaskRecord): void {
    if (task.eventId) this.options.interruptTurn?.(task.eventId, TASK_CANCELLED_REASON);
  }

  /** 400 unless `parentId` is an existing task other than `id` and not below it. */
  private async assertParent(id: string, parentId: string): Promise<void> {
    const db = this.options.store.db;
    let cursor: string | null | undefined = parentId;
    for (let depth = 0; cursor != null && depth < MAX_PARENT_DEPTH; depth++) {
      if (cursor === id) {
        throw errors.validation([
          { path: 'body.parent_task_id', message: 'a task cannot be nested under itself or its subtasks' },
        ]);
      }
      const next: string | null | undefined = await parentOf(db, cursor);
      if (next === undefined && depth === 0) throw unknownParent();
      cursor = next;
    }
  }
}

function unknownParent() {
  return errors.validation([{ path: 'body.parent_task_id', message: 'no task with this id' }]);
}

function badTransition(from: TaskStatus, to: TaskStatus) {
  const allowed = TASK_TRANSITIONS[from];
  return errors.badRequest(isFinished(from) ? `task is already ${from}` : `a ${from} task cannot become ${to}`, {
    status: from,
    requested: to,
    allowed: [...allowed],
  });
}

function normaliseAssignee(assignee: string | null | undefined): string | null {
  if (assignee === undefined || assignee === null) return null;
  return assignee.trim() === '' ? null : assignee;
}

function uniqueLabels(labels: readonly string[]): string[] {
  return [...new Set(labels)];
}
