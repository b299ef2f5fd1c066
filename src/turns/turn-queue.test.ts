import { describe, expect, it } from 'vitest';
import { ManualTimers } from '../../test/helpers/manual-timers.js';
import { emptyTotals } from '../runtime/index.js';
import { TurnQueue, type JobResult, type TurnJob } from './turn-queue.js';

const turn = (eventId: string, seq?: number): TurnJob => ({
  kind: 'turn',
  eventId,
  ...(seq !== undefined ? { seq } : {}),
});

/** Lets every pending promise callback run. */
const flush = async (): Promise<void> => {
  for (let i = 0; i < 10; i++) await Promise.resolve();
};

/**
 * A queue over a scripted runner: each event id answers its scripted results in
 * order (then 'done'); `ran` lists the jobs in the order they started.
 */
function rig(options: { maxConcurrent?: number; script?: Record<string, Array<JobResult | 'throw'>> } = {}) {
  const timers = new ManualTimers();
  const ran: string[] = [];
  const errors: unknown[] = [];
  const script = options.script ?? {};
  const queue = new TurnQueue({
    maxConcurrent: options.maxConcurrent ?? 1,
    maxQueued: 100,
    timers,
    backoff: { baseMs: 100, maxMs: 800 },
    onError: (err) => errors.push(err),
    run: (_session, job) => {
      ran.push(job.kind === 'finish' ? `finish:${job.eventId}` : job.eventId);
      const next = script[job.eventId]?.shift() ?? 'done';
      if (next === 'throw') return Promise.reject(new Error(`boom ${job.eventId}`));
      return Promise.resolve(next);
    },
  });
  return { queue, timers, ran, errors };
}

describe('TurnQueue: a job that fails on the store', () => {
  it('releases its slot at once, keeps the head of its lane and runs again after the backoff; later turns of the session wait', async () => {
    const first = turn('a1');
    const { queue, timers, ran } = rig({ script: { a1: [{ retry: first }] } });
    queue.enqueue('A', first);
    queue.enqueue('A', turn('a2'));
    queue.enqueue('B', turn('b1'));
    await flush();
    // a1 failed; its slot went to B at once, and a2 did not overtake a1.
    expect(ran).toEqual(['a1', 'b1']);
    expect(queue.running).toBe(0);
    expect(queue.size).toBe(2); // a1 (backing off) and a2
    expect(timers.delays()).toEqual([100]);
    timers.advance(99);
    await flush();
    expect(ran).toEqual(['a1', 'b1']);
    timers.advance(1);
    await flush();
    expect(ran).toEqual(['a1', 'b1', 'a1', 'a2']);
    expect(queue.size).toBe(0);
    expect(queue.running).toBe(0);
  });

  it('backs off 100, 200, 400 ms, capped at the maximum, and starts over after a success', async () => {
    const job = turn('a1');
    const retry: JobResult = { retry: job };
    const { queue, timers, ran } = rig({
      script: { a1: [retry, retry, retry, retry, retry], a2: [{ retry: turn('a2') }] },
    });
    queue.enqueue('A', job);
    const delays: number[] = [];
    for (let i = 0; i < 5; i++) {
      await flush();
      delays.push(timers.delays()[0]!);
      timers.advance(delays.at(-1)!);
    }
    expect(delays).toEqual([100, 200, 400, 800, 800]);
    await flush();
    expect(ran.filter((id) => id === 'a1')).toHaveLength(6);
    queue.enqueue('A', turn('a2'));
    await flush();
    expect(timers.delays()).toEqual([100]); // a new streak
  });

  it('takes the job that replaces the failed one (an outcome still to be stored) at the head', async () => {
    const finish: TurnJob = {
      kind: 'finish',
      eventId: 'a1',
      eventIds: ['a1', 'c1'],
      outcome: { status: 'interrupted', reason: 'store_unavailable', totals: emptyTotals() },
      startedMs: 0,
    };
    const { queue, timers, ran } = rig({ script: { a1: [{ retry: finish }] } });
    queue.enqueue('A', turn('a1'));
    queue.enqueue('A', turn('a2'));
    await flush();
    expect(queue.holds('a1')).toBe(true);
    expect(queue.holds('c1')).toBe(true); // the clarification turn it also ends
    timers.advance(100);
    await flush();
    expect(ran).toEqual(['a1', 'finish:a1', 'a2']);
    expect(queue.holds('a1')).toBe(false);
    expect(queue.holds('c1')).toBe(false);
  });

  it('never deadlocks a lane on a job that throws: the slot and the lane are released', async () => {
    const { queue, ran, errors } = rig({ script: { a1: ['throw'] } });
    queue.enqueue('A', turn('a1'));
    queue.enqueue('A', turn('a2'));
    await flush();
    expect(ran).toEqual(['a1', 'a2']);
    expect(errors).toHaveLength(1);
    expect(queue.running).toBe(0);
    expect(queue.holds('a1')).toBe(false);
  });

  it('wake() ends every backoff at once (the store is back)', async () => {
    const a = turn('a1');
    const b = turn('b1');
    const { queue, timers, ran } = rig({ maxConcurrent: 2, script: { a1: [{ retry: a }], b1: [{ retry: b }] } });
    queue.enqueue('A', a);
    queue.enqueue('B', b);
    await flush();
    expect(timers.size).toBe(2);
    expect(queue.wake()).toBe(2);
    expect(timers.size).toBe(0);
    await flush();
    expect(ran).toEqual(['a1', 'b1', 'a1', 'b1']);
    expect(queue.wake()).toBe(0);
  });

  it('close() cancels the backoffs; nothing runs after it', async () => {
    const job = turn('a1');
    const { queue, timers, ran } = rig({ script: { a1: [{ retry: job }] } });
    queue.enqueue('A', job);
    await flush();
    expect(timers.size).toBe(1);
    queue.close();
    expect(timers.size).toBe(0);
    timers.advance(10_000);
    await flush();
    expect(ran).toEqual(['a1']);
  });
});

