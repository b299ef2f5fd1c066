import { toFieldIssues } from '../http/validation.js';
import type { AgentTool } from '../runtime/index.js';
import { presentTask } from './tasks.presenter.js';
import { DEFAULT_TASK_PRINCIPAL } from './tasks.repo.js';
import { taskCreateToolArgs } from './tasks.schema.js';
import type { TaskService } from './tasks.service.js';

/** Session keys of task runs: `gateway:task:<task_id>`. */
const TASK_SESSION_PREFIX = 'gateway:task:';
/** Deepest chain of agent-created subtasks; beyond it `task_create` refuses (no runaway recursion). */
export const MAX_AGENT_TASK_DEPTH = 5;

/**
 * The task tools for the agent (DECISIONS §10): `task_create({title,
 * description?, priority?, labels?})` creates a pending task with source
 * `agent` and answers it in its wire shape (the service's change event
 * wakes the task runner). Called from a task's own session, the new task is
 * nested under that task (`parent_task_id`), at most MAX_AGENT_TASK_DEPTH
 * levels deep. The creating session and turn are kept in `metadata`; the
 * task belongs to the principal owning the session (DECISIONS §18).
 * Invalid arguments throw, which reports the problem to the model.
 */
export function taskTools(service: TaskService): AgentTool[] {
  return [
    {
      spec: {
        name: 'task_create',
        description:
          'Create a task to be done later (by you, the agent, unless a person picks it up). ' +
          'Use it for follow-up work, not for the current request. Returns the created task.',
        parameters: {
          type: 'object',
          properties: {
            title: { type: 'string', description: 'Short summary of the work' },
            description: { type: 'string', description: 'What to do, with everything needed to do it' },
            priority: {
              type: 'integer',
              minimum: 0,
              maximum: 10,
              description: 'Integer 0..10: 0-3 low, 4-6 normal (default 5), 7-8 high, 9-10 urgent',
            },
            labels: { type: 'array', items: { type: 'string' }, description: 'Labels to group the task by' },
          },
          required: ['title'],
        },
      },
      async run(args, ctx) {
        const parsed = taskCreateToolArgs.safeParse(args);
        if (!parsed.success) {
          const problems = toFieldIssues(parsed.error.issues, '').map((i) => `${i.path}: ${i.message}`);
          throw new Error(`invalid arguments: ${problems.join('; ')}`);
        }
        const parentTaskId = ctx.sessionKey.startsWith(TASK_SESSION_PREFIX)
          ? ctx.sessionKey.slice(TASK_SESSION_PREFIX.length)
          : null;
        if (
          parentTaskId !== null &&
          (await service.depth(parentTaskId, MAX_AGENT_TASK_DEPTH)) >= MAX_AGENT_TASK_DEPTH
        ) {
          throw new Error(`tasks may nest at most ${MAX_AGENT_TASK_DEPTH} levels deep; do the work directly instead`);
        }
        const parentExists = parentTaskId !== null && (await service.get(parentTaskId)) !== null;
        const task = await service.create({
          ...parsed.data,
          source: 'agent',
          parentTaskId: parentExists ? parentTaskId : null,
          metadata: { created_by: { session_key: ctx.sessionKey, event_id: ctx.eventId } },
          // The principal owning the session (a task's own session: the task's), so subtasks inherit it.
          principal: ctx.principal ?? DEFAULT_TASK_PRINCIPAL,
        });
        return presentTask(task);
      },
    },
  ];
}
