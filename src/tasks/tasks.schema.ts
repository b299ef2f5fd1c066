import { z } from 'zod';
import { objectBody, q } from '../http/validation.js';

/** Task statuses: the spec's four plus `cancelled` (DECISIONS §9). */
export const TASK_STATUSES = ['pending', 'running', 'completed', 'failed', 'cancelled'] as const;
/** A task's lifecycle state. */
export type TaskStatus = (typeof TASK_STATUSES)[number];

/** Statuses a task never leaves. */
export const FINISHED_TASK_STATUSES: readonly TaskStatus[] = ['completed', 'failed', 'cancelled'];

/** Where a task came from (DECISIONS §9); `api` by default. */
export const TASK_SOURCES = ['api', 'agent', 'cron', 'channel'] as const;
/** A task's origin. */
export type TaskSource = (typeof TASK_SOURCES)[number];

/** The priority words of responses and of the list filter (spec: Task). */
export const PRIORITY_WORDS = ['low', 'normal', 'high', 'urgent'] as const;
/** A priority word. */
export type PriorityWord = (typeof PRIORITY_WORDS)[number];

/** Default priority of a new task (spec: Task, create request). */
export const DEFAULT_PRIORITY = 5;

/** Integer ranges of each word, inclusive: 0–3 low, 4–6 normal, 7–8 high, 9–10 urgent (DECISIONS §9). */
export const PRIORITY_RANGES: Readonly<Record<PriorityWord, readonly [number, number]>> = {
  low: [0, 3],
  normal: [4, 6],
  high: [7, 8],
  urgent: [9, 10],
};

/** The word of an integer priority 0..10 (out-of-range values clamp to the nearest word). */
export function priorityWord(value: number): PriorityWord {
  if (value <= PRIORITY_RANGES.low[1]) return 'low';
  if (value <= PRIORITY_RANGES.normal[1]) return 'normal';
  if (value <= PRIORITY_RANGES.high[1]) return 'high';
  return 'urgent';
}

/**
 * Status changes a task may make (DECISIONS §3, §9): pending → running |
 * cancelled, running → completed | failed | cancelled. Finished tasks never
 * move. Keeping the same status is not a transition and is always allowed.
 */
export const TASK_TRANSITIONS: Readonly<Record<TaskStatus, readonly TaskStatus[]>> = {
  // A person may finish a task without marking it running first.
  pending: ['running', 'completed', 'failed', 'cancelled'],
  running: ['completed', 'failed', 'cancelled'],
  completed: [],
  failed: [],
  cancelled: [],
};

/** True when `from` → `to` is an allowed status change (or no change at all). */
export function canTransition(from: TaskStatus, to: TaskStatus): boolean {
  return from === to || TASK_TRANSITIONS[from].includes(to);
}

/** True for completed, failed and cancelled. */
export function isFinished(status: TaskStatus): boolean {
  return FINISHED_TASK_STATUSES.includes(status);
}

/** True when the agent runs a task with this assignee: none, or `agent` (DECISIONS §9). */
export function isAgentAssignee(assignee: string | null): boolean {
  return assignee === null || assignee === AGENT_ASSIGNEE;
}

/** The assignee that hands a task to the agent explicitly. */
export const AGENT_ASSIGNEE = 'agent';

const MAX_TITLE = 1_000;
const MAX_TEXT = 100_000;
const MAX_NAME = 200;
const MAX_LABELS = 50;
const MAX_LABEL = 100;

/*
 * Field schemas, shared by create, PATCH and the `task_create` tool. Bodies
 * are validated without coercion: `true`, `"5"`, `null` and `5.5` are not
 * integers (spec: Task, create request rules).
 */
const title = z
  .string({ error: (i) => (i.input === undefined ? 'title is required' : 'title must be a string') })
  .max(MAX_TITLE, `title must be at most ${MAX_TITLE} characters`)
  .refine((s) => s.trim().length > 0, 'title must not be empty');
const description = z
  .string({ error: 'description must be a string' })
  .max(MAX_TEXT, `description must be at most ${MAX_TEXT} characters`);
const priority = z
  .number({ error: 'priority must be an integer from 0 to 10' })
  .int('priority must be an integer from 0 to 10')
  .min(0, 'priority must be an integer from 0 to 10')
  .max(10, 'priority must be an integer from 0 to 10');
const labels = z
  .array(
    z
      .string({ error: 'each label must be a string' })
      .min(1, 'a label must not be empty')
      .max(MAX_LABEL, `a label must be at most ${MAX_LABEL} characters`),
    { error: 'labels must be an array of strings' },
  )
  .max(MAX_LABELS, `at most ${MAX_LABELS} labels`);
const name = (field: string) =>
  z.string({ error: `${field} must be a string` }).max(MAX_NAME, `${field} must be at most ${MAX_NAME} characters`);
const source = z.enum(TASK_SOURCES, { error: `source must be one of ${TASK_SOURCES.join(', ')}` });
const parentTaskId = z
  .string({ error: 'parent_task_id must be a string' })
  .min(1, 'parent_task_id must not be empty')
  .max(MAX_NAME, 'parent_task_id is not a task id');
