import { afterEach, beforeEach, expect, it, vi } from 'vitest';
import { ManualClock, isoTime } from '../lib/clock.js';
import { createIdGenerator } from '../lib/ids.js';
import { createLogger } from '../logs/index.js';
import { type TestStore, describeBackends } from '../../test/helpers/stores.js';
import { payloadOf, type Inbound } from '../turns/index.js';
import { TurnEventHub } from '../turns/turn-events.js';
import { TurnWaiters } from '../turns/turn-waiters.js';
import { claimTurn, finishTurn, getTurn, insertTurn, pauseTurn } from '../turns/turns.repo.js';
import { TaskRunner, outcomeOf, taskPrincipal, taskPrompt, type TaskTimers } from './task-runner.js';
import { setTaskEvent, type TaskRecord } from './tasks.repo.js';
import { TaskService } from './tasks.service.js';

const OWNER = 'gw_self';
const logger = createLogger({ level: 'error', stdout: { write: () => undefined } });

/** Timers driven by the test: `tick()` runs every registered interval once. */
function manualTimers(): TaskTimers & { tick(): void; active: number } {
  const fns = new Set<() => void>();
  return {
    every(_ms, fn) {
      fns.add(fn);
      return () => fns.delete(fn);
    },
    tick() {
      for (const fn of fns) fn();
    },
    get active() {
      return fns.size;
    },
  };
}

