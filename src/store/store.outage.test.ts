import { sql } from 'kysely';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { describeBackends, testBackends, type TestStore } from '../../test/helpers/stores.js';
import { StoreFaults, StoreUnavailableError, getMeta, setMeta } from './index.js';
import { openStore } from './store.js';

const NOW = '2026-11-21T10:00:00.000Z';

describeBackends('store fault seam', (backend) => {
  let opened: TestStore | undefined;
  afterEach(async () => {
    await opened?.cleanup();
    opened = undefined;
  });

  it('an injected fault fails reads and writes with StoreUnavailableError until healed', async () => {
    const faults = new StoreFaults();
    opened = await backend.open({ faults });
    const { store } = opened;
    await store.writer.run((trx) => setMeta(trx, 'k', 'v1', NOW));
    faults.inject('all');
    await expect(getMeta(store.db, 'k')).rejects.toBeInstanceOf(StoreUnavailableError);
    await expect(store.writer.run((trx) => setMeta(trx, 'k', 'v2', NOW))).rejects.toBeInstanceOf(StoreUnavailableError);
    await expect(store.ping()).rejects.toBeInstanceOf(StoreUnavailableError);
    faults.heal();
    expect(await getMeta(store.db, 'k')).toBe('v1');
    await store.writer.run((trx) => setMeta(trx, 'k', 'v3', NOW));
    expect(await getMeta(store.db, 'k')).toBe('v3');
    expect(faults.refused).toBeGreaterThanOrEqual(3);
  });

  it('a write fault (a full disk) fails commits while reads and ping still answer', async () => {
    const faults = new StoreFaults();
    opened = await backend.open({ faults });
    const { store } = opened;
    await store.writer.run((trx) => setMeta(trx, 'k', 'v1', NOW));
    faults.inject('writes');
    await store.ping();
    expect(await getMeta(store.db, 'k')).toBe('v1');
    await expect(store.writer.run((trx) => setMeta(trx, 'k', 'v2', NOW))).rejects.toBeInstanceOf(StoreUnavailableError);
    await expect(setMeta(store.db, 'k', 'v2', NOW)).rejects.toBeInstanceOf(StoreUnavailableError);
    faults.heal();
    expect(await getMeta(store.db, 'k')).toBe('v1'); // the failed commits left nothing behind
    await store.writer.run((trx) => setMeta(trx, 'k', 'v3', NOW));
    expect(await getMeta(store.db, 'k')).toBe('v3');
  });

  it('the writer reports refused writes until one commits again; checkWrites probes only then', async () => {
    const faults = new StoreFaults();
    opened = await backend.open({ faults });
    const { store } = opened;
    let restored = 0;
    store.writer.onWritesRestored(() => restored++);
    expect(store.writer.writesFailing).toBe(false);
    await store.checkWrites(); // nothing failed: no probe
    expect(await getMeta(store.db, 'write_probe')).toBeNull();
    faults.inject('writes');
    await expect(store.writer.run((trx) => setMeta(trx, 'k', 'v', NOW))).rejects.toBeInstanceOf(StoreUnavailableError);
    expect(store.writer.writesFailing).toBe(true);
    expect(store.writer.stats.writesFailing).toBe(true);
    await store.ping(); // reads still answer
    await expect(store.checkWrites()).rejects.toBeInstanceOf(StoreUnavailableError);
    expect(restored).toBe(0);
    faults.heal();
    await store.checkWrites(); // the probe commits
    expect(store.writer.writesFailing).toBe(false);
    expect(await getMeta(store.db, 'write_probe')).not.toBeNull();
    expect(restored).toBe(1);
  });

  it('an unacknowledged fault applies every write but reports it failed, as a connection lost after COMMIT', async () => {
    const faults = new StoreFaults();
    opened = await backend.open({ faults });
    const { store } = opened;
    faults.inject('unacknowledged');
    await expect(store.writer.run((trx) => setMeta(trx, 'k', 'applied', NOW))).rejects.toBeInstanceOf(
      StoreUnavailableError,
    );
    expect(await getMeta(store.db, 'k')).toBe('applied');
    faults.heal();
  });

  it('a fault with `match` fails only the statements it matches', async () => {
    const faults = new StoreFaults();
    opened = await backend.open({ faults });
    const { store } = opened;
    await store.writer.run((trx) => setMeta(trx, 'k', 'v1', NOW));
    faults.inject('all', { match: /^select .*from "gateway_meta"/i });
    await store.ping();
    await store.writer.run((trx) => setMeta(trx, 'k', 'v2', NOW));
    await expect(getMeta(store.db, 'k')).rejects.toBeInstanceOf(StoreUnavailableError);
    faults.heal();
    expect(await getMeta(store.db, 'k')).toBe('v2');
  });
});