const metadata = z.record(z.string(), z.unknown(), { error: 'metadata must be a JSON object' });
const status = z.enum(TASK_STATUSES, { error: `status must be one of ${TASK_STATUSES.join(', ')}` });
const progress = z
  .number({ error: 'progress must be a number from 0 to 1' })
  .min(0, 'progress must be a number from 0 to 1')
  .max(1, 'progress must be a number from 0 to 1');

/** POST /tasks body (spec: Task, create request fields). Unknown fields are dropped. */
export const createTaskBody = objectBody({
  title,
  description: description.optional(),
  priority: priority.optional(),
  labels: labels.optional(),
  assignee: name('assignee').optional(),
  source: source.optional(),
  board_id: name('board_id').optional(),
  parent_task_id: parentTaskId.optional(),
  metadata: metadata.optional(),
});
/** A validated POST /tasks body. */
export type CreateTaskBody = z.output<typeof createTaskBody>;

/**
 * PATCH /tasks/{id} body: any subset of the create fields with the same
 * rules, checked only when present (spec: Task), plus `status` and
 * `progress`. `null` clears the optional text fields (description, assignee,
 * board_id, parent_task_id); it is not accepted anywhere else.
 */
export const patchTaskBody = objectBody({
  title: title.optional(),
  description: description.nullable().optional(),
  priority: priority.optional(),
  labels: labels.optional(),
  assignee: name('assignee').nullable().optional(),
  source: source.optional(),
  board_id: name('board_id').nullable().optional(),
  parent_task_id: parentTaskId.nullable().optional(),
  metadata: metadata.optional(),
  status: status.optional(),
  progress: progress.optional(),
});
/** A validated PATCH /tasks/{id} body. */
export type PatchTaskBody = z.output<typeof patchTaskBody>;

/** GET /tasks query (spec: Tasks; DECISIONS §9). */
export const listTasksQuery = z.object({
  status: status.optional(),
  priority: z.enum(PRIORITY_WORDS, { error: `priority must be one of ${PRIORITY_WORDS.join(', ')}` }).optional(),
  limit: q.int(1, 500, 50),
  session_id: z.string().min(1).optional(),
  assignee: z.string().min(1).optional(),
  source: source.optional(),
  board_id: z.string().min(1).optional(),
  parent_task_id: z.string().min(1).optional(),
  principal: z
    .string()
    .min(1)
    .optional()
    .describe("Admins: only this principal's tasks; a configured principal always sees only its own (DECISIONS §18)"),
});
/** A validated GET /tasks query. */
export type ListTasksQuery = z.output<typeof listTasksQuery>;

/** Arguments of the `task_create` tool (DECISIONS §10). */
export const taskCreateToolArgs = z.object({
  title,
  description: description.optional(),
  priority: priority.optional(),
  labels: labels.optional(),
});

/*
 * Response shapes (the presenter's output), declared on the routes for the
 * OpenAPI document; the response-schema test parses real answers with them.
 */

/** ISO 8601 UTC with milliseconds (DECISIONS §2). */
const timestamp = z.iso.datetime({ precision: 3 }).describe('ISO 8601 UTC with milliseconds');

/** A task (spec: Task; DECISIONS §9): `priority` is the word, `priority_value` the integer. */
export const taskSchema = z
  .object({
    id: z.string(),
    title: z.string(),
    description: z.string().nullable(),
    status: z.enum(TASK_STATUSES),
    priority: z.enum(PRIORITY_WORDS).describe('0–3 low, 4–6 normal, 7–8 high, 9–10 urgent'),
    priority_value: z.number().int().min(0).max(10),
    labels: z.array(z.string()),
    assignee: z.string().nullable().describe('Null or `agent`: the agent runs it; anyone else: a person'),
    source: z.enum(TASK_SOURCES),
    board_id: z.string().nullable(),
    parent_task_id: z.string().nullable(),
    metadata: z.record(z.string(), z.unknown()),
    progress: z.number().min(0).max(1),
    session_key: z.string().nullable().describe('The session its turn runs in (`gateway:task:<task_id>`)'),
    event_id: z.string().nullable().describe('Its turn, once the agent runs it'),
    result: z.string().nullable(),
    error: z.string().nullable(),
    created_at: timestamp,
    started_at: timestamp.nullable(),
    finished_at: timestamp.nullable(),
    updated_at: timestamp,
    principal: z
      .string()
      .describe('The principal that owns the task and whose turn runs it: its creator (DECISIONS §18)'),
  })
  .meta({ id: 'Task', description: 'A task' });

/** A single task, wrapped (spec: Tasks; DECISIONS §9): create, GET, PATCH, DELETE. */
export const taskEnvelopeSchema = z
  .object({ task: taskSchema })
  .meta({ id: 'TaskEnvelope', description: 'One task, wrapped as `{task}`' });

/** GET /tasks. */
export const taskListSchema = z
  .object({ items: z.array(taskSchema) })
  .meta({ id: 'TaskList', description: 'Tasks, newest first' });
