import { afterEach, expect, it } from 'vitest';
import { ManualTimers } from '../../test/helpers/manual-timers.js';
import { describeBackends, type TestStore } from '../../test/helpers/stores.js';
import { createLogger } from '../logs/logger.js';
import { StoreFaults } from '../store/index.js';
import { TurnReconciler } from './turn-reconciler.js';
import { claimTurn, insertTurn, interruptTurns, type TurnRecord } from './turns.repo.js';

const NOW = '2026-11-21T10:00:00.000Z';
const OWNER = 'gw_self';

/** Lets pending promise callbacks (a pass started by a timer) run to the end. */
const settle = () => new Promise((resolve) => setTimeout(resolve, 30));

describeBackends('TurnReconciler', (backend) => {
  let opened: TestStore | undefined;
  afterEach(async () => {
    await opened?.cleanup();
    opened = undefined;
  });

  async function setUp(options: { batch?: number; held?: Set<string>; faults?: StoreFaults } = {}) {
    opened = await backend.open(options.faults ? { faults: options.faults } : {});
    const { store } = opened;
    const timers = new ManualTimers();
    const held = options.held ?? new Set<string>();
    const requeued: TurnRecord[] = [];
    const interrupted: string[] = [];
    const reconciler = new TurnReconciler({
      store,
      owners: { ownerIn: [OWNER] },
      timers,
      logger: createLogger({ level: 'error', stdout: { write: () => undefined } }),
      intervalMs: 1_000,
      ...(options.batch !== undefined ? { batch: options.batch } : {}),
      isHeld: (id) => held.has(id),
      requeue: (turn) => {
        requeued.push(turn);
        held.add(turn.eventId); // a lane holds it from now on
      },
      interrupt: async (turns) => {
        const ids = await store.writer.run((trx) =>
          interruptTurns(trx, {
            statuses: ['running'],
            eventIdIn: turns.map((t) => t.eventId),
            reason: 'store_unavailable',
            now: NOW,
          }),
        );
        interrupted.push(...ids);
        return ids;
      },
    });
    const add = async (eventId: string, status: 'accepted' | 'running', owner = OWNER) =>
      store.writer.run(async (trx) => {
        await insertTurn(trx, { eventId, sessionKey: 's', contextEpoch: 0, payload: {}, owner, now: NOW });
        if (status === 'running') await claimTurn(trx, eventId, { owner, now: NOW });
      });
    return { store, timers, reconciler, requeued, interrupted, held, add };
  }

  it('acts on an orphan only when two passes in a row found it: an accepted one is queued again, a running one interrupted', async () => {
    const { reconciler, requeued, interrupted, add } = await setUp();
    await add('evt_a', 'accepted');
    await add('evt_r', 'running');
    expect(await reconciler.pass()).toEqual({ requeued: 0, interrupted: 0 });
    expect(await reconciler.pass()).toEqual({ requeued: 1, interrupted: 1 });
    expect(requeued.map((t) => [t.eventId, typeof t.seq])).toEqual([['evt_a', 'number']]);
    expect(interrupted).toEqual(['evt_r']);
    expect(await reconciler.pass()).toEqual({ requeued: 0, interrupted: 0 });
  });

  it('leaves alone what a lane or the runner holds, other owners’ turns, and a turn that was held in between', async () => {
    const held = new Set(['evt_held_a', 'evt_held_r']);
    const { reconciler, requeued, interrupted, add } = await setUp({ held });
    await add('evt_held_a', 'accepted');
    await add('evt_held_r', 'running');
    await add('evt_other', 'accepted', 'gw_other');
    await add('evt_late', 'accepted');
    await reconciler.pass();
    held.add('evt_late'); // queued by its intake between two passes
    await reconciler.pass();
    held.delete('evt_late'); // and done
    await reconciler.pass(); // a fresh suspect again: not yet
    expect(requeued).toEqual([]);
    expect(interrupted).toEqual([]);
  });

  it('reads at most `batch` turns of each status per pass and pages on until every orphan is found', async () => {
    const { reconciler, requeued, add } = await setUp({ batch: 2 });
    for (let i = 1; i <= 5; i++) await add(`evt_${i}`, 'accepted');
    const perPass: number[] = [];
    for (let i = 0; i < 8 && requeued.length < 5; i++) perPass.push((await reconciler.pass()).requeued);
    expect(requeued.map((t) => t.eventId).sort()).toEqual(['evt_1', 'evt_2', 'evt_3', 'evt_4', 'evt_5']);
    expect(Math.max(...perPass)).toBeLessThanOrEqual(2);
  });

  it('runs on its timers, survives passes the store refuses, resolves leftovers once it is back, and stops on close()', async () => {
    const faults = new StoreFaults();
    const { reconciler, timers, requeued, add } = await setUp({ faults });
    await add('evt_a', 'accepted');
    faults.inject('all');
    reconciler.start();
    expect(timers.delays()).toEqual([1_000]);
    for (let i = 0; i < 3; i++) {
      timers.advance(1_000);
      await settle();
    }
    expect(requeued).toEqual([]);
    expect(timers.size).toBe(1); // still scheduled after failing passes
    faults.heal();
    timers.advance(1_000);
    await settle();
    timers.advance(1_000);
    await settle();
    expect(requeued.map((t) => t.eventId)).toEqual(['evt_a']);
    await reconciler.close();
    expect(timers.size).toBe(0);
  });
});
