import { sql, type Kysely, type Selectable, type Transaction, type Updateable } from 'kysely';
import type { Database } from '../store/index.js';
import { listRunningTasksWithEndedTurns } from '../turns/index.js';
import {
  AGENT_ASSIGNEE,
  PRIORITY_RANGES,
  type PriorityWord,
  type TaskSource,
  type TaskStatus,
} from './tasks.schema.js';

/** `tasks`: one row per task (migration 008_tasks). */
export interface TasksTable {
  id: string;
  title: string;
  description: string | null;
  /** pending | running | completed | failed | cancelled. */
  status: string;
  /** Integer 0..10. */
  priority: number;
  /** JSON array of strings as text. */
  labels: string;
  assignee: string | null;
  /** api | agent | cron | channel. */
  source: string;
  board_id: string | null;
  parent_task_id: string | null;
  /** JSON object as text. */
  metadata: string;
  /** Fraction of completion, 0..1. */
  progress: number;
  /** The session the agent runs the task in (`gateway:task:<id>`); null until claimed by the runner. */
  session_key: string | null;
  /** The turn running the task; null until submitted. */
  event_id: string | null;
  /** The gateway instance whose runner claimed the task; null for tasks people work on. */
  claimed_by: string | null;
  result: string | null;
  error: string | null;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
  updated_at: string;
  /** The principal the task belongs to and its turn runs under (migration 014_task_owners; DECISIONS §18). */
  principal: string;
}

declare module '../store/database.js' {
  /** `Database` with the table of 008_tasks (and 014_task_owners). */
  interface Database {
    tasks: TasksTable;
  }
}

/** The principal of tasks created without one, and of every task created before 014_task_owners. */
export const DEFAULT_TASK_PRINCIPAL = 'default';

/** `store.db`, a transaction, or a group-commit `trx`: every function here composes inside the caller's transaction. */
type Executor = Kysely<Database> | Transaction<Database>;

/** A task as stored. */
export interface TaskRecord {
  /** `tsk_…`, time-sortable. */
  id: string;
  title: string;
  description: string | null;
  status: TaskStatus;
  /** Integer 0..10. */
  priority: number;
  labels: string[];
  assignee: string | null;
  source: TaskSource;
  boardId: string | null;
  parentTaskId: string | null;
  metadata: Record<string, unknown>;
  /** 0..1. */
  progress: number;
  sessionKey: string | null;
  eventId: string | null;
  claimedBy: string | null;
  result: string | null;
  error: string | null;
  createdAt: string;
  startedAt: string | null;
  finishedAt: string | null;
  updatedAt: string;
  /** The principal that owns the task (DECISIONS §18): who created it; its turn runs under it. */
  principal: string;
}

/** What `insertTask` stores; the task starts pending with progress 0. */
export interface NewTask {
  id: string;
  title: string;
  description: string | null;
  priority: number;
  labels: string[];
  assignee: string | null;
  source: TaskSource;
  boardId: string | null;
  parentTaskId: string | null;
  metadata: Record<string, unknown>;
  /** The owning principal; default `default`. */
  principal?: string;
  now: string;
}

