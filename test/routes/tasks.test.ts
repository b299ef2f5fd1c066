/**
 * Tasks API and task runner, in process against real SQLite and the fake
 * OpenAI server, through the gateway's own wiring (`internals(gateway).tasks`).
 * Changes are observed on the live feed (bus topic `tasks`).
 */
import type { LightMyRequestResponse } from 'fastify';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { Gateway } from '../../src/gateway.js';
import {
  presentTask,
  type TaskRunner,
  type TaskService,
  type TaskChangeEvent,
  type TaskView,
} from '../../src/tasks/index.js';
import {
  chatRequests,
  contentText,
  echoReply,
  lastOfRole,
  type FakeReply,
  type FakeToolCall,
} from '../helpers/fake-openai.js';
import { adminHeaders, apiHeaders, useHarness, type HarnessHook, type HarnessHookOptions } from '../helpers/harness.js';
import { internals } from '../helpers/internals.js';
import { ISO_MS } from './builders.js';

interface TasksEnv {
  gateway: Gateway;
  service: TaskService;
  runner: TaskRunner;
  /** Every change published on the live feed, in order. */
  events: Array<{ event: TaskChangeEvent; task: TaskView }>;
  inject(
    method: string,
    url: string,
    body?: unknown,
    headers?: Record<string, string>,
  ): Promise<LightMyRequestResponse>;
  /** Creates a task through the API (admin) and returns it. */
  create(body: Record<string, unknown>): Promise<TaskView>;
  /** Resolves with the task once `predicate` holds (checked now and on every published change). */
  until(id: string, predicate: (task: TaskView) => boolean, timeoutMs?: number): Promise<TaskView>;
  /** Stops watching the live feed (the hook shuts the gateway down). */
  close(): void;
}

interface EnvOptions {
  /** False: the runner is closed at once, so tasks stay where the API puts them. Default true. */
  runner?: boolean;
  maxConcurrent?: number;
}

/**
 * A harness hook for the tasks tests: `open()` builds the gateway (tasks
 * wired as gateway.ts wires them) and watches the live feed; the watch ends
 * after each test, before the hook shuts the gateway down.
 */
function useTasks(options: HarnessHookOptions = {}): { rig: HarnessHook; open(env?: EnvOptions): Promise<TasksEnv> } {
  const rig = useHarness({ ...options, autoOpen: false });
  const watches: Array<() => void> = [];
  afterEach(() => {
    for (const stop of watches.splice(0)) stop();
  });
  return {
    rig,
    async open(env = {}) {
      const harness = await rig.open({ config: { tasks: { max_concurrent: env.maxConcurrent ?? 2 } } });
      const tasks = await watchTasks(harness.gateway, env.runner ?? true);
      watches.push(tasks.close);
      return tasks;
    },
  };
}

