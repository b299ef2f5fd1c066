/**
 * Tasks and principals (DECISIONS §18) over app.inject: a task belongs to
 * the principal that created it (POST /tasks: the caller; `task_create`: the
 * principal owning the agent's session, so subtasks inherit it); a
 * configured principal reads only its own tasks (another's is 404), while
 * admins, the default principal and anonymous callers read every task, and
 * admins filter with ?principal=. A task's turn runs in a session of its
 * principal.
 */
import { describe, expect, it, vi } from 'vitest';
import type { TaskView } from '../../src/tasks/index.js';
import { echoReply, lastOfRole, type FakeReply } from '../helpers/fake-openai.js';
import { adminHeaders, apiHeaders, useHarness, type Harness } from '../helpers/harness.js';

const ALICE = { 'x-api-token': 'alice-token-0123456789abcdef' };
const BOB = { 'x-api-token': 'bob-token-0123456789abcdef' };
const PRINCIPALS = {
  gateway: {
    auth: {
      principals: [
        { id: 'alice', tokens: [ALICE['x-api-token']] },
        { id: 'bob', tokens: [BOB['x-api-token']] },
      ],
    },
  },
};
const enc = encodeURIComponent;

const get = (h: Harness, url: string, headers: Record<string, string>) => h.inject({ method: 'GET', url, headers });
const titles = async (h: Harness, headers: Record<string, string>, query = '') => {
  const res = await get(h, `/api/v1/tasks${query}`, headers);
  expect(res.statusCode, res.body).toBe(200);
  return res
    .json<{ items: TaskView[] }>()
    .items.map((t) => t.title)
    .sort();
};

describe('tasks and principals', () => {
  const rig = useHarness({ config: PRINCIPALS });

  it("lists only a configured principal's own tasks and answers 404 for another's; admins see all and filter", async () => {
    const h = rig;
    const { service } = h.internals.tasks;
    // Assigned to a person, so the runner leaves them pending.
    const alices = await service.create({ title: 'alice 1', assignee: 'someone', principal: 'alice' });
    await service.create({ title: 'alice 2', assignee: 'someone', principal: 'alice' });
    const bobs = await service.create({ title: 'bob 1', assignee: 'someone', principal: 'bob' });
    const posted = await h.inject({
      method: 'POST',
      url: '/api/v1/tasks',
      headers: adminHeaders,
      payload: { title: 'admin 1', assignee: 'someone' },
    });
    expect(posted.statusCode, posted.body).toBe(201);
    const adminTask = posted.json<{ task: TaskView }>().task;
    expect(adminTask.principal).toBe('default'); // admin_tokens belong to the default principal

    expect(await titles(h, ALICE)).toEqual(['alice 1', 'alice 2']);
    expect(await titles(h, ALICE, '?principal=bob')).toEqual(['alice 1', 'alice 2']); // its filter is itself
    expect(await titles(h, BOB)).toEqual(['bob 1']);
    const all = ['admin 1', 'alice 1', 'alice 2', 'bob 1'];
    expect(await titles(h, adminHeaders)).toEqual(all);
    expect(await titles(h, apiHeaders)).toEqual(all); // the default principal sees every task, as before
    expect(await titles(h, adminHeaders, '?principal=alice')).toEqual(['alice 1', 'alice 2']);
    expect(await titles(h, adminHeaders, '?principal=default')).toEqual(['admin 1']);
    expect(await titles(h, adminHeaders, '?principal=nobody')).toEqual([]);
    expect((await get(h, '/api/v1/tasks?principal=', adminHeaders)).statusCode).toBe(400);

    const own = await get(h, `/api/v1/tasks/${alices.id}`, ALICE);
    expect(own.statusCode).toBe(200);
    expect(own.json<{ task: TaskView }>().task).toMatchObject({ id: alices.id, principal: 'alice' });
    for (const [id, headers] of [
      [bobs.id, ALICE],
      [alices.id, BOB],
      [adminTask.id, ALICE],
    ] as const) {
      const res = await get(h, `/api/v1/tasks/${id}`, headers);
      expect(res.statusCode, id).toBe(404);
      expect(res.json()).toMatchObject({ error: { code: 'NOT_FOUND' } });
    }
    for (const headers of [adminHeaders, apiHeaders]) {
      expect((await get(h, `/api/v1/tasks/${alices.id}`, headers)).statusCode).toBe(200);
    }
    // Writes stay admin-only.
    const write = await h.inject({ method: 'POST', url: '/api/v1/tasks', headers: ALICE, payload: { title: 'x' } });
    expect(write.statusCode).toBe(403);
  });
});