describeBackends('task runner', (backend) => {
  let t: TestStore;
  let clock: ManualClock;
  let service: TaskService;
  let timers: ReturnType<typeof manualTimers>;
  let submitted: Inbound[];
  let interrupts: Array<[string, string]>;
  /** Turns the stand-in turn runner reports as running in this process. */
  let localTurns: string[];
  let runner: TaskRunner;
  const now = () => isoTime(clock.now());

  beforeEach(async () => {
    t = await backend.open();
    clock = new ManualClock();
    service = new TaskService({ store: t.store, clock, ids: createIdGenerator(clock) });
    timers = manualTimers();
    submitted = [];
    interrupts = [];
    localTurns = [];
    const ids = createIdGenerator(clock);
    const hub = new TurnEventHub({ store: t.store, clock, logger });
    const waiters = new TurnWaiters({ store: t.store, hub, maxWaiters: 100, pollMs: 10 });
    runner = new TaskRunner({
      service,
      store: t.store,
      clock,
      logger,
      // The message path's door over stand-ins: waiters and the ledger are real, the turn runner is not.
      messages: {
        // Intake stand-in: stores the accepted turn in the ledger, as the real one does.
        async submit(input) {
          submitted.push(input);
          const eventId = ids.next('evt');
          const payload = payloadOf(input);
          await t.store.writer.run((trx) =>
            insertTurn(trx, {
              eventId,
              sessionKey: input.sessionKey,
              contextEpoch: 0,
              payload,
              owner: OWNER,
              now: now(),
            }),
          );
          return { eventId, sessionKey: input.sessionKey, replay: false, answer: input.wait ? 'result' : 'ack' };
        },
        waitFor: (eventId, timeoutMs, signal, until) => waiters.wait(eventId, timeoutMs, signal, until),
        // Turn runner stand-in: records interrupts, reports `localTurns` as running here.
        interrupt(eventId, reason) {
          interrupts.push([eventId, reason]);
          return true;
        },
        runningTurns: () => [...localTurns],
        turn: (eventId) => getTurn(t.store.db, eventId),
      },
      owner: OWNER,
      maxConcurrent: 2,
      pollMs: 30,
      timers,
    });
  });
  afterEach(async () => {
    await runner.close();
    await t.cleanup();
  });

  const finish = (eventId: string, status: 'completed' | 'interrupted' | 'failed', response: string | null = null) =>
    t.store.writer.run((trx) =>
      finishTurn(trx, eventId, {
        status,
        response,
        terminationReason:
          status === 'completed' ? 'completed' : status === 'interrupted' ? 'process_restart' : 'provider_error',
        result:
          status === 'failed' ? { error: { code: 'UPSTREAM_ERROR', message: 'model provider failed: boom' } } : null,
        now: now(),
      }),
    );
  const startTurn = (eventId: string) =>
    t.store.writer.run((trx) => claimTurn(trx, eventId, { owner: OWNER, now: now() }));
  const eventOf = async (taskId: string) => {
    await vi.waitFor(async () => expect((await service.get(taskId))?.eventId).toBeTruthy(), { interval: 5 });
    return (await service.get(taskId))!.eventId!;
  };
  const statusOf = async (taskId: string) => (await service.get(taskId))?.status;

  it('finishes from the ledger the tasks a dead process left running, and fails claims that never got a turn', async () => {
    const dead = new TaskService({ store: t.store, clock, ids: createIdGenerator(clock) });
    const a = await dead.create({ title: 'a', priority: 9 });
    const b = await dead.create({ title: 'b', priority: 8 });
    const c = await dead.create({ title: 'c', priority: 7 });
    for (let i = 0; i < 3; i++) await dead.claimNext('gw_dead', 10);
    const turn = async (taskId: string, eventId: string) => {
      await t.store.writer.run(async (trx) => {
        await insertTurn(trx, {
          eventId,
          sessionKey: `gateway:task:${taskId}`,
          contextEpoch: 0,
          payload: {},
          owner: 'gw_dead',
          now: now(),
        });
        await setTaskEvent(trx, taskId, eventId, now());
      });
    };
    await turn(a.id, 'evt_a');
    await finish('evt_a', 'completed', 'the answer');
    await turn(b.id, 'evt_b');
    await finish('evt_b', 'interrupted'); // the message path's recovery: process_restart
    // c: claimed, never submitted.

    await runner.start();
    expect(await service.get(a.id)).toMatchObject({ status: 'completed', result: 'the answer', progress: 1 });
    expect(await service.get(b.id)).toMatchObject({ status: 'failed', error: 'process_restart' });
    expect(await service.get(c.id)).toMatchObject({ status: 'failed', error: 'process_restart' });
    expect(submitted).toEqual([]);
  });

  it('finishes a recovered task on a later tick once its adopted turn ends', async () => {
    const dead = new TaskService({ store: t.store, clock, ids: createIdGenerator(clock) });
    const task = await dead.create({ title: 'slow' });
    await dead.claimNext('gw_dead', 10);
    await t.store.writer.run(async (trx) => {
      await insertTurn(trx, {
        eventId: 'evt_slow',
        sessionKey: `gateway:task:${task.id}`,
        contextEpoch: 0,
        payload: {},
        owner: 'gw_dead',
        now: now(),
      });
      await setTaskEvent(trx, task.id, 'evt_slow', now());
    });
    await runner.start();
    expect(await statusOf(task.id)).toBe('running'); // its turn is still accepted (requeued by the message path)
    await finish('evt_slow', 'completed', 'late');
    timers.tick();
    await vi.waitFor(async () => expect(await statusOf(task.id)).toBe('completed'), { interval: 5 });
  });

  it('claims on notify, submits the task prompt in the task session and completes it', async () => {
    await runner.start();
    const task = await service.create({ title: 'Do it', description: 'carefully' });
    runner.notify();
    const eventId = await eventOf(task.id);
    expect(submitted).toEqual([
      {
        sessionKey: `gateway:task:${task.id}`,
        text: 'Do it\n\ncarefully',
        platform: 'task',
        userId: 'agent',
        chatId: task.id,
        channel: 'task',
        source: 'task',
        principal: null,
        identity: 'skip',
        wait: false,
      },
    ]);
    expect((await getTurn(t.store.db, eventId))?.payload).toEqual({
      text: 'Do it\n\ncarefully',
      platform: 'task',
      user_id: 'agent',
      chat_id: task.id,
      channel: 'task',
      source: 'task',
    });
    await startTurn(eventId);
    await finish(eventId, 'completed', 'done!');
    await vi.waitFor(async () => expect(await statusOf(task.id)).toBe('completed'), { interval: 5 });
    expect(await service.get(task.id)).toMatchObject({ result: 'done!', progress: 1 });
    await vi.waitFor(() => expect(runner.running()).toEqual([]), { interval: 5 });
  });

  it('runs at most max_concurrent tasks and picks up the next when one ends', async () => {
    await runner.start();
    const tasks: TaskRecord[] = [];
    for (const n of [1, 2, 3]) tasks.push(await service.create({ title: `t${n}`, priority: 10 - n }));
    runner.notify();
    const first = await eventOf(tasks[0]!.id);
    await eventOf(tasks[1]!.id);
    expect(await statusOf(tasks[2]!.id)).toBe('pending');
    expect(runner.running().sort()).toEqual([tasks[0]!.id, tasks[1]!.id].sort());
    await finish(first, 'failed');
    await vi.waitFor(async () => expect(await statusOf(tasks[2]!.id)).toBe('running'), { interval: 5 });
    expect(await service.get(tasks[0]!.id)).toMatchObject({
      status: 'failed',
      error: 'model provider failed: boom',
    });
  });

  it('applies a new max_concurrent live', async () => {
    await runner.start();
    const tasks: TaskRecord[] = [];
    for (const n of [1, 2, 3, 4]) tasks.push(await service.create({ title: `t${n}`, priority: 10 - n }));
    runner.notify();
    await eventOf(tasks[1]!.id);
    expect(await statusOf(tasks[2]!.id)).toBe('pending');
    runner.setMaxConcurrent(4);
    await eventOf(tasks[3]!.id);
    expect(runner.running()).toHaveLength(4);
    expect(() => runner.setMaxConcurrent(0)).toThrow(/positive integer/);
  });

  it('interrupts the turn of a task cancelled elsewhere once the turn runs, and keeps it cancelled', async () => {
    await runner.start();
    const task = await service.create({ title: 'cancel me' });
    runner.notify();
    const eventId = await eventOf(task.id);
    // Cancelled by another process (no interrupt hook here) while the turn is still accepted; the bus tells this one.
    await service.cancel(task.id);
    runner.notify();
    await startTurn(eventId);
    await vi.waitFor(() => expect(interrupts).toContainEqual([eventId, 'task_cancelled']), { interval: 5 });
    await t.store.writer.run((trx) =>
      finishTurn(trx, eventId, {
        status: 'interrupted',
        response: null,
        terminationReason: 'task_cancelled',
        result: null,
        now: now(),
      }),
    );
    await vi.waitFor(() => expect(runner.running()).toEqual([]), { interval: 5 });
    expect(await service.get(task.id)).toMatchObject({ status: 'cancelled', error: null });
  });

  it('keeps a task running while its turn waits for approval, then finishes it', async () => {
    await runner.start();
    const task = await service.create({ title: 'needs approval' });
    runner.notify();
    const eventId = await eventOf(task.id);
    await startTurn(eventId);
    await t.store.writer.run((trx) =>
      pauseTurn(trx, eventId, { status: 'waiting_approval', pending: { calls: [] }, now: now() }),
    );
    timers.tick();
    timers.tick();
    expect(await statusOf(task.id)).toBe('running');
    await t.store.writer.run(async (trx) => {
      await trx.updateTable('turns').set({ status: 'running' }).where('event_id', '=', eventId).execute();
    });
    await finish(eventId, 'completed', 'approved and done');
    timers.tick();
    await vi.waitFor(async () => expect(await statusOf(task.id)).toBe('completed'), { interval: 5 });
  });

  it('stops claiming on close and leaves a run whose turn has not started for recovery', async () => {
    await runner.start();
    const task = await service.create({ title: 'queued' });
    runner.notify();
    await eventOf(task.id);
    expect(timers.active).toBe(1);
    await runner.close();
    expect(timers.active).toBe(0);
    expect(runner.running()).toEqual([]);
    expect(await statusOf(task.id)).toBe('running');
    const later = await service.create({ title: 'after close' });
    runner.notify();
    timers.tick();
    expect(await statusOf(later.id)).toBe('pending');
    expect(submitted).toHaveLength(1);
  });

  it('on close, waits for a turn running here and finishes its task with it', async () => {
    await runner.start();
    const task = await service.create({ title: 'finishing' });
    runner.notify();
    const eventId = await eventOf(task.id);
    await startTurn(eventId);
    localTurns.push(eventId);
    const closed = runner.close();
    await finish(eventId, 'completed', 'made it');
    await closed;
    expect(await service.get(task.id)).toMatchObject({ status: 'completed', result: 'made it' });
  });

  it('does not run a task assigned to a person', async () => {
    await runner.start();
    const human = await service.create({ title: 'human', assignee: 'alice', priority: 10 });
    const agent = await service.create({ title: 'agent', priority: 0 });
    runner.notify();
    await eventOf(agent.id);
    expect(await statusOf(human.id)).toBe('pending');
    expect(submitted.map((s) => s.text)).toEqual(['agent']);
  });

  it("submits a principal's task under that principal, the default principal's with none", async () => {
    await runner.start();
    const mine = await service.create({ title: 'alice’s', principal: 'alice', priority: 9 });
    const theirs = await service.create({ title: 'default’s', priority: 1 });
    runner.notify();
    await eventOf(mine.id);
    await eventOf(theirs.id);
    expect(submitted.map((s) => [s.text, s.principal, s.identity])).toEqual([
      ['alice’s', { role: 'api', id: 'alice', fingerprint: null, scope: 'principal:alice' }, 'skip'],
      ['default’s', null, 'skip'],
    ]);
  });
});