async function watchTasks(gateway: Gateway, runnerOn: boolean): Promise<TasksEnv> {
  const { service, runner } = internals(gateway).tasks;
  if (!runnerOn) await runner.close();
  const events: TasksEnv['events'] = [];
  const watchers = new Set<(task: TaskView) => void>();
  const unsubscribe = internals(gateway).bus.subscribe(['tasks'], (message) => {
    const task = message.data as TaskView;
    events.push({ event: message.event as TaskChangeEvent, task });
    for (const watch of [...watchers]) watch(task);
  });
  const inject: TasksEnv['inject'] = (method, url, body, headers = adminHeaders) =>
    gateway.app.inject({
      method: method as 'GET',
      url,
      headers: { ...headers, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
      ...(body !== undefined ? { payload: JSON.stringify(body) } : {}),
    });
  return {
    gateway,
    service,
    runner,
    events,
    inject,
    async create(body) {
      const res = await inject('POST', '/api/v1/tasks', body);
      expect(res.statusCode, res.body).toBe(201);
      return res.json<{ task: TaskView }>().task;
    },
    until(id, predicate, timeoutMs = 10_000) {
      return new Promise((resolve, reject) => {
        const watch = (task: TaskView): void => {
          if (task.id !== id || !predicate(task)) return;
          clearTimeout(timer);
          watchers.delete(watch);
          resolve(task);
        };
        const timer = setTimeout(() => {
          watchers.delete(watch);
          reject(new Error(`task ${id} did not reach the expected state in ${timeoutMs} ms`));
        }, timeoutMs);
        watchers.add(watch);
        service.get(id).then((task) => task && watch(presentTask(task)), reject);
      });
    },
    close: unsubscribe,
  };
}

interface ErrorBody {
  error: { code: string; message: string; details: Array<{ path: string; message: string }> | Record<string, unknown> };
}

const detailPaths = (res: LightMyRequestResponse): string[] => {
  const details = res.json<ErrorBody>().error.details;
  return Array.isArray(details) ? details.map((d) => d.path) : [];
};

describe('tasks API', () => {
  const tasks = useTasks();
  let env: TasksEnv;
  beforeEach(async () => {
    env = await tasks.open({ runner: false });
  });

  describe('happy paths', () => {
    it('creates a task with the defaults and answers 201 {task}', async () => {
      const res = await env.inject('POST', '/api/v1/tasks', { title: 'Write the report' });
      expect(res.statusCode).toBe(201);
      const { task } = res.json<{ task: TaskView }>();
      expect(task).toMatchObject({
        title: 'Write the report',
        description: null,
        status: 'pending',
        priority: 'normal',
        priority_value: 5,
        labels: [],
        assignee: null,
        source: 'api',
        board_id: null,
        parent_task_id: null,
        metadata: {},
        progress: 0,
        session_key: null,
        event_id: null,
        result: null,
        error: null,
        started_at: null,
        finished_at: null,
      });
      expect(task.id).toMatch(/^tsk_[0-9a-z]{26}$/);
      expect(task.created_at).toMatch(ISO_MS);
      expect(task.updated_at).toBe(task.created_at);
    });

    it('stores every create field', async () => {
      const parent = await env.create({ title: 'parent' });
      const task = await env.create({
        title: 'child',
        description: 'details',
        priority: 9,
        labels: ['ops', 'urgent'],
        assignee: 'alice',
        source: 'channel',
        board_id: 'board-7',
        parent_task_id: parent.id,
        metadata: { ticket: 42, tags: ['a'] },
      });
      expect(task).toMatchObject({
        description: 'details',
        priority: 'urgent',
        priority_value: 9,
        labels: ['ops', 'urgent'],
        assignee: 'alice',
        source: 'channel',
        board_id: 'board-7',
        parent_task_id: parent.id,
        metadata: { ticket: 42, tags: ['a'] },
      });
    });

    it.each([
      [0, 'low'],
      [3, 'low'],
      [4, 'normal'],
      [6, 'normal'],
      [7, 'high'],
      [8, 'high'],
      [9, 'urgent'],
      [10, 'urgent'],
    ])('priority %i answers as %s', async (value, word) => {
      const task = await env.create({ title: 't', priority: value });
      expect(task.priority).toBe(word);
      expect(task.priority_value).toBe(value);
    });

    it('reads one task as {task}, also under the /api alias, with an api token', async () => {
      const created = await env.create({ title: 'one' });
      for (const url of [`/api/v1/tasks/${created.id}`, `/api/tasks/${created.id}`]) {
        const res = await env.inject('GET', url, undefined, apiHeaders);
        expect(res.statusCode).toBe(200);
        expect(res.json<{ task: TaskView }>().task).toEqual(created);
      }
    });

    it('lists newest first, filtered by status, priority word and limit', async () => {
      const low = await env.create({ title: 'low', priority: 1 });
      const normal = await env.create({ title: 'normal' });
      const high = await env.create({ title: 'high', priority: 8 });
      const urgent = await env.create({ title: 'urgent', priority: 10 });
      await env.inject('DELETE', `/api/v1/tasks/${normal.id}`);
      const list = async (query: string) => {
        const res = await env.inject('GET', `/api/v1/tasks${query}`, undefined, apiHeaders);
        expect(res.statusCode, res.body).toBe(200);
        return res.json<{ items: TaskView[] }>().items.map((t) => t.title);
      };
      expect(await list('')).toEqual(['urgent', 'high', 'normal', 'low']);
      expect(await list('?limit=2')).toEqual(['urgent', 'high']);
      expect(await list('?status=cancelled')).toEqual(['normal']);
      expect(await list('?status=pending')).toEqual(['urgent', 'high', 'low']);
      expect(await list('?priority=low')).toEqual(['low']);
      expect(await list('?priority=high')).toEqual(['high']);
      expect(await list('?priority=urgent&status=pending')).toEqual(['urgent']);
      expect(await list('?priority=normal&status=pending')).toEqual([]);
      const items = (await env.inject('GET', '/api/v1/tasks', undefined, apiHeaders)).json<{ items: TaskView[] }>()
        .items;
      expect(items.map((t) => t.priority)).toEqual(['urgent', 'high', 'normal', 'low']);
      expect(items.map((t) => t.id)).toEqual([urgent.id, high.id, normal.id, low.id]);
    });

    it('filters by session_id (the task’s session key)', async () => {
      await env.create({ title: 'a', priority: 9 });
      await env.create({ title: 'b' });
      // The runner sets the session key when it claims a task; do the same write here.
      await env.service.claimNext('gw_test', 10);
      const claimed = (await env.service.list({ status: 'running', limit: 10 }))[0]!;
      const res = await env.inject(
        'GET',
        `/api/v1/tasks?session_id=${encodeURIComponent(claimed.sessionKey!)}`,
        undefined,
        apiHeaders,
      );
      expect(res.json<{ items: TaskView[] }>().items.map((t) => t.id)).toEqual([claimed.id]);
      expect(claimed.sessionKey).toBe(`gateway:task:${claimed.id}`);
      const none = await env.inject('GET', '/api/v1/tasks?session_id=gateway%3Aapi%3Ax', undefined, apiHeaders);
      expect(none.json<{ items: TaskView[] }>().items).toEqual([]);
      expect(claimed.title).toBe('a');
    });

    it('publishes created, updated and cancelled changes', async () => {
      const task = await env.create({ title: 'watched', assignee: 'alice' });
      await env.inject('PATCH', `/api/v1/tasks/${task.id}`, { title: 'renamed' });
      await env.inject('DELETE', `/api/v1/tasks/${task.id}`);
      expect(env.events.map((e) => [e.event, e.task.title, e.task.status])).toEqual([
        ['created', 'watched', 'pending'],
        ['updated', 'renamed', 'pending'],
        ['cancelled', 'renamed', 'cancelled'],
      ]);
    });
  });

  describe('create validation', () => {
    it.each([
      ['priority true', { title: 't', priority: true }, 'body.priority'],
      ['priority "high"', { title: 't', priority: 'high' }, 'body.priority'],
      ['priority null', { title: 't', priority: null }, 'body.priority'],
      ['priority 5.5', { title: 't', priority: 5.5 }, 'body.priority'],
      ['priority 11', { title: 't', priority: 11 }, 'body.priority'],
      ['priority -1', { title: 't', priority: -1 }, 'body.priority'],
      ['labels "x"', { title: 't', labels: 'x' }, 'body.labels'],
      ['labels [1,2]', { title: 't', labels: [1, 2] }, 'body.labels.0'],
      ['metadata []', { title: 't', metadata: [] }, 'body.metadata'],
      ['metadata "x"', { title: 't', metadata: 'x' }, 'body.metadata'],
      ['missing title', { description: 'd' }, 'body.title'],
      ['empty title', { title: '' }, 'body.title'],
      ['title null', { title: null }, 'body.title'],
      ['title 5', { title: 5 }, 'body.title'],
      ['description 5', { title: 't', description: 5 }, 'body.description'],
      ['assignee true', { title: 't', assignee: true }, 'body.assignee'],
      ['source "email"', { title: 't', source: 'email' }, 'body.source'],
      ['board_id 3', { title: 't', board_id: 3 }, 'body.board_id'],
      ['unknown parent', { title: 't', parent_task_id: 'tsk_doesnotexist' }, 'body.parent_task_id'],
    ])('%s → 400 naming the field', async (_name, body, path) => {
      const res = await env.inject('POST', '/api/v1/tasks', body);
      expect(res.statusCode, res.body).toBe(400);
      expect(res.json<ErrorBody>().error.code).toBe('BAD_REQUEST');
      expect(detailPaths(res)).toContain(path);
    });

    it.each([
      ['[]', '[]'],
      ['null', 'null'],
      ['"text"', '"text"'],
      ['42', '42'],
    ])('a body of %s → 400', async (_name, raw) => {
      const res = await env.gateway.app.inject({
        method: 'POST',
        url: '/api/v1/tasks',
        headers: { ...adminHeaders, 'content-type': 'application/json' },
        payload: raw,
      });
      expect(res.statusCode, res.body).toBe(400);
      expect(res.json<ErrorBody>().error.code).toBe('BAD_REQUEST');
    });

    it('lists every problem in details', async () => {
      const res = await env.inject('POST', '/api/v1/tasks', {
        title: '',
        priority: true,
        labels: [1, 2],
        metadata: [],
        source: 'x',
      });
      expect(res.statusCode).toBe(400);
      expect(detailPaths(res).sort()).toEqual(
        ['body.labels.0', 'body.labels.1', 'body.metadata', 'body.priority', 'body.source', 'body.title'].sort(),
      );
      const details = res.json<ErrorBody>().error.details as Array<{ path: string; message: string }>;
      for (const d of details) expect(d.message).toEqual(expect.any(String));
    });

    it('creates nothing when invalid', async () => {
      await env.inject('POST', '/api/v1/tasks', { title: 't', priority: 5.5 });
      await env.inject('POST', '/api/v1/tasks', { title: 't', parent_task_id: 'tsk_nope' });
      expect(await env.service.list({ limit: 10 })).toEqual([]);
    });

    it('refuses bad list queries', async () => {
      for (const query of [
        'limit=0',
        'limit=501',
        'limit=abc',
        'limit=1.5',
        'priority=extreme',
        'priority=5',
        'status=done',
      ]) {
        const res = await env.inject('GET', `/api/v1/tasks?${query}`, undefined, apiHeaders);
        expect(res.statusCode, query).toBe(400);
      }
      expect((await env.inject('GET', '/api/v1/tasks?limit=500', undefined, apiHeaders)).statusCode).toBe(200);
    });

    it('answers 404 for an unknown task on every route', async () => {
      expect((await env.inject('GET', '/api/v1/tasks/tsk_nope', undefined, apiHeaders)).statusCode).toBe(404);
      expect((await env.inject('PATCH', '/api/v1/tasks/tsk_nope', { title: 'x' })).statusCode).toBe(404);
      expect((await env.inject('DELETE', '/api/v1/tasks/tsk_nope')).statusCode).toBe(404);
    });
  });

  describe('PATCH', () => {
    const patch = (id: string, body: unknown) => env.inject('PATCH', `/api/v1/tasks/${id}`, body);

    it('changes only the fields present and answers {task}', async () => {
      const task = await env.create({ title: 'orig', description: 'd', labels: ['a'], assignee: 'alice' });
      const res = await patch(task.id, { description: 'new', priority: 8 });
      expect(res.statusCode, res.body).toBe(200);
      const updated = res.json<{ task: TaskView }>().task;
      expect(updated).toMatchObject({
        title: 'orig',
        description: 'new',
        labels: ['a'],
        priority: 'high',
        priority_value: 8,
        assignee: 'alice',
      });
      expect((await patch(task.id, {})).json<{ task: TaskView }>().task).toMatchObject({ title: 'orig' });
    });

    it('validates present fields with the create rules', async () => {
      const task = await env.create({ title: 't', assignee: 'alice' });
      const cases: Array<[unknown, string]> = [
        [{ title: '' }, 'body.title'],
        [{ priority: true }, 'body.priority'],
        [{ priority: 'high' }, 'body.priority'],
        [{ priority: null }, 'body.priority'],
        [{ priority: 5.5 }, 'body.priority'],
        [{ labels: 'x' }, 'body.labels'],
        [{ labels: [1, 2] }, 'body.labels.0'],
        [{ metadata: [] }, 'body.metadata'],
        [{ source: 'email' }, 'body.source'],
        [{ progress: 1.5 }, 'body.progress'],
        [{ progress: true }, 'body.progress'],
        [{ status: 'done' }, 'body.status'],
        [{ parent_task_id: 'tsk_nope' }, 'body.parent_task_id'],
      ];
      for (const [body, path] of cases) {
        const res = await patch(task.id, body);
        expect(res.statusCode, JSON.stringify(body)).toBe(400);
        expect(detailPaths(res)).toContain(path);
      }
      for (const raw of ['[]', 'null']) {
        const res = await env.gateway.app.inject({
          method: 'PATCH',
          url: `/api/v1/tasks/${task.id}`,
          headers: { ...adminHeaders, 'content-type': 'application/json' },
          payload: raw,
        });
        expect(res.statusCode).toBe(400);
      }
      const unchanged = (await env.service.get(task.id))!;
      expect(unchanged).toMatchObject({ title: 't', priority: 5, labels: [], status: 'pending' });
    });

    it('clears optional fields with null and moves the parent, never into a cycle', async () => {
      const root = await env.create({ title: 'root' });
      const child = await env.create({ title: 'child', parent_task_id: root.id, assignee: 'bob', board_id: 'b' });
      const cycle = await patch(root.id, { parent_task_id: child.id });
      expect(cycle.statusCode).toBe(400);
      expect(detailPaths(cycle)).toContain('body.parent_task_id');
      expect((await patch(root.id, { parent_task_id: root.id })).statusCode).toBe(400);
      const cleared = await patch(child.id, { parent_task_id: null, assignee: null, board_id: null });
      expect(cleared.json<{ task: TaskView }>().task).toMatchObject({
        parent_task_id: null,
        assignee: null,
        board_id: null,
      });
      expect((await patch(root.id, { parent_task_id: child.id })).statusCode).toBe(200);
    });

    it('follows the allowed transitions and refuses the rest with 400', async () => {
      const task = await env.create({ title: 't', assignee: 'alice' });
      // A person may finish a pending task directly.
      const direct = await env.create({ title: 'd', assignee: 'alice' });
      expect((await patch(direct.id, { status: 'completed' })).statusCode).toBe(200);
      expect((await patch(direct.id, { status: 'running' })).statusCode).toBe(400);

      const running = await patch(task.id, { status: 'running', progress: 0.25 });
      expect(running.statusCode).toBe(200);
      const r = running.json<{ task: TaskView }>().task;
      expect(r).toMatchObject({ status: 'running', progress: 0.25 });
      expect(r.started_at).toMatch(ISO_MS);

      expect((await patch(task.id, { status: 'pending' })).statusCode).toBe(400);
      expect((await patch(task.id, { status: 'running', progress: 0.5 })).statusCode).toBe(200);
      expect((await patch(task.id, { progress: 0.75 })).json<{ task: TaskView }>().task.progress).toBe(0.75);

      const done = await patch(task.id, { status: 'completed' });
      const d = done.json<{ task: TaskView }>().task;
      expect(d).toMatchObject({ status: 'completed', progress: 1 });
      expect(d.finished_at).toMatch(ISO_MS);

      for (const status of ['pending', 'running', 'failed', 'cancelled']) {
        const res = await patch(task.id, { status });
        expect(res.statusCode, status).toBe(400);
        expect(res.json<ErrorBody>().error.code).toBe('BAD_REQUEST');
      }
      expect((await patch(task.id, { progress: 0.5 })).statusCode).toBe(400);
      // Other fields of a finished task may still change.
      expect((await patch(task.id, { labels: ['done'] })).statusCode).toBe(200);
    });

    it('fails and cancels along the transitions', async () => {
      const a = await env.create({ title: 'a', assignee: 'alice' });
      await patch(a.id, { status: 'running' });
      expect((await patch(a.id, { status: 'failed' })).json<{ task: TaskView }>().task.status).toBe('failed');
      const b = await env.create({ title: 'b', assignee: 'alice' });
      expect((await patch(b.id, { status: 'cancelled' })).json<{ task: TaskView }>().task.status).toBe('cancelled');
      expect((await patch(b.id, { status: 'running' })).statusCode).toBe(400);
    });
  });

  describe('DELETE', () => {
    it('cancels a pending task and answers 200 {task}', async () => {
      const task = await env.create({ title: 't' });
      const res = await env.inject('DELETE', `/api/v1/tasks/${task.id}`);
      expect(res.statusCode).toBe(200);
      const cancelled = res.json<{ task: TaskView }>().task;
      expect(cancelled).toMatchObject({ id: task.id, status: 'cancelled' });
      expect(cancelled.finished_at).toMatch(ISO_MS);
      const again = await env.inject('DELETE', `/api/v1/tasks/${task.id}`);
      expect(again.statusCode).toBe(400);
      expect(again.json<ErrorBody>().error.code).toBe('BAD_REQUEST');
    });

    it('refuses to cancel a completed or failed task with 400', async () => {
      for (const end of ['completed', 'failed']) {
        const task = await env.create({ title: end, assignee: 'alice' });
        await env.inject('PATCH', `/api/v1/tasks/${task.id}`, { status: 'running' });
        await env.inject('PATCH', `/api/v1/tasks/${task.id}`, { status: end });
        const res = await env.inject('DELETE', `/api/v1/tasks/${task.id}`);
        expect(res.statusCode, end).toBe(400);
        expect((await env.service.get(task.id))?.status).toBe(end);
      }
    });
  });

  describe('permissions', () => {
    it('needs admin for writes and api for reads', async () => {
      const task = await env.create({ title: 't' });
      const writes: Array<[string, string, unknown]> = [
        ['POST', '/api/v1/tasks', { title: 'x' }],
        ['PATCH', `/api/v1/tasks/${task.id}`, { title: 'x' }],
        ['DELETE', `/api/v1/tasks/${task.id}`, undefined],
      ];
      for (const [method, url, body] of writes) {
        const res = await env.inject(method, url, body, apiHeaders);
        expect(res.statusCode, `${method} ${url}`).toBe(403);
        expect(res.json<ErrorBody>().error.code).toBe('FORBIDDEN');
      }
      for (const url of ['/api/v1/tasks', `/api/v1/tasks/${task.id}`]) {
        expect((await env.inject('GET', url, undefined, apiHeaders)).statusCode).toBe(200);
        expect((await env.inject('GET', url, undefined, {})).statusCode).toBe(401);
      }
      expect((await env.service.get(task.id))?.status).toBe('pending');
      expect(await env.service.list({ limit: 10 })).toHaveLength(1);
    });
  });
});

describe('task runner', () => {
  // Turns a test does not script get the echo `fake: <text>`.
  const { rig, open } = useTasks({ fake: { always: echoReply } });

  const userTexts = () => chatRequests(rig.fake).map((body) => lastOfRole(body, 'user'));
  /**
   * A reply script keyed on the user's text, so concurrent turns (a task
   * created mid-turn runs beside it) each get their own answers: for
   * `trigger`, first the tool call, then `answer` once the tool result is
   * in; any other text is echoed as `fake: <text>`.
   */
  const toolThenAnswer =
    (trigger: string, call: FakeToolCall, answer: string): FakeReply =>
    (body) => {
      const text = lastOfRole(body, 'user') ?? '';
      if (text !== trigger) return echoReply;
      return (body.messages ?? []).some((m) => m.role === 'tool') ? { content: answer } : { tool_calls: [call] };
    };
  const ended = (t: TaskView) => t.status === 'completed' || t.status === 'failed' || t.status === 'cancelled';

  it('runs an agent task to completed with the provider’s answer', async () => {
    const env = await open();
    const task = await env.create({ title: 'Summarise the logs', description: 'Focus on errors.' });
    const done = await env.until(task.id, ended);
    expect(done).toMatchObject({
      status: 'completed',
      progress: 1,
      result: 'fake: Summarise the logs\n\nFocus on errors.',
      session_key: `gateway:task:${task.id}`,
      error: null,
    });
    expect(done.event_id).toMatch(/^evt_/);
    expect(done.started_at).toMatch(ISO_MS);
    expect(done.finished_at).toMatch(ISO_MS);
    expect(userTexts()).toEqual(['Summarise the logs\n\nFocus on errors.']);

    const turn = await env.inject('GET', `/api/v1/turns/${done.event_id}`);
    expect(turn.json()).toMatchObject({ status: 'completed', session_key: `gateway:task:${task.id}` });
    const view = await env.inject('GET', `/api/v1/tasks/${task.id}`, undefined, apiHeaders);
    expect(view.json<{ task: TaskView }>().task).toEqual(done);
    const listed = await env.inject(
      'GET',
      `/api/v1/tasks?session_id=${encodeURIComponent(`gateway:task:${task.id}`)}`,
      undefined,
      apiHeaders,
    );
    expect(listed.json<{ items: TaskView[] }>().items.map((t) => t.id)).toEqual([task.id]);
    expect(env.events.filter((e) => e.task.id === task.id).map((e) => [e.event, e.task.status])).toEqual([
      ['created', 'pending'],
      ['updated', 'running'], // claimed
      ['updated', 'running'], // turn recorded
      ['completed', 'completed'],
    ]);
  });

  it('runs the highest priority first, then the oldest, one at a time with max_concurrent 1', async () => {
    const env = await open({ maxConcurrent: 1 });
    rig.fake.enqueue({ hang: true });
    const blocker = await env.create({ title: 'blocker', priority: 10 });
    await env.until(blocker.id, (t) => t.status === 'running' && t.event_id !== null);
    await vi.waitFor(() => expect(chatRequests(rig.fake)).toHaveLength(1), { timeout: 5_000, interval: 10 });
    // Queued while the one slot is taken.
    const low = await env.create({ title: 'p2', priority: 2 });
    await env.create({ title: 'p9', priority: 9 });
    await env.create({ title: 'p5' });
    await env.create({ title: 'p9 later', priority: 9 });
    expect((await env.service.list({ status: 'pending', limit: 10 })).map((t) => t.title).sort()).toEqual(
      ['p2', 'p5', 'p9', 'p9 later'].sort(),
    );
    const before = env.events.length;
    expect((await env.inject('DELETE', `/api/v1/tasks/${blocker.id}`)).statusCode).toBe(200);
    await env.until(low.id, ended);

    expect(userTexts()).toEqual(['blocker', 'p9', 'p9 later', 'p5', 'p2']);
    const running = new Set<string>();
    let most = 0;
    for (const { event, task } of env.events.slice(before)) {
      if (task.status === 'running') running.add(task.id);
      if (event === 'completed' || event === 'failed' || event === 'cancelled') running.delete(task.id);
      most = Math.max(most, running.size);
    }
    expect(most).toBe(1);
    expect((await env.service.list({ status: 'completed', limit: 10 })).map((t) => t.title)).toHaveLength(4);
  });

  it('leaves a task assigned to a person alone', async () => {
    const env = await open();
    const human = await env.create({ title: 'Call the customer', assignee: 'alice', priority: 10 });
    const agent = await env.create({ title: 'Draft the notes', assignee: 'agent', priority: 0 });
    expect((await env.until(agent.id, ended)).status).toBe('completed');
    expect((await env.service.get(human.id))?.status).toBe('pending');
    expect(userTexts()).toEqual(['Draft the notes']);
  });

  it('fails a task whose turn fails, with the error', async () => {
    const env = await open();
    rig.fake.enqueue({ status: 400, body: { error: { message: 'bad model', type: 'invalid_request_error' } } });
    const task = await env.create({ title: 'Doomed' });
    const failed = await env.until(task.id, ended);
    expect(failed.status).toBe('failed');
    expect(failed.error).toMatch(/model provider failed/);
    expect(failed.result).toBeNull();
    expect(env.events.at(-1)?.event).toBe('failed');
  });

  it('cancelling a running task interrupts its turn; the task stays cancelled', async () => {
    const env = await open();
    rig.fake.enqueue({ hang: true });
    const task = await env.create({ title: 'Never ends' });
    const running = await env.until(task.id, (t) => t.status === 'running' && t.event_id !== null);
    await vi.waitFor(() => expect(chatRequests(rig.fake)).toHaveLength(1), { timeout: 5_000, interval: 10 });
    const res = await env.inject('DELETE', `/api/v1/tasks/${task.id}`);
    expect(res.statusCode).toBe(200);
    expect(res.json<{ task: TaskView }>().task).toMatchObject({ id: task.id, status: 'cancelled' });
    const turn = await internals(env.gateway).messages.waitFor(running.event_id!, 5_000);
    expect(turn).toMatchObject({ status: 'interrupted', terminationReason: 'task_cancelled' });
    // The run lets go of the task, which stays cancelled.
    await vi.waitFor(() => expect(env.runner.running()).toEqual([]), { timeout: 5_000, interval: 10 });
    expect(await env.service.get(task.id)).toMatchObject({ status: 'cancelled', error: null, result: null });
    expect(env.events.filter((e) => e.task.id === task.id).map((e) => e.event)).not.toContain('failed');
    expect((await env.inject('DELETE', `/api/v1/tasks/${task.id}`)).statusCode).toBe(400);
  });

  it('runs a task the agent created with task_create', async () => {
    const env = await open();
    rig.fake.always(
      toolThenAnswer(
        'Remind ops tomorrow',
        { name: 'task_create', arguments: { title: 'Follow up with ops', priority: 8, labels: ['ops'] } },
        'I created a follow-up task.',
      ),
    );
    const res = await env.gateway.app.inject({
      method: 'POST',
      url: '/api/v1/message',
      headers: apiHeaders,
      payload: { platform: 'api', user_id: 'u1', chat_id: 'c1', text: 'Remind ops tomorrow', wait: true },
    });
    expect(res.statusCode, res.body).toBe(200);
    const reply = res.json<{
      response: string;
      message: { tool_calls: Array<{ name: string; result?: unknown }> };
    }>();
    expect(reply.response).toBe('I created a follow-up task.');
    expect(reply.message.tool_calls.map((c) => c.name)).toEqual(['task_create']);

    const [created] = await env.service.list({ source: 'agent', limit: 10 });
    expect(created).toMatchObject({
      title: 'Follow up with ops',
      priority: 8,
      labels: ['ops'],
      source: 'agent',
      parentTaskId: null,
      metadata: { created_by: { session_key: 'gateway:api:c1' } },
    });
    const done = await env.until(created!.id, ended);
    expect(done).toMatchObject({ status: 'completed', result: 'fake: Follow up with ops' });
    expect(userTexts().sort()).toEqual(['Follow up with ops', 'Remind ops tomorrow', 'Remind ops tomorrow']);
    const list = await env.inject('GET', '/api/v1/tasks?priority=high&status=completed', undefined, apiHeaders);
    expect(list.json<{ items: TaskView[] }>().items.map((t) => [t.title, t.source, t.priority])).toEqual([
      ['Follow up with ops', 'agent', 'high'],
    ]);
  });

  it('nests a task created from a task’s own session under that task', async () => {
    const env = await open();
    rig.fake.always(toolThenAnswer('Big job', { name: 'task_create', arguments: { title: 'Sub-step' } }, 'split it'));
    const parent = await env.create({ title: 'Big job' });
    expect((await env.until(parent.id, ended)).result).toBe('split it');
    const [child] = await env.service.list({ parentTaskId: parent.id, limit: 10 });
    expect(child).toMatchObject({ title: 'Sub-step', source: 'agent' });
    expect((await env.until(child!.id, ended)).status).toBe('completed');
  });

  it('refuses invalid task_create arguments, reporting them to the model', async () => {
    const env = await open();
    rig.fake.enqueue(
      { tool_calls: [{ name: 'task_create', arguments: { title: '', priority: 'high' } }] },
      { content: 'could not create it' },
    );
    const res = await env.gateway.app.inject({
      method: 'POST',
      url: '/api/v1/message',
      headers: apiHeaders,
      payload: { platform: 'api', user_id: 'u1', chat_id: 'c2', text: 'make a task', wait: true },
    });
    expect(res.statusCode, res.body).toBe(200);
    const toolMessage = chatRequests(rig.fake)[1]!.messages!.find((m) => m.role === 'tool');
    expect(contentText(toolMessage?.content)).toMatch(/title/);
    expect(contentText(toolMessage?.content)).toMatch(/priority/);
    expect(await env.service.list({ limit: 10 })).toEqual([]);
  });
});
