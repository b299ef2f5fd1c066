import { sql } from 'kysely';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { type TestStore, describeBackends } from '../../test/helpers/stores.js';
import { ensureSession, getSession } from '../sessions/index.js';
import { deleteSession } from '../sessions/sessions.repo.js';
import { GeneralTurnPath } from './turn-path.general.js';
import { getTurn, insertTurn } from './turns.repo.js';

const NOW = '2026-11-27T10:00:00.000Z';

describeBackends('the general turn path', (backend) => {
  let t: TestStore;
  let path: GeneralTurnPath;

  beforeEach(async () => {
    t = await backend.open();
    path = new GeneralTurnPath(t.store);
  });
  afterEach(async () => {
    await t.cleanup();
  });

  const accept = (input: { eventId: string; ownerScope?: string | null }) =>
    t.store.writer.run((trx) =>
      path.acceptIntoLiveSession(trx, {
        eventId: input.eventId,
        sessionKey: 's1',
        ownerScope: input.ownerScope ?? null,
        payload: { text: input.eventId },
        owner: 'gw1',
        now: NOW,
      }),
    );

  it('accepts into a live session with its epoch in one statement; not into a missing or deleted one, nor twice', async () => {
    expect(await accept({ eventId: 'evt_a' })).toBeNull();
    expect(await getTurn(t.store.db, 'evt_a')).toBeNull();
    await ensureSession(t.store.db, { key: 's1', channel: 'api', now: NOW });
    await sql`update sessions set context_epoch = 3 where key = 's1'`.execute(t.store.db);
    const accepted = await accept({ eventId: 'evt_a' });
    const turn = await getTurn(t.store.db, 'evt_a');
    expect(accepted).toEqual({ seq: turn!.seq });
    expect(turn).toMatchObject({ status: 'accepted', contextEpoch: 3, owner: 'gw1', payload: { text: 'evt_a' } });
    expect(await accept({ eventId: 'evt_a' })).toBeNull();
    // Not into another principal's session (DECISIONS §18); into its owner's, yes.
    expect(await accept({ eventId: 'evt_x', ownerScope: 'bob' })).toBeNull();
    expect(await accept({ eventId: 'evt_y', ownerScope: 'default' })).not.toBeNull();
    expect(await deleteSession(t.store.db, 's1', NOW)).toBe(true);
    expect(await accept({ eventId: 'evt_b' })).toBeNull();
    expect(await getTurn(t.store.db, 'evt_b')).toBeNull();
  });

  it("a claim reads the session's paused turns, unless its acceptance created the session", async () => {
    await ensureSession(t.store.db, { key: 's1', channel: 'api', now: NOW });
    const insert = (eventId: string) =>
      insertTurn(t.store.db, { eventId, sessionKey: 's1', contextEpoch: 0, payload: {}, owner: null, now: NOW });
    await insert('evt_1');
    await insert('evt_2');
    await sql`update turns set status = 'waiting_approval' where event_id = 'evt_1'`.execute(t.store.db);
    const input = { sessionKey: 's1', eventId: 'evt_2', owner: 'gw1', unconfirmed: false };
    expect(await path.claim(input).prepare()).toBe('blocked');
    // The hint says no turn came before: nothing is read.
    let statements = 0;
    t.store.observeStatements(() => statements++);
    expect(await path.claim({ ...input, newSession: true }).prepare()).toBe('ready');
    expect(statements).toBe(0);
  });

  it("a claim's record tells the session's first message", async () => {
    await ensureSession(t.store.db, { key: 's1', channel: 'api', now: NOW });
    const record = (eventId: string) =>
      t.store.writer.run((trx) =>
        path.claim({ sessionKey: 's1', eventId, owner: 'gw1', unconfirmed: false }).record(trx, {
          message: {
            id: `msg_${eventId}`,
            sessionKey: 's1',
            role: 'user',
            content: 'hi',
            toolCalls: null,
            toolCallId: null,
            name: null,
            eventId,
            createdAt: NOW,
          },
          event: { type: 'status', data: { status: 'running' } },
          channel: 'api',
          window: { maxTokens: 64_000, maxMessageTokens: 16_000, maxMessages: 100 },
        }),
      );
    expect(await record('evt_1')).toEqual({ epoch: 0, first: true });
    expect(await record('evt_2')).toEqual({ epoch: 0 });
    expect((await getSession(t.store.db, 's1'))?.messageCount).toBe(2);
  });
});