const postgres = testBackends().find((b) => b.name === 'postgres')!;

describe.skipIf(postgres.skip)('postgres: dropped connections', () => {
  let opened: TestStore | undefined;
  const uncaught: unknown[] = [];
  const onUncaught = (err: unknown) => void uncaught.push(err);

  afterEach(async () => {
    process.off('uncaughtException', onUncaught);
    await opened?.cleanup();
    opened = undefined;
    uncaught.length = 0;
  });

  /** Terminates the given backends from a connection of its own. */
  async function terminate(url: string, pids: number[]): Promise<void> {
    const admin = new pg.Client({ connectionString: url });
    admin.on('error', () => {});
    await admin.connect();
    try {
      await admin.query('select pg_terminate_backend(pid) from pg_stat_activity where pid = any($1::int[])', [pids]);
    } finally {
      await admin.end();
    }
  }

  const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

  it('an idle pooled connection terminated by the server is logged and replaced; the process lives', async () => {
    process.on('uncaughtException', onUncaught);
    const errors: Error[] = [];
    opened = await postgres.open({ onConnectionError: (err) => errors.push(err) });
    const { store } = opened;
    const { rows } = await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(store.db);
    await terminate(opened.options.url!, [rows[0]!.pid]);
    await pause(200);
    await store.ping();
    await store.writer.run((trx) => setMeta(trx, 'k', 'after', NOW));
    expect(await getMeta(store.db, 'k')).toBe('after');
    expect(uncaught).toEqual([]);
    expect(errors.length).toBeGreaterThanOrEqual(1);
  });

  it('a connection terminated while checked out fails its transaction as StoreUnavailableError; the pool recovers', async () => {
    process.on('uncaughtException', onUncaught);
    opened = await postgres.open({ onConnectionError: () => undefined });
    const { store } = opened;
    const url = opened.options.url!;
    const inside = store.db.transaction().execute(async (trx) => {
      const { rows } = await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(trx);
      await terminate(url, [rows[0]!.pid]);
      await pause(200); // the client sits checked out, between queries, when its backend goes
      await sql`select 1`.execute(trx);
    });
    await expect(inside).rejects.toBeInstanceOf(StoreUnavailableError);
    await store.ping();
    await store.writer.run((trx) => setMeta(trx, 'k', 'after', NOW));
    expect(await getMeta(store.db, 'k')).toBe('after');
    expect(uncaught).toEqual([]);
  });

  it('a store opened without a listener of its own still survives a dropped connection', async () => {
    process.on('uncaughtException', onUncaught);
    opened = await postgres.open();
    const bare = await openStore({ ...opened.options });
    try {
      const run = bare.db.transaction().execute(async (trx) => {
        const { rows } = await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(trx);
        await terminate(opened!.options.url!, [rows[0]!.pid]);
        await pause(200);
      });
      await run.catch(() => undefined);
      await bare.ping();
      expect(uncaught).toEqual([]);
    } finally {
      await bare.close();
    }
  });
});
