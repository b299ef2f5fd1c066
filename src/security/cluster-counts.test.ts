import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { PendingTurns } from '../channels/webhook/webhook.pending.js';
import { isoTime, ManualClock } from '../lib/clock.js';
import { heartbeat, registerInstance, removeInstance, type Store, StoreFaults } from '../store/index.js';
import { type TestStore, describeBackends } from '../../test/helpers/stores.js';
import { ClusterCounts } from './cluster-counts.js';
import { readOthers, writeCounts } from './cluster-counts.repo.js';
import { createRateLimiter, type RateGroup, type RateLimiter } from './rate-limit.js';

const LIMITS: Record<RateGroup, number> = { read: 120, write: 30, analytics: 10, lifecycle: 5 };
// 2026-11-21T10:00:00.000Z, a minute boundary
const T0 = Date.UTC(2026, 10, 21, 10, 0, 0, 0);
const STALE_MS = 10_000;

/** One gateway-like process: its store, exchanger, rate limiter and webhook pending count. */
interface Instance {
  id: string;
  store: Store;
  counts: ClusterCounts;
  limiter: RateLimiter;
  pending: PendingTurns;
  logger: { warn: ReturnType<typeof vi.fn>; info: ReturnType<typeof vi.fn> };
}

function instance(id: string, store: Store, clock: ManualClock, options: { maxKeys?: number } = {}): Instance {
  const logger = { warn: vi.fn(), info: vi.fn() };
  const counts = new ClusterCounts({ store, instanceId: id, clock, logger, staleMs: STALE_MS, ...options });
  const limiter = createRateLimiter({ limits: LIMITS, clock, shared: counts.windows });
  const pending = new PendingTurns({ limit: 3, watch: () => new Promise(() => undefined), onWatchError: () => {} });
  pending.share(counts.gauge('webhook_pending', () => pending.inUse));
  return { id, store, counts, limiter, pending, logger };
}

/** Admitted requests of `n` tries. */
function spend(at: Instance, n: number, key = 'fp_a', group: RateGroup = 'lifecycle'): number {
  let allowed = 0;
  for (let i = 0; i < n; i++) if (at.limiter.hit(key, group).allowed) allowed++;
  return allowed;
}

