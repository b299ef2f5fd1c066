import type { Kysely } from 'kysely';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { ManualClock } from '../lib/clock.js';
import { createIdGenerator } from '../lib/ids.js';
import type { Database } from '../store/database.js';
import type { Store } from '../store/index.js';
import { type TestStore, describeBackends } from '../../test/helpers/stores.js';
import { finishTurn, insertTurn } from '../turns/turns.repo.js';
import {
  claimNextTask,
  countTasksCompletedSince,
  getTask,
  insertTask,
  listTasks,
  orphanedClaims,
  parentOf,
  runningTasksWithFinishedTurns,
  setTaskEvent,
  TASK_CLAIM_LOCK,
  updateTask,
  type NewTask,
  type TaskRecord,
} from './tasks.repo.js';
import { TaskService } from './tasks.service.js';

const BASE = Date.UTC(2026, 10, 21, 10, 0, 0, 0);
/** ISO timestamp `minutes` after the base time. */
const at = (minutes: number): string => new Date(BASE + minutes * 60_000).toISOString();
const range = (n: number): number[] => Array.from({ length: n }, (_, i) => i);

/** A pending task `tsk_<n>` created at minute `n`. */
function newTask(n: number, extra: Partial<NewTask> = {}): NewTask {
  return {
    id: `tsk_${String(n).padStart(4, '0')}`,
    title: `task ${n}`,
    description: null,
    priority: 5,
    labels: [],
    assignee: null,
    source: 'api',
    boardId: null,
    parentTaskId: null,
    metadata: {},
    now: at(n),
    ...extra,
  };
}

