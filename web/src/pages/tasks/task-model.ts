/**
 * The task as the board sees it: the API's `Task` (`client/`), its statuses in board order, the status
 * changes a task may make (DECISIONS §9: pending → running | completed | failed | cancelled, running →
 * completed | failed | cancelled; finished tasks never move), and the reading of a live `tasks` event.
 */
import type { components } from '../../../../client/index.js';

/** A task, as every task route and the `tasks` live topic present it. */
export type Task = components['schemas']['Task'];
/** A task's lifecycle state. */
export type TaskStatus = Task['status'];

/** The board's columns, in order. */
export const STATUSES: readonly TaskStatus[] = ['pending', 'running', 'completed', 'failed', 'cancelled'];

/** Where a task may come from. */
export const SOURCES: readonly Task['source'][] = ['api', 'agent', 'cron', 'channel'];

/** The priority words of the list filter. */
export const PRIORITIES: readonly Task['priority'][] = ['low', 'normal', 'high', 'urgent'];

/** The statuses a task of each status may move to through PATCH (the server refuses any other). */
export const ALLOWED_NEXT: Readonly<Record<TaskStatus, readonly TaskStatus[]>> = {
  pending: ['running', 'completed', 'failed', 'cancelled'],
  running: ['completed', 'failed', 'cancelled'],
  completed: [],
  failed: [],
  cancelled: [],
};

/** True for completed, failed and cancelled. */
export function isFinished(task: Task): boolean {
  return ALLOWED_NEXT[task.status].length === 0;
}

/** The task carried by a live `tasks` event (`{type: "event", topic: "tasks", event, data: Task}`), or null. */
export function taskOfEvent(data: unknown): Task | null {
  if (!data || typeof data !== 'object') return null;
  const task = data as Partial<Task>;
  if (typeof task.id !== 'string' || typeof task.title !== 'string' || typeof task.updated_at !== 'string') {
    return null;
  }
  if (!STATUSES.includes(task.status as TaskStatus)) return null;
  return task as Task;
}

/** The newer of two versions of one task (by `updated_at`; the second on a tie). */
export function newer(a: Task | undefined, b: Task): Task {
  return a !== undefined && a.updated_at > b.updated_at ? a : b;
}
