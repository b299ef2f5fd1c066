import { sql } from 'kysely';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { describeBackends, type TestStore } from '../../test/helpers/stores.js';
import { getMeta, setMeta } from './meta.repo.js';

describeBackends('group commit: durable and urgent ops', (backend) => {
  let t: TestStore;
  beforeEach(async () => {
    t = await backend.open();
  });
  afterEach(async () => {
    await t.cleanup();
  });
  const now = () => new Date().toISOString();

  it('are visible once settled; where a commit is durable by itself they skip the flush wait, a batch with a durable op does not', async () => {
    const setting = async (durable: boolean): Promise<string | null> =>
      t.store.writer.run(
        async (trx) => {
          await setMeta(trx, `k-${String(durable)}`, 'v', now());
          if (backend.name !== 'postgres') return null;
          const row = await sql<{ value: string }>`select current_setting('synchronous_commit') as value`.execute(trx);
          return row.rows[0]!.value;
        },
        { durable },
      );
    const relaxed = await setting(false);
    const strict = await setting(true);
    expect(await getMeta(t.store.db, 'k-false')).toBe('v');
    expect(await getMeta(t.store.db, 'k-true')).toBe('v');
    if (backend.name === 'postgres') {
      expect(relaxed).toBe('off');
      expect(strict).toBe('on');
      expect(t.store.writer.syncsApart).toBe(false);
    } else {
      expect(t.store.writer.syncsApart).toBe(true); // the WAL fsync is separate: sync() makes it durable later
    }
    await t.store.writer.sync();
  });

  it('urgent ops lead the next batch, each class in submission order', async () => {
    const order: string[] = [];
    const op = (name: string) => async () => {
      order.push(name);
      return Promise.resolve();
    };
    // The first op starts a batch; everything queued while it commits forms the next one.
    const first = t.store.writer.run(op('first'));
    await new Promise((resolve) => setImmediate(resolve));
    const rest = [
      t.store.writer.run(op('b1')),
      t.store.writer.run(op('u1'), { urgent: true }),
      t.store.writer.run(op('b2')),
      t.store.writer.run(op('u2'), { urgent: true }),
    ];
    await Promise.all([first, ...rest]);
    expect(order).toEqual(['first', 'u1', 'u2', 'b1', 'b2']);
  });
});
