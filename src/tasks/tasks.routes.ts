import { z } from 'zod';
import { created, defineRoute, type Principal, type RouteDef } from '../http/route.js';
import { isolatedPrincipal } from '../sessions/index.js';
import { presentTask } from './tasks.presenter.js';
import { createTaskBody, listTasksQuery, patchTaskBody, taskEnvelopeSchema, taskListSchema } from './tasks.schema.js';
import type { TaskService } from './tasks.service.js';

/** What the task routes use. */
export interface TaskRoutesDeps {
  service: TaskService;
}

/**
 * The tasks a caller may read (DECISIONS §18): a configured api principal
 * its own (its id); the default principal, the one owner of a single-owner
 * gateway, anonymous callers and admins every task (undefined).
 */
function readableBy(principal: Principal): string | undefined {
  return isolatedPrincipal(principal) ?? undefined;
}

/**
 * Tasks API (spec: Tasks; DECISIONS §2, §3, §4, §9). Single tasks are
 * wrapped as `{task}`; reads need api rights, writes admin. A task belongs
 * to the principal that created it; a configured principal reads only its
 * own (another's is 404), admins all, or one principal's with
 * `?principal=` (DECISIONS §18). Field problems are 400 with every issue in
 * `details`; a status change that is not allowed is 400; an unknown id is
 * 404.
 */
export function taskRoutes(deps: TaskRoutesDeps): RouteDef[] {
  const { service } = deps;
  const params = z.object({ task_id: z.string().min(1) });
  return [
    defineRoute({
      method: 'GET',
      path: '/tasks',
      permission: 'api',
      summary:
        'List tasks, newest first (filters: status, priority word, session_id, assignee, source, board, principal)',
      tags: ['tasks'],
      query: listTasksQuery,
      responses: [{ status: 200, description: 'The tasks', schema: taskListSchema }],
      handler: async (ctx, { query }) => {
        // A configured principal lists its own tasks whatever it asks; anyone else every task, or one principal's.
        const principal = readableBy(ctx.principal) ?? query.principal;
        const tasks = await service.list({
          limit: query.limit,
          ...(query.status ? { status: query.status } : {}),
          ...(query.priority ? { priority: query.priority } : {}),
          ...(query.session_id !== undefined ? { sessionKey: query.session_id } : {}),
          ...(query.assignee !== undefined ? { assignee: query.assignee } : {}),
          ...(query.source !== undefined ? { source: query.source } : {}),
          ...(query.board_id !== undefined ? { boardId: query.board_id } : {}),
          ...(query.parent_task_id !== undefined ? { parentTaskId: query.parent_task_id } : {}),
          ...(principal !== undefined ? { principal } : {}),
        });
        return { items: tasks.map(presentTask) };
      },
    }),
    defineRoute({
      method: 'POST',
      path: '/tasks',
      permission: 'admin',
      summary: 'Create a task (agent tasks start running as soon as a slot is free)',
      tags: ['tasks'],
      body: createTaskBody,
      responses: [{ status: 201, description: 'The created task', schema: taskEnvelopeSchema }],
      handler: async (ctx, { body }) => {
        const task = await service.create({
          title: body.title,
          principal: ctx.principal.id,
          ...(body.description !== undefined ? { description: body.description } : {}),
          ...(body.priority !== undefined ? { priority: body.priority } : {}),
          ...(body.labels !== undefined ? { labels: body.labels } : {}),
          ...(body.assignee !== undefined ? { assignee: body.assignee } : {}),
          ...(body.source !== undefined ? { source: body.source } : {}),
          ...(body.board_id !== undefined ? { boardId: body.board_id } : {}),
          ...(body.parent_task_id !== undefined ? { parentTaskId: body.parent_task_id } : {}),
          ...(body.metadata !== undefined ? { metadata: body.metadata } : {}),
        });
        return created({ task: presentTask(task) });
      },
    }),
    defineRoute({
      method: 'GET',
      path: '/tasks/:task_id',
      permission: 'api',
      summary: 'One task',
      tags: ['tasks'],
      params,
      responses: [{ status: 200, description: 'The task', schema: taskEnvelopeSchema }],
      handler: async (ctx, { params: p }) => ({
        task: presentTask(await service.require(p.task_id, readableBy(ctx.principal))),
      }),
    }),
    defineRoute({
      method: 'PATCH',
      path: '/tasks/:task_id',
      permission: 'admin',
      summary: 'Change a task: any create field, plus status and progress along the allowed transitions',
      tags: ['tasks'],
      params,
      body: patchTaskBody,
      responses: [{ status: 200, description: 'The task after the change', schema: taskEnvelopeSchema }],
      handler: async (_ctx, { params: p, body }) => {
        const task = await service.update(p.task_id, {
          ...(body.title !== undefined ? { title: body.title } : {}),
          ...(body.description !== undefined ? { description: body.description } : {}),
          ...(body.priority !== undefined ? { priority: body.priority } : {}),
          ...(body.labels !== undefined ? { labels: body.labels } : {}),
          ...(body.assignee !== undefined ? { assignee: body.assignee } : {}),
          ...(body.source !== undefined ? { source: body.source } : {}),
          ...(body.board_id !== undefined ? { boardId: body.board_id } : {}),
          ...(body.parent_task_id !== undefined ? { parentTaskId: body.parent_task_id } : {}),
          ...(body.metadata !== undefined ? { metadata: body.metadata } : {}),
          ...(body.status !== undefined ? { status: body.status } : {}),
          ...(body.progress !== undefined ? { progress: body.progress } : {}),
        });
        return { task: presentTask(task) };
      },
    }),
    defineRoute({
      method: 'DELETE',
      path: '/tasks/:task_id',
      permission: 'admin',
      summary: "Cancel a task (a running task's turn is interrupted); a finished task is 400",
      tags: ['tasks'],
      params,
      responses: [{ status: 200, description: 'The task, cancelled', schema: taskEnvelopeSchema }],
      handler: async (_ctx, { params: p }) => ({ task: presentTask(await service.cancel(p.task_id)) }),
    }),
  ];
}
