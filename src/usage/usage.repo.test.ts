import type { Kysely } from 'kysely';
import { afterEach, beforeEach, expect, it } from 'vitest';
import type { Database } from '../store/database.js';
import { type TestStore, describeBackends } from '../../test/helpers/stores.js';
import { type UsageInput, recordUsage, spentNanoUsdSince } from './usage.repo.js';

const BASE = Date.UTC(2026, 10, 21, 10, 0, 0, 0);
const at = (minutes: number): string => new Date(BASE + minutes * 60_000).toISOString();

function usage(id: string, costNanoUsd: number, minute: number): UsageInput {
  return {
    id,
    eventId: `evt_${id}`,
    sessionKey: 'gateway:api:1',
    channel: 'api',
    model: 'gpt-test',
    inputTokens: 100,
    outputTokens: 50,
    costNanoUsd,
    now: at(minute),
  };
}

describeBackends('usage repository', (backend) => {
  let t: TestStore;
  let db: Kysely<Database>;

  beforeEach(async () => {
    t = await backend.open();
    db = t.store.db;
  });
  afterEach(async () => {
    await t.cleanup();
  });

  it('is 0 when nothing was recorded', async () => {
    expect(await spentNanoUsdSince(db, at(0))).toBe(0);
  });

  it('sums exactly, as an integer, beyond 32 bits', async () => {
    const big = 2 ** 50 + 7; // beyond int4 and float32, exact in a double
    await recordUsage(db, usage('u1', big, 0));
    await recordUsage(db, usage('u2', 3, 1));
    await recordUsage(db, usage('u3', 1_234_567_891, 2));
    const spent = await spentNanoUsdSince(db, at(0));
    expect(spent).toBe(big + 3 + 1_234_567_891);
    expect(Number.isInteger(spent)).toBe(true);
  });

  it('counts records at or after the boundary only', async () => {
    await recordUsage(db, usage('u1', 10, 0));
    await recordUsage(db, usage('u2', 20, 5));
    await recordUsage(db, usage('u3', 40, 10));
    expect(await spentNanoUsdSince(db, at(5))).toBe(60);
    expect(await spentNanoUsdSince(db, new Date(BASE + 5 * 60_000 + 1).toISOString())).toBe(40);
    expect(await spentNanoUsdSince(db, at(11))).toBe(0);
  });

  it('stores every field and refuses a duplicate id', async () => {
    await recordUsage(db, usage('u1', 10, 0));
    await expect(recordUsage(db, usage('u1', 10, 0))).rejects.toThrow();
    const rows = await db.selectFrom('usage_records').selectAll().execute();
    expect(rows).toEqual([
      {
        id: 'u1',
        event_id: 'evt_u1',
        session_key: 'gateway:api:1',
        channel: 'api',
        model: 'gpt-test',
        input_tokens: 100,
        output_tokens: 50,
        cost_nano_usd: 10,
        created_at: at(0),
      },
    ]);
  });
});