describeBackends('tasks repository', (backend) => {
  let t: TestStore;
  let db: Kysely<Database>;

  beforeEach(async () => {
    t = await backend.open();
    db = t.store.db;
  });
  afterEach(async () => {
    await t.cleanup();
  });

  const insert = (task: NewTask) => t.store.writer.run((trx) => insertTask(trx, task));
  const claim = (maxRunning: number, owner = 'gw_a', now = at(100)) =>
    t.store.exclusive(TASK_CLAIM_LOCK, (trx) => claimNextTask(trx, { owner, maxRunning, now }));

  it('stores every field and reads it back', async () => {
    const created = await insert(
      newTask(1, {
        description: 'do it',
        priority: 9,
        labels: ['a', 'b'],
        assignee: 'alice',
        source: 'cron',
        boardId: 'board-1',
        metadata: { nested: { x: [1, 'two'] } },
      }),
    );
    const expected: TaskRecord = {
      id: 'tsk_0001',
      title: 'task 1',
      description: 'do it',
      status: 'pending',
      priority: 9,
      labels: ['a', 'b'],
      assignee: 'alice',
      source: 'cron',
      boardId: 'board-1',
      parentTaskId: null,
      metadata: { nested: { x: [1, 'two'] } },
      progress: 0,
      sessionKey: null,
      eventId: null,
      claimedBy: null,
      result: null,
      error: null,
      createdAt: at(1),
      startedAt: null,
      finishedAt: null,
      updatedAt: at(1),
      principal: 'default', // none given: the default principal's
    };
    expect(created).toEqual(expected);
    expect(await getTask(db, 'tsk_0001')).toEqual(expected);
    expect(await getTask(db, 'tsk_missing')).toBeNull();
  });

  it('stores the owning principal and filters by it', async () => {
    await insert(newTask(1));
    await insert(newTask(2, { principal: 'alice' }));
    await insert(newTask(3, { principal: 'bob' }));
    await insert(newTask(4, { principal: 'alice', parentTaskId: 'tsk_0002' }));
    expect((await getTask(db, 'tsk_0001'))?.principal).toBe('default');
    expect((await getTask(db, 'tsk_0002'))?.principal).toBe('alice');
    const ids = async (principal?: string) =>
      (await listTasks(db, { ...(principal !== undefined ? { principal } : {}), limit: 50 })).map((x) => x.id);
    expect(await ids('alice')).toEqual(['tsk_0004', 'tsk_0002']);
    expect(await ids('bob')).toEqual(['tsk_0003']);
    expect(await ids('default')).toEqual(['tsk_0001']);
    expect(await ids('carol')).toEqual([]);
    expect(await ids()).toEqual(['tsk_0004', 'tsk_0003', 'tsk_0002', 'tsk_0001']);
    expect((await listTasks(db, { principal: 'alice', parentTaskId: 'tsk_0002', limit: 50 })).map((x) => x.id)).toEqual(
      ['tsk_0004'],
    );
    // A claim and an update keep the owner.
    expect(await claim(5)).toMatchObject({ id: 'tsk_0001', principal: 'default' });
    expect(await claim(5)).toMatchObject({ id: 'tsk_0002', principal: 'alice' });
    const updated = await t.store.writer.run((trx) =>
      updateTask(trx, 'tsk_0003', { expectedStatus: 'pending', changes: { title: 'renamed' }, now: at(5) }),
    );
    expect(updated).toMatchObject({ title: 'renamed', principal: 'bob' });
  });

  it('knows parents: null for a root, undefined for an unknown task', async () => {
    await insert(newTask(1));
    await insert(newTask(2, { parentTaskId: 'tsk_0001' }));
    expect(await parentOf(db, 'tsk_0002')).toBe('tsk_0001');
    expect(await parentOf(db, 'tsk_0001')).toBeNull();
    expect(await parentOf(db, 'tsk_nope')).toBeUndefined();
  });

  it('lists newest first with a limit', async () => {
    for (const n of range(5)) await insert(newTask(n));
    const all = await listTasks(db, { limit: 50 });
    expect(all.map((x) => x.id)).toEqual(['tsk_0004', 'tsk_0003', 'tsk_0002', 'tsk_0001', 'tsk_0000']);
    expect((await listTasks(db, { limit: 2 })).map((x) => x.id)).toEqual(['tsk_0004', 'tsk_0003']);
  });

  it('filters by priority word on the integer ranges', async () => {
    for (const p of range(11)) await insert(newTask(p, { priority: p }));
    const values = async (priority: 'low' | 'normal' | 'high' | 'urgent') =>
      (await listTasks(db, { priority, limit: 50 })).map((x) => x.priority).sort((a, b) => a - b);
    expect(await values('low')).toEqual([0, 1, 2, 3]);
    expect(await values('normal')).toEqual([4, 5, 6]);
    expect(await values('high')).toEqual([7, 8]);
    expect(await values('urgent')).toEqual([9, 10]);
  });

  it('filters by status, session, assignee, source, board and parent', async () => {
    await insert(newTask(1, { assignee: 'alice', source: 'cron', boardId: 'b1' }));
    await insert(newTask(2, { parentTaskId: 'tsk_0001' }));
    await insert(newTask(3));
    await t.store.writer.run((trx) =>
      updateTask(trx, 'tsk_0003', { expectedStatus: 'pending', changes: { status: 'cancelled' }, now: at(4) }),
    );
    const claimed = await claim(5);
    expect(claimed?.id).toBe('tsk_0002');
    const ids = async (options: Parameters<typeof listTasks>[1]) => (await listTasks(db, options)).map((x) => x.id);
    expect(await ids({ status: 'cancelled', limit: 50 })).toEqual(['tsk_0003']);
    expect(await ids({ status: 'running', limit: 50 })).toEqual(['tsk_0002']);
    expect(await ids({ sessionKey: 'gateway:task:tsk_0002', limit: 50 })).toEqual(['tsk_0002']);
    expect(await ids({ assignee: 'alice', limit: 50 })).toEqual(['tsk_0001']);
    expect(await ids({ source: 'cron', limit: 50 })).toEqual(['tsk_0001']);
    expect(await ids({ boardId: 'b1', limit: 50 })).toEqual(['tsk_0001']);
    expect(await ids({ parentTaskId: 'tsk_0001', limit: 50 })).toEqual(['tsk_0002']);
  });

  it('updates only while the status is the expected one (compare-and-set)', async () => {
    await insert(newTask(1));
    const moved = await t.store.writer.run((trx) =>
      updateTask(trx, 'tsk_0001', {
        expectedStatus: 'pending',
        changes: { status: 'running', title: 'renamed', labels: ['x'], metadata: { a: 1 }, progress: 0.25 },
        now: at(2),
      }),
    );
    expect(moved).toMatchObject({ status: 'running', title: 'renamed', labels: ['x'], metadata: { a: 1 } });
    expect(moved?.progress).toBe(0.25);
    expect(moved?.updatedAt).toBe(at(2));
    const stale = await t.store.writer.run((trx) =>
      updateTask(trx, 'tsk_0001', { expectedStatus: 'pending', changes: { status: 'cancelled' }, now: at(3) }),
    );
    expect(stale).toBeNull();
    expect((await getTask(db, 'tsk_0001'))?.status).toBe('running');
  });

  it('claims the highest priority first, then the oldest, and only agent tasks', async () => {
    await insert(newTask(1, { priority: 5 }));
    await insert(newTask(2, { priority: 9, assignee: 'alice' })); // a person's task: never claimed
    await insert(newTask(3, { priority: 8 }));
    await insert(newTask(4, { priority: 8, assignee: 'agent' }));
    await insert(newTask(5, { priority: 2 }));
    const order: string[] = [];
    for (;;) {
      const task = await claim(10);
      if (!task) break;
      order.push(task.id);
    }
    expect(order).toEqual(['tsk_0003', 'tsk_0004', 'tsk_0001', 'tsk_0005']);
    const claimed = await getTask(db, 'tsk_0003');
    expect(claimed).toMatchObject({
      status: 'running',
      claimedBy: 'gw_a',
      sessionKey: 'gateway:task:tsk_0003',
      startedAt: at(100),
      progress: 0,
    });
    expect((await getTask(db, 'tsk_0002'))?.status).toBe('pending');
  });

  it('claims no more than maxRunning claimed tasks; people’s running tasks do not count', async () => {
    for (const n of range(4)) await insert(newTask(n));
    await insert(newTask(10, { assignee: 'alice' }));
    await t.store.writer.run((trx) =>
      updateTask(trx, 'tsk_0010', { expectedStatus: 'pending', changes: { status: 'running' }, now: at(11) }),
    );
    expect(await claim(2)).not.toBeNull();
    expect(await claim(2)).not.toBeNull();
    expect(await claim(2)).toBeNull();
    await t.store.writer.run((trx) =>
      updateTask(trx, 'tsk_0000', { expectedStatus: 'running', changes: { status: 'completed' }, now: at(12) }),
    );
    expect((await claim(2))?.id).toBe('tsk_0002');
  });

  it('lets concurrent claims from several connections take at most maxRunning tasks, each once', async () => {
    for (const n of range(8)) await insert(newTask(n, { priority: n }));
    const stores: Store[] =
      backend.name === 'sqlite' ? [t.store] : [t.store, ...(await Promise.all(range(3).map(() => t.reopen())))];
    const clock = new ManualClock(BASE + 3_600_000);
    const services = stores.map((store) => new TaskService({ store, clock, ids: createIdGenerator(clock) }));
    const results = await Promise.all(range(24).map((i) => services[i % services.length]!.claimNext(`gw_${i % 4}`, 3)));
    const won = results.filter((r): r is TaskRecord => r !== null).map((r) => r.id);
    expect(won).toHaveLength(3);
    expect(new Set(won).size).toBe(3);
    expect(won.sort()).toEqual(['tsk_0005', 'tsk_0006', 'tsk_0007']);
    expect(await listTasks(db, { status: 'running', limit: 50 })).toHaveLength(3);
  });

  it('gives every concurrent claim with room a task of its own (claims queue, they do not collide)', async () => {
    for (const n of range(8)) await insert(newTask(n, { priority: n }));
    const stores: Store[] =
      backend.name === 'sqlite' ? [t.store] : [t.store, ...(await Promise.all(range(3).map(() => t.reopen())))];
    const clock = new ManualClock(BASE + 3_600_000);
    const services = stores.map((store) => new TaskService({ store, clock, ids: createIdGenerator(clock) }));
    const results = await Promise.all(range(4).map((i) => services[i % services.length]!.claimNext(`gw_${i}`, 4)));
    expect(results.map((r) => r?.id).sort()).toEqual(['tsk_0004', 'tsk_0005', 'tsk_0006', 'tsk_0007']);
  });

  it('records a task’s turn once', async () => {
    await insert(newTask(1));
    expect(await t.store.writer.run((trx) => setTaskEvent(trx, 'tsk_0001', 'evt_1', at(2)))).toBe(true);
    expect(await t.store.writer.run((trx) => setTaskEvent(trx, 'tsk_0001', 'evt_2', at(3)))).toBe(false);
    expect((await getTask(db, 'tsk_0001'))?.eventId).toBe('evt_1');
  });

  it('finds claimed running tasks whose turn has ended, and claims that never got a turn', async () => {
    for (const n of range(4)) await insert(newTask(n));
    for (const _ of range(4)) await claim(10, 'gw_dead');
    const turn = async (eventId: string, status?: 'completed' | 'interrupted') => {
      await t.store.writer.run(async (trx) => {
        await insertTurn(trx, {
          eventId,
          sessionKey: `gateway:task:${eventId}`,
          contextEpoch: 0,
          payload: {},
          owner: 'gw_dead',
          now: at(101),
        });
        if (status) {
          await finishTurn(trx, eventId, {
            status,
            response: status === 'completed' ? 'done' : null,
            terminationReason: status === 'completed' ? 'completed' : 'process_restart',
            result: null,
            now: at(102),
          });
        }
      });
    };
    await turn('evt_0', 'completed');
    await turn('evt_1', 'interrupted');
    await turn('evt_2'); // still accepted: not finished
    await t.store.writer.run(async (trx) => {
      await setTaskEvent(trx, 'tsk_0000', 'evt_0', at(101));
      await setTaskEvent(trx, 'tsk_0001', 'evt_1', at(101));
      await setTaskEvent(trx, 'tsk_0002', 'evt_2', at(101));
    });
    const ended = await runningTasksWithFinishedTurns(db, 10);
    expect(ended.map((x) => x.id).sort()).toEqual(['tsk_0000', 'tsk_0001']);
    expect((await orphanedClaims(db, ['gw_live'], 10)).map((x) => x.id)).toEqual(['tsk_0003']);
    expect(await orphanedClaims(db, ['gw_dead'], 10)).toEqual([]);
  });

  it('counts tasks completed since a time', async () => {
    for (const n of range(3)) await insert(newTask(n));
    const complete = (id: string, minute: number) =>
      t.store.writer.run((trx) =>
        updateTask(trx, id, {
          expectedStatus: 'pending',
          changes: { status: 'completed', finishedAt: at(minute) },
          now: at(minute),
        }),
      );
    await complete('tsk_0000', 10);
    await complete('tsk_0001', 20);
    expect(await countTasksCompletedSince(db, at(0))).toBe(2);
    expect(await countTasksCompletedSince(db, at(15))).toBe(1);
    expect(await countTasksCompletedSince(db, at(30))).toBe(0);
  });
});
