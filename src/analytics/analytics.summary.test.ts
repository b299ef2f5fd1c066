import type { Kysely } from 'kysely';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { type TestStore, describeBackends } from '../../test/helpers/stores.js';
import { ManualClock } from '../lib/clock.js';
import { createSession } from '../sessions/sessions.repo.js';
import type { Database } from '../store/database.js';
import { hoursSoFar, periodWindow } from './analytics.periods.js';
import { finishedTurnCount, turnSeries } from './analytics.repo.js';
import { createAnalyticsService } from './analytics.service.js';

/** "Now" of every test: 2026-11-21 10:30 UTC. */
const NOW = Date.UTC(2026, 10, 21, 10, 30);
const at = (hour: number, ms = 0) => new Date(Date.UTC(2026, 10, 21, hour) + ms).toISOString();

let seq = 0;
/** A finished turn of `session` accepted at `accepted` that took `ms` milliseconds (null: still running). */
function turnRow(session: string, accepted: string, ms: number | null) {
  seq++;
  const finished = ms === null ? null : new Date(Date.parse(accepted) + ms).toISOString();
  return {
    event_id: `evt_${seq}`,
    session_key: session,
    status: ms === null ? 'running' : 'completed',
    current_tool: null,
    response: null,
    termination_reason: null,
    context_epoch: 0,
    accepted_at: accepted,
    started_at: accepted,
    finished_at: finished,
    updated_at: finished ?? accepted,
    payload: '{}',
    result: null,
    pending: null,
    owner: null,
  };
}

describeBackends('analytics summary: turn latency per bucket', (backend) => {
  let t: TestStore;
  let db: Kysely<Database>;

  beforeEach(async () => {
    t = await backend.open();
    db = t.store.db;
    await createSession(db, { key: 'gateway:api:a', channel: 'api', metadata: {}, now: at(0) });
    await createSession(db, {
      key: 'gateway:api@alice:b',
      channel: 'api',
      metadata: {},
      now: at(0),
      principal: 'alice',
    });
  });
  afterEach(async () => {
    await t.cleanup();
  });

  it('p50 and p99 are nearest ranks per hour, computed by the database; running turns do not count', async () => {
    // Hour 08: latencies 100 … 1000 ms (ten turns); hour 09: one of 2 500 ms; a running turn in hour 10.
    const rows = [];
    for (let i = 1; i <= 10; i++) rows.push(turnRow('gateway:api:a', at(8, i * 1000), i * 100));
    rows.push(turnRow('gateway:api@alice:b', at(9, 0), 2500));
    rows.push(turnRow('gateway:api:a', at(10, 0), null));
    await db.insertInto('turns').values(rows).execute();

    const today = periodWindow('today', NOW);
    const series = await turnSeries(db, t.store.driver, today, 'hour');
    expect(Object.fromEntries(series)).toEqual({
      '2026-11-21T08': { turns: 10, p50Ms: 500, p99Ms: 1000 },
      '2026-11-21T09': { turns: 1, p50Ms: 2500, p99Ms: 2500 },
    });
    expect(await finishedTurnCount(db, today)).toBe(11);
    expect(Object.fromEntries(await turnSeries(db, t.store.driver, today, 'day', { principal: 'alice' }))).toEqual({
      '2026-11-21': { turns: 1, p50Ms: 2500, p99Ms: 2500 },
    });

    const summary = await createAnalyticsService({ store: t.store, clock: new ManualClock(NOW) }).summary('today');
    expect(summary.unit).toBe('hour');
    expect(summary.series.map((point) => point.bucket)).toEqual(hoursSoFar(NOW));
    expect(summary.series.map((point) => point.turns?.turns ?? 0)).toEqual([0, 0, 0, 0, 0, 0, 0, 0, 10, 1, 0]);
    expect(summary.turns).toBe(11);
  });
});