it('submits under the task’s principal unless it is the default one', () => {
  expect(taskPrincipal({ principal: 'default' })).toBeNull();
  expect(taskPrincipal({ principal: 'bob' })).toEqual({
    role: 'api',
    id: 'bob',
    fingerprint: null,
    scope: 'principal:bob',
  });
});

it('builds the prompt from title and description', () => {
  expect(taskPrompt({ title: 'T', description: null })).toBe('T');
  expect(taskPrompt({ title: 'T', description: '  ' })).toBe('T');
  expect(taskPrompt({ title: 'T', description: 'D' })).toBe('T\n\nD');
});

it('maps turn outcomes to task outcomes', () => {
  const turn = {
    seq: 1,
    eventId: 'evt',
    sessionKey: 's',
    currentTool: null,
    contextEpoch: 0,
    acceptedAt: '',
    startedAt: null,
    finishedAt: null,
    updatedAt: '',
    payload: {},
    pending: null,
    owner: null,
  };
  expect(
    outcomeOf({ ...turn, status: 'completed', response: 'r', terminationReason: 'completed', result: null }),
  ).toEqual({ status: 'completed', result: 'r' });
  expect(
    outcomeOf({
      ...turn,
      status: 'failed',
      response: null,
      terminationReason: 'provider_error',
      result: { error: { code: 'UPSTREAM_ERROR', message: 'model provider failed: x' } },
    }),
  ).toEqual({ status: 'failed', error: 'model provider failed: x' });
  expect(
    outcomeOf({ ...turn, status: 'interrupted', response: null, terminationReason: 'process_restart', result: null }),
  ).toEqual({ status: 'failed', error: 'process_restart' });
  expect(
    outcomeOf({ ...turn, status: 'incomplete', response: 'part', terminationReason: 'budget_exceeded', result: null }),
  ).toEqual({ status: 'failed', error: 'budget_exceeded' });
});
