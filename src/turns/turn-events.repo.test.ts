import type { Kysely } from 'kysely';
import { afterEach, beforeEach, expect, it } from 'vitest';
import type { Database } from '../store/database.js';
import { type TestStore, describeBackends } from '../../test/helpers/stores.js';
import { appendTurnEvent, lastTurnEventSeq, listTurnEvents } from './turn-events.repo.js';

const BASE = Date.UTC(2026, 10, 21, 10, 0, 0, 0);
const at = (seconds: number): string => new Date(BASE + seconds * 1000).toISOString();

describeBackends('turn events repository', (backend) => {
  let t: TestStore;
  let db: Kysely<Database>;

  beforeEach(async () => {
    t = await backend.open();
    db = t.store.db;
  });
  afterEach(async () => {
    await t.cleanup();
  });

  async function seed(): Promise<void> {
    // Stored out of order: reads follow seq, not insertion.
    for (const seq of [2, 1, 5, 3, 4]) {
      await appendTurnEvent(db, { eventId: 'evt_1', seq, type: 'delta', data: { content: `c${seq}` }, now: at(seq) });
    }
    await appendTurnEvent(db, { eventId: 'evt_2', seq: 1, type: 'done', data: null, now: at(9) });
  }

  it('lists a turn’s events in seq order with their data', async () => {
    await seed();
    const events = await listTurnEvents(db, 'evt_1', 0, 100);
    expect(events.map((e) => e.seq)).toEqual([1, 2, 3, 4, 5]);
    expect(events[0]).toEqual({ seq: 1, type: 'delta', data: { content: 'c1' }, createdAt: at(1) });
    expect(await listTurnEvents(db, 'evt_2', 0, 100)).toEqual([{ seq: 1, type: 'done', data: null, createdAt: at(9) }]);
  });

  it('resumes strictly after afterSeq and honours limit', async () => {
    await seed();
    expect((await listTurnEvents(db, 'evt_1', 2, 100)).map((e) => e.seq)).toEqual([3, 4, 5]);
    expect((await listTurnEvents(db, 'evt_1', 1, 2)).map((e) => e.seq)).toEqual([2, 3]);
    expect(await listTurnEvents(db, 'evt_1', 5, 100)).toEqual([]);
    expect(await listTurnEvents(db, 'evt_missing', 0, 100)).toEqual([]);
  });

  it('lastTurnEventSeq is the highest seq, 0 when there are none', async () => {
    expect(await lastTurnEventSeq(db, 'evt_1')).toBe(0);
    await seed();
    expect(await lastTurnEventSeq(db, 'evt_1')).toBe(5);
    expect(await lastTurnEventSeq(db, 'evt_2')).toBe(1);
  });

  it('refuses a duplicate seq for the same turn', async () => {
    await seed();
    await expect(
      appendTurnEvent(db, { eventId: 'evt_1', seq: 3, type: 'delta', data: {}, now: at(10) }),
    ).rejects.toThrow();
    expect((await listTurnEvents(db, 'evt_1', 2, 1))[0]!.data).toEqual({ content: 'c3' });
  });
});