describeBackends('cluster-wide counts', (backend) => {
  let t: TestStore;
  let clock: ManualClock;
  let a: Instance;
  let b: Instance;
  /** Both exchange, one after the other (as their timers would within one interval). */
  const exchangeBoth = async (): Promise<void> => {
    expect(await a.counts.exchange()).toBe(true);
    expect(await b.counts.exchange()).toBe(true);
    expect(await a.counts.exchange()).toBe(true);
  };
  const beat = async (...who: Instance[]): Promise<void> => {
    for (const at of who) await heartbeat(at.store.db, at.id, isoTime(clock.now()));
  };

  beforeEach(async () => {
    clock = new ManualClock(T0);
    t = await backend.open();
    // Two processes, each with its own connections to the one database.
    a = instance('gw_a', await t.reopen(), clock);
    b = instance('gw_b', await t.reopen(), clock);
    await registerInstance(t.store.db, 'gw_a', isoTime(T0));
    await registerInstance(t.store.db, 'gw_b', isoTime(T0));
  });
  afterEach(async () => {
    await a.counts.close();
    await b.counts.close();
    await t.cleanup();
  });

  it('a token spending its limit across two processes is refused at the cluster-wide limit', async () => {
    expect(spend(a, 3)).toBe(3);
    await exchangeBoth();
    expect(b.limiter.hit('fp_a', 'lifecycle')).toMatchObject({ allowed: true, remaining: 1 });
    expect(b.limiter.hit('fp_a', 'lifecycle')).toMatchObject({ allowed: true, remaining: 0 });
    expect(b.limiter.hit('fp_a', 'lifecycle')).toMatchObject({ allowed: false, remaining: 0 });
    await exchangeBoth();
    expect(a.limiter.hit('fp_a', 'lifecycle').allowed).toBe(false);
    // Other tokens and groups are counted apart.
    expect(a.limiter.hit('fp_b', 'lifecycle').allowed).toBe(true);
    expect(b.limiter.hit('fp_a', 'write')).toMatchObject({ allowed: true, remaining: 29 });
  });

  it('overshoot is bounded by what the processes admit between two exchanges', async () => {
    // Both are hit within one interval: each knows only its own count, as a single process would.
    expect(spend(a, 4)).toBe(4);
    expect(spend(b, 4)).toBe(4);
    await exchangeBoth();
    expect(spend(a, 10) + spend(b, 10)).toBe(0);
    // Spread over exchanges, the total admitted is the limit.
    expect(spend(a, 10, 'fp_c', 'write') + spend(b, 0, 'fp_c', 'write')).toBe(10);
    await exchangeBoth();
    let admitted = 10;
    for (let round = 0; round < 10; round++) {
      admitted += spend(a, 2, 'fp_c', 'write') + spend(b, 2, 'fp_c', 'write');
      await exchangeBoth();
    }
    // At most one exchange's worth (here 2 per process) past the limit of 30.
    expect(admitted).toBeGreaterThanOrEqual(30);
    expect(admitted).toBeLessThanOrEqual(30 + 2);
  });

  it('windows roll over everywhere, and past windows are pruned', async () => {
    expect(spend(a, 5)).toBe(5);
    await exchangeBoth();
    expect(spend(b, 1)).toBe(0);
    clock.advance(60_000); // the next window
    await beat(a, b);
    expect(spend(b, 5)).toBe(5);
    await exchangeBoth();
    expect(spend(a, 1)).toBe(0);
    clock.advance(3 * 60_000);
    await beat(a, b);
    expect(spend(a, 1)).toBe(1);
    await exchangeBoth();
    const rows = await t.store.db.selectFrom('cluster_counts').select(['kind', 'window_start']).execute();
    // Only the current window's row and the two gauges remain.
    expect(rows.filter((row) => row.kind === 'window').map((row) => Number(row.window_start))).toEqual([
      T0 + 4 * 60_000,
    ]);
    expect(rows.filter((row) => row.kind === 'gauge')).toHaveLength(2);
  });

  it("a dead process's counts stop counting, and its gauge is pruned", async () => {
    expect(spend(a, 5)).toBe(5);
    a.pending.reserve()!.track('evt_1');
    a.pending.reserve()!.track('evt_2');
    await exchangeBoth();
    expect(spend(b, 1)).toBe(0);
    expect(b.pending.elsewhere).toBe(2);
    // gw_a stops (no heartbeat, no exchange); gw_b goes on.
    clock.advance(STALE_MS + 1);
    await beat(b);
    expect(await b.counts.exchange()).toBe(true);
    expect(spend(b, 5)).toBe(5);
    expect(b.pending.elsewhere).toBe(0);
    clock.advance(5_000);
    await beat(b);
    expect(await b.counts.exchange()).toBe(true); // prunes
    const gauges = await t.store.db
      .selectFrom('cluster_counts')
      .select('instance_id')
      .where('kind', '=', 'gauge')
      .execute();
    expect(gauges.map((row) => row.instance_id)).toEqual(['gw_b']);
  });

  it('a process that leaves the instance list stops counting at once', async () => {
    expect(spend(a, 5)).toBe(5);
    await exchangeBoth();
    expect(spend(b, 1)).toBe(0);
    await removeInstance(t.store.db, 'gw_a'); // its clean shutdown
    await a.counts.close();
    expect(await b.counts.exchange()).toBe(true);
    expect(spend(b, 1)).toBe(1);
    const rows = await t.store.db.selectFrom('cluster_counts').select('instance_id').execute();
    expect(rows.every((row) => row.instance_id === 'gw_b')).toBe(true);
    expect(await a.counts.exchange()).toBe(false); // closed
  });

  it('alone, the timer reads the others every 2 s instead of every exchange; a peer is counted within that', async () => {
    await removeInstance(t.store.db, 'gw_b');
    expect(await a.counts.tick()).toBe(true); // reads: nobody else
    await registerInstance(t.store.db, 'gw_b', isoTime(clock.now()));
    expect(spend(b, 4)).toBe(4);
    expect(await b.counts.exchange()).toBe(true);
    clock.advance(1_000);
    expect(await a.counts.tick()).toBe(true); // still alone as far as it knows: no read
    expect(spend(a, 5)).toBe(5);
    clock.advance(1_000);
    expect(await a.counts.tick()).toBe(true); // 2 s since the last read: reads, and sees b
    expect(a.limiter.hit('fp_a', 'lifecycle').allowed).toBe(false);
    // An explicit exchange always reads.
    expect(await a.counts.exchange()).toBe(true);
    expect(a.limiter.hit('fp_b', 'lifecycle').allowed).toBe(true);
  });

  it('the webhook pending bound is shared', async () => {
    a.pending.reserve()!.track('evt_1');
    const inFlight = a.pending.reserve()!; // a reservation holds a slot too
    await exchangeBoth();
    expect(b.pending.elsewhere).toBe(2);
    const slot = b.pending.reserve();
    expect(slot).not.toBeNull();
    expect(b.pending.reserve()).toBeNull();
    inFlight.release();
    await exchangeBoth();
    expect(b.pending.elsewhere).toBe(1);
    expect(a.pending.elsewhere).toBe(1);
    // The slot gw_a gave back is free for gw_b: 1 there, 2 here.
    expect(b.pending.reserve()).not.toBeNull();
    expect(b.pending.reserve()).toBeNull();
    slot!.release();
    expect(b.pending.reserve()).not.toBeNull();
  });
});

