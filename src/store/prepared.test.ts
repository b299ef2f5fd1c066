import { afterEach, beforeEach, expect, it } from 'vitest';
import { byKey, upsert } from '../../test/helpers/meta-queries.js';
import { describeBackends, type TestStore } from '../../test/helpers/stores.js';
import { StoreUnavailableError } from './errors.js';
import { StoreFaults } from './store-faults.js';
import { prepared } from './prepared.js';

/** A fixed `in` list and a limit: constants stay part of the query, inputs change per run. */
const someOf = prepared((ex, input: { after: string; limit: number }) =>
  ex
    .selectFrom('gateway_meta')
    .select('key')
    .where('key', 'in', ['a', 'b', 'c'])
    .where('key', '>', input.after)
    .orderBy('key')
    .limit(input.limit),
);

describeBackends('prepared queries', (backend) => {
  let t: TestStore;
  beforeEach(async () => {
    t = await backend.open();
  });
  afterEach(async () => {
    await t.cleanup();
  });

  it('run with new values each time, on the database and inside a transaction, with the same compiled text', async () => {
    const now = new Date().toISOString();
    await t.store.writer.run(async (trx) => {
      for (const key of ['a', 'b', 'c', 'd']) await upsert.run(trx, { key, value: `v-${key}`, now });
    });
    expect(await byKey.first(t.store.db, { key: 'b' })).toEqual({ key: 'b', value: 'v-b' });
    expect(await byKey.first(t.store.db, { key: 'zzz' })).toBeUndefined();
    expect(await upsert.affected(t.store.db, { key: 'b', value: 'again', now })).toBe(1);
    expect((await byKey.first(t.store.db, { key: 'b' }))?.value).toBe('again');
    expect((await someOf.rows(t.store.db, { after: '', limit: 2 })).map((r) => r.key)).toEqual(['a', 'b']);
    expect((await someOf.rows(t.store.db, { after: 'a', limit: 10 })).map((r) => r.key)).toEqual(['b', 'c']);
    const inside = await t.store.writer.run((trx) => byKey.first(trx, { key: 'd' }));
    expect(inside?.value).toBe('v-d');
  });

  it('answers exactly as the same query built each time', async () => {
    const now = new Date().toISOString();
    await upsert.run(t.store.db, { key: 'x', value: 'y', now });
    const built = await t.store.db.selectFrom('gateway_meta').select(['key', 'value']).where('key', '=', 'x').execute();
    expect(await byKey.rows(t.store.db, { key: 'x' })).toEqual(built);
  });

  // On SQLite a prepared statement runs at once on the one connection when it may (DirectLane): these pin down
  // that it still runs where Kysely would have run it.
  it('run outside a transaction while another one is open, does not join it: its rollback keeps the row', async () => {
    const now = new Date().toISOString();
    let outside: Promise<unknown> | undefined;
    await expect(
      t.store.db.transaction().execute(async (trx) => {
        await upsert.run(trx, { key: 'inside', value: '1', now });
        outside = upsert.run(t.store.db, { key: 'outside', value: '1', now });
        // Give the outside statement every chance to run while the transaction is open.
        await new Promise((resolve) => setImmediate(resolve));
        throw new Error('roll back');
      }),
    ).rejects.toThrow('roll back');
    await outside;
    expect(await byKey.first(t.store.db, { key: 'inside' })).toBeUndefined();
    expect(await byKey.first(t.store.db, { key: 'outside' })).toEqual({ key: 'outside', value: '1' });
  });

  it('run inside a transaction, is rolled back with it and sees its uncommitted rows', async () => {
    const now = new Date().toISOString();
    await expect(
      t.store.db.transaction().execute(async (trx) => {
        await upsert.run(trx, { key: 'k', value: 'v', now });
        expect(await byKey.first(trx, { key: 'k' })).toEqual({ key: 'k', value: 'v' });
        throw new Error('roll back');
      }),
    ).rejects.toThrow('roll back');
    expect(await byKey.first(t.store.db, { key: 'k' })).toBeUndefined();
  });

  it('fail with StoreUnavailableError while a fault is injected and once the store is closed', async () => {
    const faults = new StoreFaults();
    const faulty = await backend.open({ faults });
    try {
      const now = new Date().toISOString();
      await upsert.run(faulty.store.db, { key: 'a', value: '1', now });
      faults.inject('writes');
      await expect(upsert.run(faulty.store.db, { key: 'b', value: '1', now })).rejects.toBeInstanceOf(
        StoreUnavailableError,
      );
      expect(await byKey.first(faulty.store.db, { key: 'a' })).toEqual({ key: 'a', value: '1' });
      faults.inject('all');
      await expect(byKey.first(faulty.store.db, { key: 'a' })).rejects.toBeInstanceOf(StoreUnavailableError);
      faults.heal();
      expect(await byKey.first(faulty.store.db, { key: 'b' })).toBeUndefined();
      await faulty.store.close();
      await expect(byKey.first(faulty.store.db, { key: 'a' })).rejects.toBeInstanceOf(StoreUnavailableError);
    } finally {
      await faulty.cleanup();
    }
  });
});
