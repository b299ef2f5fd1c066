import { describe, expect, it } from 'vitest';
import { PendingTurns } from './webhook.pending.js';

/** A watch whose turns are settled by hand: `finish(id)` resolves, `fail(id)` rejects. */
function manualWatch() {
  const open = new Map<string, { resolve: () => void; reject: (err: Error) => void; signal: AbortSignal }>();
  return {
    open,
    watch: (eventId: string, signal: AbortSignal) =>
      new Promise<void>((resolve, reject) => {
        open.set(eventId, { resolve, reject, signal });
        signal.addEventListener('abort', () => resolve(), { once: true });
      }),
    finish: (eventId: string) => open.get(eventId)?.resolve(),
    fail: (eventId: string) => open.get(eventId)?.reject(new Error('store down')),
  };
}

/** Lets settled promise callbacks run. */
const flush = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('PendingTurns', () => {
  it('counts tracked turns until their outcome, refusing at the limit', async () => {
    const manual = manualWatch();
    const pending = new PendingTurns({ limit: 2, watch: manual.watch, onWatchError: () => undefined });
    pending.reserve()!.track('evt_a');
    const second = pending.reserve()!;
    expect(pending.size).toBe(1); // a reservation is not yet a pending turn…
    expect(pending.reserve()).toBeNull(); // …but it holds its slot
    second.track('evt_b');
    expect(pending.size).toBe(2);
    expect(pending.reserve()).toBeNull();
    manual.finish('evt_a');
    await flush();
    expect(pending.size).toBe(1);
    expect(pending.reserve()).not.toBeNull();
  });

  it('frees the slot of a released reservation (replay or failure), once only', () => {
    const manual = manualWatch();
    const pending = new PendingTurns({ limit: 1, watch: manual.watch, onWatchError: () => undefined });
    const reservation = pending.reserve()!;
    reservation.release();
    reservation.release();
    reservation.track('evt_late'); // ignored: the reservation was already settled
    expect(pending.inUse).toBe(0);
    expect(pending.size).toBe(0);
    expect(manual.open.size).toBe(0);
  });

  it('force-reserves past the limit for a retry of a turn still pending', () => {
    const manual = manualWatch();
    const pending = new PendingTurns({ limit: 1, watch: manual.watch, onWatchError: () => undefined });
    pending.reserve()!.track('evt_a');
    expect(pending.has('evt_a')).toBe(true);
    expect(pending.has('evt_b')).toBe(false);
    expect(pending.reserve()).toBeNull();
    const retry = pending.reserve({ force: true })!;
    expect(pending.inUse).toBe(2);
    retry.release(); // intake answered it as a replay
    expect(pending.inUse).toBe(1);
    expect(pending.size).toBe(1);
  });

  it('frees the slot when the watch fails, and reports the error', async () => {
    const manual = manualWatch();
    const failures: string[] = [];
    const pending = new PendingTurns({
      limit: 1,
      watch: manual.watch,
      onWatchError: (_err, eventId) => failures.push(eventId),
    });
    pending.reserve()!.track('evt_x');
    manual.fail('evt_x');
    await flush();
    expect(pending.size).toBe(0);
    expect(failures).toEqual(['evt_x']);
  });

  it('frees the slot when starting the watch throws', () => {
    const failures: string[] = [];
    const pending = new PendingTurns({
      limit: 1,
      watch: () => {
        throw new Error('too many waiters');
      },
      onWatchError: (_err, eventId) => failures.push(eventId),
    });
    pending.reserve()!.track('evt_y');
    expect(pending.size).toBe(0);
    expect(failures).toEqual(['evt_y']);
  });

  it('abortAll aborts every watch and empties the count at once', async () => {
    const manual = manualWatch();
    const pending = new PendingTurns({ limit: 5, watch: manual.watch, onWatchError: () => undefined });
    pending.reserve()!.track('evt_1');
    pending.reserve()!.track('evt_2');
    pending.abortAll();
    expect(pending.size).toBe(0);
    expect([...manual.open.values()].every((w) => w.signal.aborted)).toBe(true);
    // A watch settling after the abort does not disturb a later count.
    pending.reserve()!.track('evt_1');
    await flush();
    expect(pending.size).toBe(1);
  });
});

describe('PendingTurns shared with other processes', () => {
  it('counts the slots the others reported against the limit', async () => {
    const manual = manualWatch();
    let elsewhere = 2;
    const pending = new PendingTurns({ limit: 3, watch: manual.watch, onWatchError: () => undefined });
    pending.share({ others: () => elsewhere });
    expect(pending.elsewhere).toBe(2);
    pending.reserve()!.track('evt_a');
    expect(pending.reserve()).toBeNull(); // 1 here + 2 elsewhere
    expect(pending.inUse).toBe(1); // only this process's slots are its own count
    elsewhere = 1;
    const second = pending.reserve();
    expect(second).not.toBeNull();
    expect(pending.reserve()).toBeNull();
    // A retry of a turn pending here still gets its (given back) slot.
    expect(pending.reserve({ force: true })).not.toBeNull();
    manual.finish('evt_a');
    await flush();
    elsewhere = 0;
    pending.share(null);
    expect(pending.elsewhere).toBe(0);
  });

  it('the admission refuses with 429 when the cluster-wide queue is full', () => {
    const manual = manualWatch();
    const pending = new PendingTurns({ limit: 2, watch: manual.watch, onWatchError: () => undefined });
    pending.share({ others: () => 2 });
    expect(() => pending.admission().admit('evt_new')).toThrow(/webhook queue is full/);
    pending.share({ others: () => 1 });
    const admitted = pending.admission().admit('evt_new');
    admitted.hold('evt_new');
    expect(pending.has('evt_new')).toBe(true);
  });
});
