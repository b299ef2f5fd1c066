import { afterEach, beforeEach, expect, it } from 'vitest';
import { type TestStore, describeBackends } from '../../../test/helpers/stores.js';
import { deliveredReplies, type DeliveredReplies } from './platform.delivered.js';

const NOW = '2026-11-21T10:00:00.000Z';
const HOUR_AGO = '2026-11-21T09:00:00.000Z';

describeBackends('the record of posted platform replies', (backend) => {
  let t: TestStore;
  let telegram: DeliveredReplies;
  let slack: DeliveredReplies;

  beforeEach(async () => {
    t = await backend.open();
    telegram = deliveredReplies(t.store.db, 'telegram', () => NOW);
    slack = deliveredReplies(t.store.db, 'slack', () => NOW);
  });
  afterEach(() => t.cleanup());

  async function turn(eventId: string, sessionKey: string, status: string, updatedAt = NOW): Promise<void> {
    await t.store.db
      .insertInto('turns')
      .values({
        event_id: eventId,
        session_key: sessionKey,
        status,
        context_epoch: 0,
        accepted_at: updatedAt,
        updated_at: updatedAt,
        payload: '{}',
        owner: null,
      })
      .execute();
  }

  it('owes the settled and paused turns of its own chats, oldest first, until their reply is recorded', async () => {
    await turn('t1', 'gateway:telegram:1', 'completed');
    await turn('t2', 'gateway:telegram:2', 'waiting_approval');
    await turn('t3', 'gateway:telegram:1', 'running'); // not settled: its events reach the reply
    await turn('t4', 'gateway:telegram:10', 'interrupted');
    await turn('s1', 'gateway:slack:C1/1.2', 'completed'); // another platform
    await turn('w1', 'gateway:telegramx:1', 'completed'); // a longer platform name sharing the prefix
    await turn('old', 'gateway:telegram:3', 'failed', '2026-11-21T08:00:00.000Z'); // before the window

    expect(await telegram.owed(HOUR_AGO, 10)).toEqual(['t1', 't2', 't4']);
    expect(await slack.owed(HOUR_AGO, 10)).toEqual(['s1']);
    expect(await telegram.owed(HOUR_AGO, 2)).toEqual(['t1', 't2']);

    await telegram.delivered('t1', 'completed');
    await telegram.delivered('t2', 'waiting_approval');
    expect(await telegram.owed(HOUR_AGO, 10)).toEqual(['t4']);

    // The paused turn resumed and settled: its final reply is owed again, then recorded once more.
    await t.store.db.updateTable('turns').set({ status: 'completed' }).where('event_id', '=', 't2').execute();
    expect(await telegram.owed(HOUR_AGO, 10)).toEqual(['t2', 't4']);
    await telegram.delivered('t2', 'completed');
    expect(await telegram.owed(HOUR_AGO, 10)).toEqual(['t4']);
  });

  it('prunes only its own records older than the window', async () => {
    const early = deliveredReplies(t.store.db, 'telegram', () => '2026-11-21T08:30:00.000Z');
    await early.delivered('t-old', 'completed');
    await telegram.delivered('t-new', 'completed');
    await deliveredReplies(t.store.db, 'slack', () => '2026-11-21T08:30:00.000Z').delivered('s-old', 'completed');
    await telegram.prune(HOUR_AGO);
    const left = await t.store.db.selectFrom('platform_replies').select('event_id').orderBy('event_id').execute();
    expect(left.map((r) => r.event_id)).toEqual(['s-old', 't-new']);
  });
});