describeBackends('cluster-wide counts when the database fails', (backend) => {
  let t: TestStore;
  let faults: StoreFaults;
  let clock: ManualClock;
  let a: Instance;

  beforeEach(async () => {
    clock = new ManualClock(T0);
    faults = new StoreFaults();
    t = await backend.open({ faults });
    a = instance('gw_a', t.store, clock);
    await registerInstance(t.store.db, 'gw_a', isoTime(T0));
    await registerInstance(t.store.db, 'gw_z', isoTime(T0));
    // Another process reported 3 lifecycle requests and 2 pending turns.
    await writeCounts(
      t.store.db,
      'gw_z',
      [
        { kind: 'window', key: 'lifecycle:fp_a', windowStart: T0, count: 3 },
        { kind: 'gauge', key: 'webhook_pending', windowStart: 0, count: 2 },
      ],
      isoTime(T0),
    );
  });
  afterEach(async () => {
    faults.heal();
    await a.counts.close();
    await t.cleanup();
  });

  it('falls back to local counts, logs once, and catches up when the database answers again', async () => {
    expect(await a.counts.exchange()).toBe(true);
    expect(a.pending.elsewhere).toBe(2);
    expect(spend(a, 5)).toBe(2);
    faults.inject('all');
    clock.advance(1_000);
    expect(await a.counts.exchange()).toBe(false);
    expect(await a.counts.exchange()).toBe(false);
    expect(a.logger.warn).toHaveBeenCalledTimes(1);
    // Window counts never go down within a window: the last known still hold.
    expect(spend(a, 1)).toBe(0);
    // A gauge can: once too old, only the local value counts.
    clock.advance(STALE_MS);
    expect(a.pending.elsewhere).toBe(0);
    expect(a.counts.pendingReports).toBe(1); // kept to be written again
    faults.heal();
    await heartbeat(t.store.db, 'gw_z', isoTime(clock.now()));
    await heartbeat(t.store.db, 'gw_a', isoTime(clock.now()));
    expect(await a.counts.exchange()).toBe(true);
    expect(a.logger.info).toHaveBeenCalledTimes(1);
    expect(a.pending.elsewhere).toBe(2);
    const seen = await readOthers(t.store.db, {
      self: 'gw_z',
      windowsAfter: clock.now() - 60_000,
      staleBeforeIso: isoTime(clock.now() - STALE_MS),
      limit: 10,
    });
    expect(seen).toContainEqual({ kind: 'window', key: 'lifecycle:fp_a', windowStart: T0, count: 2 });
    expect(seen).toContainEqual({ kind: 'gauge', key: 'webhook_pending', windowStart: 0, count: 0 });
  });
});

