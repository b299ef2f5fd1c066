import type { TaskRecord } from './tasks.repo.js';
import { priorityWord, type PriorityWord, type TaskSource, type TaskStatus } from './tasks.schema.js';

/**
 * The wire shape of a task (spec: Task; DECISIONS §9): snake_case, `priority`
 * as the word. A type alias, so it is a `Record<string, unknown>` for the
 * live feed's `bus.publish`.
 */
export type TaskView = {
  id: string;
  title: string;
  description: string | null;
  status: TaskStatus;
  priority: PriorityWord;
  priority_value: number;
  labels: string[];
  assignee: string | null;
  source: TaskSource;
  board_id: string | null;
  parent_task_id: string | null;
  metadata: Record<string, unknown>;
  progress: number;
  session_key: string | null;
  event_id: string | null;
  result: string | null;
  error: string | null;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
  updated_at: string;
  /** The owning principal (DECISIONS §18). */
  principal: string;
};

/** Converts a stored task to its wire shape. */
export function presentTask(task: TaskRecord): TaskView {
  return {
    id: task.id,
    title: task.title,
    description: task.description,
    status: task.status,
    priority: priorityWord(task.priority),
    priority_value: task.priority,
    labels: task.labels,
    assignee: task.assignee,
    source: task.source,
    board_id: task.boardId,
    parent_task_id: task.parentTaskId,
    metadata: task.metadata,
    progress: task.progress,
    session_key: task.sessionKey,
    event_id: task.eventId,
    result: task.result,
    error: task.error,
    created_at: task.createdAt,
    started_at: task.startedAt,
    finished_at: task.finishedAt,
    updated_at: task.updatedAt,
    principal: task.principal,
  };
}