/** Inserts a pending task. Rejects with the driver's unique-violation error on a duplicate id. */
export async function insertTask(ex: Executor, task: NewTask): Promise<TaskRecord> {
  const row = await ex
    .insertInto('tasks')
    .values({
      id: task.id,
      title: task.title,
      description: task.description,
      status: 'pending',
      priority: task.priority,
      labels: JSON.stringify(task.labels),
      assignee: task.assignee,
      source: task.source,
      board_id: task.boardId,
      parent_task_id: task.parentTaskId,
      metadata: JSON.stringify(task.metadata),
      progress: 0,
      session_key: null,
      event_id: null,
      claimed_by: null,
      result: null,
      error: null,
      created_at: task.now,
      started_at: null,
      finished_at: null,
      updated_at: task.now,
      principal: task.principal ?? DEFAULT_TASK_PRINCIPAL,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
  return toTask(row);
}

/** The task `id`, or null. */
export async function getTask(ex: Executor, id: string): Promise<TaskRecord | null> {
  const row = await ex.selectFrom('tasks').selectAll().where('id', '=', id).executeTakeFirst();
  return row ? toTask(row) : null;
}

/** The parent id of task `id`: null for a root task, undefined when the task does not exist. */
export async function parentOf(ex: Executor, id: string): Promise<string | null | undefined> {
  const row = await ex.selectFrom('tasks').select('parent_task_id').where('id', '=', id).executeTakeFirst();
  return row ? row.parent_task_id : undefined;
}

/** Filters of `listTasks`; absent ones do not restrict. */
export interface ListTasksOptions {
  status?: TaskStatus;
  priority?: PriorityWord;
  sessionKey?: string;
  assignee?: string;
  source?: TaskSource;
  boardId?: string;
  parentTaskId?: string;
  /** Only this principal's tasks. */
  principal?: string;
  /** At least 1 (the HTTP layer validates the range). */
  limit: number;
}

/** Tasks matching every filter, newest first (`created_at`, then id, descending). */
export async function listTasks(ex: Executor, options: ListTasksOptions): Promise<TaskRecord[]> {
  let query = ex.selectFrom('tasks').selectAll();
  if (options.status) query = query.where('status', '=', options.status);
  if (options.priority) {
    const [low, high] = PRIORITY_RANGES[options.priority];
    query = query.where('priority', '>=', low).where('priority', '<=', high);
  }
  if (options.sessionKey !== undefined) query = query.where('session_key', '=', options.sessionKey);
  if (options.assignee !== undefined) query = query.where('assignee', '=', options.assignee);
  if (options.source !== undefined) query = query.where('source', '=', options.source);
  if (options.boardId !== undefined) query = query.where('board_id', '=', options.boardId);
  if (options.parentTaskId !== undefined) query = query.where('parent_task_id', '=', options.parentTaskId);
  if (options.principal !== undefined) query = query.where('principal', '=', options.principal);
  const rows = await query.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(options.limit).execute();
  return rows.map(toTask);
}

/** Columns `updateTask` may change, in record terms; absent fields are left alone. */
export interface TaskChanges {
  title?: string;
  description?: string | null;
  priority?: number;
  labels?: string[];
  assignee?: string | null;
  source?: TaskSource;
  boardId?: string | null;
  parentTaskId?: string | null;
  metadata?: Record<string, unknown>;
  status?: TaskStatus;
  progress?: number;
  result?: string | null;
  error?: string | null;
  startedAt?: string | null;
  finishedAt?: string | null;
}

/**
 * Applies `changes` to task `id` (and `updated_at = now`) only while its
 * status is `expectedStatus`: the compare-and-set that keeps status
 * transitions atomic against concurrent writers (runner, PATCH, DELETE).
 * Returns the updated task, or null when it is missing or its status moved.
 */
export async function updateTask(
  ex: Executor,
  id: string,
  input: { expectedStatus: TaskStatus; changes: TaskChanges; now: string },
): Promise<TaskRecord | null> {
  const c = input.changes;
  const set: Updateable<TasksTable> = { updated_at: input.now };
  if (c.title !== undefined) set.title = c.title;
  if (c.description !== undefined) set.description = c.description;
  if (c.priority !== undefined) set.priority = c.priority;
  if (c.labels !== undefined) set.labels = JSON.stringify(c.labels);
  if (c.assignee !== undefined) set.assignee = c.assignee;
  if (c.source !== undefined) set.source = c.source;
  if (c.boardId !== undefined) set.board_id = c.boardId;
  if (c.parentTaskId !== undefined) set.parent_task_id = c.parentTaskId;
  if (c.metadata !== undefined) set.metadata = JSON.stringify(c.metadata);
  if (c.status !== undefined) set.status = c.status;
  if (c.progress !== undefined) set.progress = c.progress;
  if (c.result !== undefined) set.result = c.result;
  if (c.error !== undefined) set.error = c.error;
  if (c.startedAt !== undefined) set.started_at = c.startedAt;
  if (c.finishedAt !== undefined) set.finished_at = c.finishedAt;
  const row = await ex
    .updateTable('tasks')
    .set(set)
    .where('id', '=', id)
    .where('status', '=', input.expectedStatus)
    .returningAll()
    .executeTakeFirst();
  return row ? toTask(row) : null;
}

/** The `store.exclusive` lock every task claim of every process sharing the database takes. */
export const TASK_CLAIM_LOCK = 'gatehouse.tasks.claim';

/**
 * Claims the next task the agent should run: the pending task with no
 * assignee or assignee `agent`, highest priority first, then oldest. One
 * conditional UPDATE moves it pending → running for `owner` (session
 * `gateway:task:<id>`, `started_at = now`, progress 0) only while fewer than
 * `maxRunning` claimed tasks are running, so exactly one of any number of
 * concurrent claims wins a task and the bound holds across processes.
 *
 * The caller must run it inside `store.exclusive(TASK_CLAIM_LOCK, …)`, so
 * the running count the UPDATE reads cannot be stale (PostgreSQL READ
 * COMMITTED). Returns the claimed task, or null when nothing is pending or
 * the bound is reached.
 */
export async function claimNextTask(
  ex: Executor,
  input: { owner: string; maxRunning: number; now: string },
): Promise<TaskRecord | null> {
  const row = await ex
    .updateTable('tasks')
    .set({
      status: 'running',
      claimed_by: input.owner,
      session_key: sql<string>`'gateway:task:' || id`,
      started_at: input.now,
      progress: 0,
      updated_at: input.now,
    })
    .where('id', '=', (eb) =>
      eb
        .selectFrom('tasks as candidate')
        .select('candidate.id')
        .where('candidate.status', '=', 'pending')
        .where((w) => w.or([w('candidate.assignee', 'is', null), w('candidate.assignee', '=', AGENT_ASSIGNEE)]))
        .orderBy('candidate.priority', 'desc')
        .orderBy('candidate.created_at', 'asc')
        .orderBy('candidate.id', 'asc')
        .limit(1),
    )
    .where('status', '=', 'pending')
    .where(
      (eb) =>
        eb
          .selectFrom('tasks as busy')
          .select((s) => s.fn.countAll<number>().as('n'))
          .where('busy.status', '=', 'running')
          .where('busy.claimed_by', 'is not', null),
      '<',
      input.maxRunning,
    )
    .returningAll()
    .executeTakeFirst();
  return row ? toTask(row) : null;
}

/** Records the turn running a claimed task (only while it has none). Returns whether it was stored. */
export async function setTaskEvent(ex: Executor, id: string, eventId: string, now: string): Promise<boolean> {
  const result = await ex
    .updateTable('tasks')
    .set({ event_id: eventId, updated_at: now })
    .where('id', '=', id)
    .where('event_id', 'is', null)
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

/** Running tasks claimed by a runner whose turn has ended (terminal in the ledger), oldest first, at most `limit`. */
export async function runningTasksWithFinishedTurns(ex: Executor, limit: number): Promise<TaskRecord[]> {
  const rows = await listRunningTasksWithEndedTurns(ex, limit);
  return rows.map(toTask);
}

/**
 * Running tasks claimed by a runner that never recorded a turn, whose
 * claimer is not in `liveOwners` (it died between claim and submit), at
 * most `limit`.
 */
export async function orphanedClaims(
  ex: Executor,
  liveOwners: readonly string[],
  limit: number,
): Promise<TaskRecord[]> {
  let query = ex
    .selectFrom('tasks')
    .selectAll()
    .where('status', '=', 'running')
    .where('claimed_by', 'is not', null)
    .where('event_id', 'is', null);
  if (liveOwners.length > 0) query = query.where('claimed_by', 'not in', liveOwners);
  const rows = await query.orderBy('started_at').limit(limit).execute();
  return rows.map(toTask);
}

/** Tasks that reached `completed` at or after `sinceIso` (analytics: `tasks_completed`). */
export async function countTasksCompletedSince(ex: Executor, sinceIso: string): Promise<number> {
  const row = await ex
    .selectFrom('tasks')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('status', '=', 'completed')
    .where('finished_at', '>=', sinceIso)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

function toTask(row: Selectable<TasksTable>): TaskRecord {
  return {
    id: row.id,
    title: row.title,
    description: row.description,
    status: row.status as TaskStatus,
    priority: row.priority,
    labels: parseLabels(row.labels),
    assignee: row.assignee,
    source: row.source as TaskSource,
    boardId: row.board_id,
    parentTaskId: row.parent_task_id,
    metadata: parseObject(row.metadata),
    progress: Number(row.progress),
    sessionKey: row.session_key,
    eventId: row.event_id,
    claimedBy: row.claimed_by,
    result: row.result,
    error: row.error,
    createdAt: row.created_at,
    startedAt: row.started_at,
    finishedAt: row.finished_at,
    updatedAt: row.updated_at,
    principal: row.principal,
  };
}

function parseLabels(text: string): string[] {
  const value: unknown = JSON.parse(text);
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : [];
}

function parseObject(text: string): Record<string, unknown> {
  const value: unknown = JSON.parse(text);
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
}