describe('TurnQueue: what it holds and in which order', () => {
  it('holds an event while it waits, backs off or runs, and lets go when it is done', async () => {
    const job = turn('a1');
    const { queue, timers } = rig({ script: { a1: [{ retry: job }] } });
    expect(queue.holds('a1')).toBe(false);
    queue.enqueue('A', job);
    expect(queue.holds('a1')).toBe(true);
    await flush();
    expect(queue.holds('a1')).toBe(true); // backing off
    timers.advance(100);
    await flush();
    expect(queue.holds('a1')).toBe(false);
  });

  it('puts a turn found again with its seq before the later turns of its lane', async () => {
    const gate = rig({ maxConcurrent: 1, script: { x: [] } });
    const { queue, ran } = gate;
    // Occupy the only slot so the lane fills up before anything runs.
    queue.enqueue('X', turn('x'));
    queue.enqueue('A', turn('a5', 5));
    queue.enqueue('A', turn('a7', 7));
    queue.enqueue('A', turn('a3', 3)); // an earlier turn the reconciler found
    queue.enqueue('A', turn('a6', 6));
    await flush();
    expect(ran).toEqual(['x', 'a3', 'a5', 'a6', 'a7']);
  });

  it('recheck() lets a blocked lane try again; without a block it does nothing', async () => {
    const { queue, ran } = rig({ script: { a1: ['blocked'] } });
    queue.enqueue('A', turn('a1'));
    await flush();
    expect(ran).toEqual(['a1']);
    expect(queue.recheck('B')).toBe(false);
    expect(queue.recheck('A')).toBe(true);
    await flush();
    expect(ran).toEqual(['a1', 'a1']);
    expect(queue.holds('a1')).toBe(false);
  });
});

describe('TurnQueue: its load (admission, ADR 0043)', () => {
  it('counts sessions waiting for a slot (not for their own earlier turn), the wait of the first, and the mean run time', async () => {
    let now = 1_000;
    const releases: Array<() => void> = [];
    const queue = new TurnQueue({
      maxConcurrent: 1,
      maxQueued: 100,
      now: () => now,
      onError: () => undefined,
      run: () => new Promise<JobResult>((resolve) => releases.push(() => resolve('done'))),
    });
    expect(queue.load()).toEqual({
      ready: 0,
      oldestWaitMs: 0,
      meanRunMs: 0,
      maxConcurrent: 1,
      queued: 0,
      maxQueued: 100,
    });
    queue.enqueue('A', turn('a1'));
    queue.enqueue('A', turn('a2')); // waits for a1, not for a slot
    now += 10;
    queue.enqueue('B', turn('b1'));
    now += 40;
    expect(queue.load()).toMatchObject({ ready: 1, oldestWaitMs: 40, meanRunMs: 0, queued: 2 });

    releases.shift()!(); // a1 ran 50 ms; b1 takes the slot, a2 now waits for it
    await flush();
    expect(queue.load()).toMatchObject({ ready: 1, oldestWaitMs: 0, meanRunMs: 50, queued: 1 });
    now += 100;
    releases.shift()!(); // b1 ran 100 ms: the mean moves a fifth of the way
    await flush();
    expect(queue.load()).toMatchObject({ ready: 0, oldestWaitMs: 0, meanRunMs: 60, queued: 0 });
  });
});