describe('tasks the agent creates', () => {
  /**
   * `Plan the trip` creates `Book flights`; the task `Book flights` creates
   * `Compare prices` (a subtask, in the task's own session); anything else,
   * and each of them once the tool result is in, is echoed.
   */
  const script: FakeReply = (body) => {
    const text = lastOfRole(body, 'user') ?? '';
    const next = text === 'Plan the trip' ? 'Book flights' : text === 'Book flights' ? 'Compare prices' : null;
    if (next === null || (body.messages ?? []).some((m) => m.role === 'tool')) return echoReply;
    return { tool_calls: [{ name: 'task_create', arguments: { title: next } }] };
  };
  const rig = useHarness({ fake: { always: script }, config: PRINCIPALS });

  it("belong to the principal owning the session, subtasks too, and run in that principal's sessions", async () => {
    const h = rig;
    const { service } = h.internals.tasks;
    const res = await h.message(
      { platform: 'api', user_id: 'u1', chat_id: 'c1', text: 'Plan the trip', wait: true },
      ALICE,
    );
    expect(res.statusCode, res.body).toBe(200);

    const finished = (title: string) =>
      vi.waitFor(
        async () => {
          const [task] = (await service.list({ limit: 10 })).filter((t) => t.title === title);
          expect(task?.status).toBe('completed');
          return task!;
        },
        { timeout: 10_000, interval: 20 },
      );
    const parent = await finished('Book flights');
    const child = await finished('Compare prices');
    expect(parent).toMatchObject({ source: 'agent', principal: 'alice', parentTaskId: null });
    expect(child).toMatchObject({ source: 'agent', principal: 'alice', parentTaskId: parent.id });

    // Their turns ran in sessions of alice's: hers to read, not bob's; admins find them under her.
    for (const task of [parent, child]) {
      const session = `/api/v1/sessions/${enc(`gateway:task:${task.id}`)}`;
      expect((await get(h, session, ALICE)).statusCode).toBe(200);
      expect((await get(h, session, BOB)).statusCode).toBe(404);
    }
    const sessions = await get(h, '/api/v1/sessions?principal=alice&limit=100', adminHeaders);
    expect(
      sessions
        .json<{ items: Array<{ id: string }> }>()
        .items.map((s) => s.id)
        .sort(),
    ).toEqual(['gateway:api@alice:c1', `gateway:task:${child.id}`, `gateway:task:${parent.id}`].sort());

    expect(await titles(h, ALICE)).toEqual(['Book flights', 'Compare prices']);
    expect(await titles(h, BOB)).toEqual([]);
  });

  it('belong to the default principal when its token asks', async () => {
    const h = rig;
    const res = await h.message(
      { platform: 'api', user_id: 'u1', chat_id: 'c2', text: 'Plan the trip', wait: true },
      apiHeaders,
    );
    expect(res.statusCode, res.body).toBe(200);
    const tasks = await vi.waitFor(
      async () => {
        const all = await h.internals.tasks.service.list({ limit: 10 });
        expect(all.map((t) => t.status)).toEqual(['completed', 'completed']);
        return all;
      },
      { timeout: 10_000, interval: 20 },
    );
    expect(tasks.map((t) => t.principal)).toEqual(['default', 'default']);
    expect(await titles(h, BOB)).toEqual([]);
    expect(await titles(h, apiHeaders)).toEqual(['Book flights', 'Compare prices']);
  });
});