describe('ClusterCounts bounds', () => {
  it('holds at most maxKeys unwritten counts and rejects nonsensical options', () => {
    const clock = new ManualClock(T0);
    const store = { db: null, writer: null } as unknown as Store;
    const logger = { warn: vi.fn(), info: vi.fn() };
    const counts = new ClusterCounts({ store, instanceId: 'gw', clock, logger, staleMs: STALE_MS, maxKeys: 3 });
    const limiter = createRateLimiter({ limits: LIMITS, clock, shared: counts.windows });
    for (let i = 0; i < 10; i++) limiter.hit(`fp_${i}`, 'read');
    expect(counts.pendingReports).toBe(3);
    expect(
      () => new ClusterCounts({ store, instanceId: 'gw', clock, logger, staleMs: STALE_MS, intervalMs: 0 }),
    ).toThrow(RangeError);
    expect(() => new ClusterCounts({ store, instanceId: 'gw', clock, logger, staleMs: STALE_MS, maxKeys: 0 })).toThrow(
      RangeError,
    );
  });

  it('an idle process writes nothing between prunes: unchanged gauges wait for the next prune', async () => {
    const clock = new ManualClock(T0);
    const run = vi.fn(() => Promise.resolve());
    const store = { writer: { run }, db: null } as unknown as Store;
    const logger = { warn: vi.fn(), info: vi.fn() };
    const counts = new ClusterCounts({ store, instanceId: 'gw', clock, logger, staleMs: STALE_MS });
    let pending = 2;
    counts.gauge('webhook_pending', () => pending);
    await counts.exchange(); // the first exchange prunes and writes the gauge
    expect(run).toHaveBeenCalledTimes(1);
    clock.advance(250);
    await counts.exchange();
    clock.advance(250);
    await counts.exchange();
    expect(run).toHaveBeenCalledTimes(1); // nothing changed, nothing to prune
    pending = 3;
    clock.advance(250);
    await counts.exchange();
    expect(run).toHaveBeenCalledTimes(2); // the gauge changed
    clock.advance(5_000);
    await counts.exchange();
    expect(run).toHaveBeenCalledTimes(3); // the prune, with every gauge written again
    await counts.close();
  });

  it('exchanges on an unref-ed timer until closed', async () => {
    const clock = new ManualClock(T0);
    const run = vi.fn(() => Promise.resolve());
    const store = {
      writer: { run },
      db: null,
    } as unknown as Store;
    const logger = { warn: vi.fn(), info: vi.fn() };
    const counts = new ClusterCounts({ store, instanceId: 'gw', clock, logger, staleMs: STALE_MS, intervalMs: 5 });
    let pending = 0;
    counts.gauge('changing', () => pending++); // a new value each exchange, so each one writes
    counts.start();
    counts.start();
    await vi.waitFor(() => expect(run.mock.calls.length).toBeGreaterThanOrEqual(2));
    await counts.close();
    const calls = run.mock.calls.length;
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(run.mock.calls.length).toBe(calls);
    expect(logger.warn).toHaveBeenCalledTimes(1); // the fake has no `db` to read from: logged once
  });
});
