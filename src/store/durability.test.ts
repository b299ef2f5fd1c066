import { mkdtempSync, readdirSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { DurabilityBarrier, DurableFile } from './durability.js';
import { StoreUnavailableError } from './errors.js';
import { getMeta, setMeta } from './meta.repo.js';
import { openStore, type Store } from './store.js';
import { GroupCommit } from './group-commit.js';

function deferred(): { promise: Promise<void>; resolve: () => void; reject: (e: Error) => void } {
  let resolve!: () => void;
  let reject!: (e: Error) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

describe('DurabilityBarrier', () => {
  it('coalesces concurrent callers: a burst costs at most two flushes', async () => {
    const gates: Array<ReturnType<typeof deferred>> = [];
    const barrier = new DurabilityBarrier(() => {
      const gate = deferred();
      gates.push(gate);
      return gate.promise;
    });
    const first = barrier.sync();
    const burst = Array.from({ length: 10 }, () => barrier.sync());
    expect(gates).toHaveLength(1);
    gates[0]!.resolve();
    await first;
    // Callers that arrived during the first flush need a flush that started after them.
    await Promise.resolve();
    await new Promise((r) => setImmediate(r));
    expect(gates).toHaveLength(2);
    gates[1]!.resolve();
    await Promise.all(burst);
    expect(barrier.syncs).toBe(2);
  });

  it('a caller never rides on a flush that began before it', async () => {
    const started: number[] = [];
    let n = 0;
    const gates: Array<ReturnType<typeof deferred>> = [];
    const barrier = new DurabilityBarrier(() => {
      started.push(++n);
      const gate = deferred();
      gates.push(gate);
      return gate.promise;
    });
    void barrier.sync();
    let lateDone = false;
    const late = barrier.sync().then(() => {
      lateDone = true;
    });
    gates[0]!.resolve();
    await new Promise((r) => setImmediate(r));
    expect(lateDone).toBe(false);
    gates[1]!.resolve();
    await late;
    expect(started).toEqual([1, 2]);
  });
});

describe('DurableFile', () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });
  const dir = () => {
    const d = mkdtempSync(join(tmpdir(), 'gatehouse-durable-file-'));
    dirs.push(d);
    return d;
  };
  /** Descriptors of this process open on `path`. */
  const openOn = (path: string): number =>
    readdirSync('/proc/self/fd').filter((fd) => {
      try {
        return readlinkTarget(fd) === path;
      } catch {
        return false;
      }
    }).length;

  it('a file that does not exist yet has nothing to flush; once it does, one descriptor serves every sync', async () => {
    const path = join(dir(), 'wal');
    const file = new DurableFile(path);
    await file.sync(); // ENOENT: nothing written yet
    writeFileSync(path, 'frames');
    for (let i = 0; i < 5; i++) await file.sync();
    await Promise.all([file.sync(), file.sync(), file.sync()]);
    if (process.platform === 'linux') expect(openOn(path)).toBe(1);
    await file.close();
    if (process.platform === 'linux') expect(openOn(path)).toBe(0);
    await expect(file.sync()).rejects.toThrow(/closed/);
    await file.close(); // idempotent
  });
});

function readlinkTarget(fd: string): string {
  return readlinkSync(`/proc/self/fd/${fd}`);
}

describe('GroupCommit with a durability hook', () => {
  const dirs: string[] = [];
  const stores: Store[] = [];
  afterEach(async () => {
    for (const store of stores.splice(0)) await store.close();
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });
  const open = async () => {
    const dir = mkdtempSync(join(tmpdir(), 'gatehouse-durable-'));
    dirs.push(dir);
    const store = await openStore({ driver: 'sqlite', dataDir: dir });
    stores.push(store);
    return store;
  };
  const now = () => new Date().toISOString();

  it('resolves a committed batch only once the hook says it is durable, while later batches commit', async () => {
    const store = await open();
    const gate = deferred();
    let calls = 0;
    const writer = new GroupCommit(store.db, { durable: () => (++calls === 1 ? gate.promise : Promise.resolve()) });
    let firstDone = false;
    const first = writer
      .run((trx) => setMeta(trx, 'a', '1', now()))
      .then(() => {
        firstDone = true;
      });
    await new Promise((r) => setImmediate(r));
    await new Promise((r) => setImmediate(r));
    // Committed (visible) but not yet acknowledged.
    expect(await getMeta(store.db, 'a')).toBe('1');
    expect(firstDone).toBe(false);
    // The next batch is not held up by the pending fsync.
    await writer.run((trx) => setMeta(trx, 'b', '2', now()));
    expect(await getMeta(store.db, 'b')).toBe('2');
    gate.resolve();
    await first;
    expect(firstDone).toBe(true);
    await writer.close();
  });

  it('rejects the batch with StoreUnavailableError when durability fails', async () => {
    const store = await open();
    const writer = new GroupCommit(store.db, { durable: () => Promise.reject(new Error('EIO')) });
    await expect(writer.run((trx) => setMeta(trx, 'c', '3', now()))).rejects.toBeInstanceOf(StoreUnavailableError);
    await writer.close();
  });

  it('an op that need not be durable settles at its commit; a batch of such ops costs no fsync', async () => {
    const store = await open();
    const gate = deferred();
    let calls = 0;
    const writer = new GroupCommit(store.db, {
      durable: () => {
        calls++;
        return gate.promise;
      },
    });
    await writer.run((trx) => setMeta(trx, 'quick', '1', now()), { durable: false });
    expect(calls).toBe(0);
    let durableDone = false;
    let quickDone = false;
    const durable = writer
      .run((trx) => setMeta(trx, 'slow', '2', now()))
      .then(() => {
        durableDone = true;
      });
    const quick = writer
      .run((trx) => setMeta(trx, 'quick2', '3', now()), { durable: false })
      .then(() => {
        quickDone = true;
      });
    await quick;
    expect(quickDone).toBe(true);
    expect(durableDone).toBe(false); // same batch, still waiting for its fsync
    expect(calls).toBe(1);
    gate.resolve();
    await durable;
    // sync(): everything committed so far made durable.
    await writer.sync();
    expect(calls).toBe(2);
    await writer.close();
  });

  it('sync() rejects with StoreUnavailableError when the flush fails, and health sees writes failing', async () => {
    const store = await open();
    const writer = new GroupCommit(store.db, { durable: () => Promise.reject(new Error('EIO')) });
    await writer.run((trx) => setMeta(trx, 'd', '4', now()), { durable: false });
    await expect(writer.sync()).rejects.toBeInstanceOf(StoreUnavailableError);
    expect(writer.writesFailing).toBe(true);
    await writer.close();
  });

  it('the SQLite store acknowledges writes after a WAL fsync', async () => {
    const store = await open();
    const results = await Promise.all(
      Array.from({ length: 50 }, (_, i) => store.writer.run((trx) => setMeta(trx, `k${i}`, `v${i}`, now()))),
    );
    expect(results).toHaveLength(50);
    expect(await getMeta(store.db, 'k49')).toBe('v49');
  });
});
