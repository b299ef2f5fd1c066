import { sql } from 'kysely';
import { afterEach, expect, it } from 'vitest';
import { byKey, upsert } from '../../test/helpers/meta-queries.js';
import { describeBackends, type TestStore } from '../../test/helpers/stores.js';
import { GatewayMetrics } from '../metrics/metrics.js';
import { StoreFaults } from './store-faults.js';

/** `gatehouse_store_statements_total` as the metrics page shows it. */
async function statementsTotal(metrics: GatewayMetrics): Promise<number> {
  const match = /^gatehouse_store_statements_total (\d+)$/m.exec(await metrics.render());
  return Number(match?.[1] ?? NaN);
}

describeBackends('statements counted for the metrics', (backend) => {
  let t: TestStore | undefined;
  afterEach(async () => {
    await t?.cleanup();
    t = undefined;
  });

  it('counts each statement once, whichever way it runs: db, a prepared query, the writer with its begin and commit', async () => {
    t = await backend.open();
    let count = 0;
    t.store.observeStatements(() => count++);
    const now = new Date().toISOString();

    await sql`select 1`.execute(t.store.db);
    expect(count).toBe(1);
    // A prepared query (on SQLite through the direct lane, beside Kysely's connections).
    await byKey.first(t.store.db, { key: 'nope' });
    expect(count).toBe(2);
    // begin, two statements, commit (PostgreSQL's writer may add a `set local` when it relaxes a batch).
    count = 0;
    await t.store.writer.run(async (trx) => {
      await upsert.run(trx, { key: 'a', value: '1', now });
      await byKey.first(trx, { key: 'a' });
    });
    expect(count).toBeGreaterThanOrEqual(4);
    expect(count).toBeLessThanOrEqual(5);
    // A statement that fails still went to the database.
    count = 0;
    await expect(sql`select * from no_such_table`.execute(t.store.db)).rejects.toThrow();
    expect(count).toBe(1);
  });

  it('feeds gatehouse_store_statements_total, also through the fault seam', async () => {
    t = await backend.open({ faults: new StoreFaults() });
    const metrics = new GatewayMetrics();
    t.store.observeStatements(() => metrics.storeStatements.inc());
    expect(await statementsTotal(metrics)).toBe(0);
    await sql`select 1`.execute(t.store.db);
    await byKey.first(t.store.db, { key: 'nope' });
    expect(await statementsTotal(metrics)).toBe(2);
  });
});
