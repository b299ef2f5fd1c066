import { type Kysely, sql } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type TestStore, testBackends } from '../../test/helpers/stores.js';
import { claimIdempotencyKey } from '../idempotency/idempotency.repo.js';
import { contextMessages, ensureSession, getSession } from '../sessions/index.js';
import { deleteSession } from '../sessions/sessions.repo.js';
import type { Database } from '../store/index.js';
import { listTurnEvents } from './turn-events.repo.js';
import {
  acceptIntoLiveSession,
  acceptIntoNewSession,
  appendTurnEvents,
  claimIfFree,
  finishHeldTurn,
  lockSessionForClaim,
  recordClaimedMessage,
} from './turn-path.pg.js';
import { claimTurn, getTurn, insertTurn, pauseTurn } from './turns.repo.js';

const NOW = '2026-11-27T10:00:00.000Z';
const budget = (maxMessages: number) => ({ maxTokens: 64_000, maxMessageTokens: 16_000, maxMessages });
const postgres = testBackends().find((backend) => backend.name === 'postgres')!;

describe.skipIf(postgres.skip)('turn path statements on PostgreSQL (ADR 0032)', () => {
  let t: TestStore;
  let db: Kysely<Database>;

  beforeEach(async () => {
    t = await postgres.open();
    db = t.store.db;
  });
  afterEach(async () => {
    await t.cleanup();
  });

  async function accepted(eventId: string, sessionKey = 's1') {
    return (
      await insertTurn(db, { eventId, sessionKey, contextEpoch: 0, payload: { text: eventId }, owner: null, now: NOW })
    ).turn;
  }

  const userMessage = (eventId: string, id = `msg_${eventId}`) => ({
    id,
    sessionKey: 's1',
    role: 'user',
    content: 'hello',
    toolCalls: null,
    toolCallId: null,
    name: null,
    eventId,
    createdAt: NOW,
  });

  it('accepts into a live session with its epoch; not into a missing or deleted one, nor an event twice', async () => {
    const input = {
      eventId: 'evt_a',
      sessionKey: 's1',
      ownerScope: null,
      payload: { text: 'a' },
      owner: 'gw1',
      now: NOW,
    };
    expect(await acceptIntoLiveSession(db, input)).toBeNull();
    await ensureSession(db, { key: 's1', channel: 'api', now: NOW });
    await sql`update sessions set context_epoch = 3 where key = 's1'`.execute(db);
    const turn = await acceptIntoLiveSession(db, input);
    expect(turn).toMatchObject({
      eventId: 'evt_a',
      status: 'accepted',
      contextEpoch: 3,
      owner: 'gw1',
      payload: { text: 'a' },
    });
    expect(await acceptIntoLiveSession(db, input)).toBeNull();
    // Not into another principal's session (DECISIONS §18); into its owner's, yes.
    expect(await acceptIntoLiveSession(db, { ...input, eventId: 'evt_x', ownerScope: 'bob' })).toBeNull();
    expect(await acceptIntoLiveSession(db, { ...input, eventId: 'evt_y', ownerScope: 'default' })).not.toBeNull();
    expect(await deleteSession(db, 's1', NOW)).toBe(true);
    expect(await acceptIntoLiveSession(db, { ...input, eventId: 'evt_b' })).toBeNull();
    expect(await getTurn(db, 'evt_b')).toBeNull();
  });

  it('accepts into a new session made with the turn; not where the key has a row, live or deleted', async () => {
    const session = { key: 's1', channel: 'api', now: NOW, agent: 'main', principal: 'default' };
    const input = { eventId: 'evt_a', payload: { text: 'a' }, owner: 'gw1', now: NOW, session };
    const made = await acceptIntoNewSession(db, input);
    expect(made).toEqual({ session: await getSession(db, 's1'), seq: (await getTurn(db, 'evt_a'))!.seq });
    expect(made?.session).toMatchObject({ key: 's1', contextEpoch: 0, messageCount: 0, createdAt: NOW });
    expect(await getTurn(db, 'evt_a')).toMatchObject({ status: 'accepted', contextEpoch: 0, owner: 'gw1' });
    // The key has a row: nothing written.
    expect(await acceptIntoNewSession(db, { ...input, eventId: 'evt_b' })).toBeNull();
    await deleteSession(db, 's1', NOW);
    expect(await acceptIntoNewSession(db, { ...input, eventId: 'evt_c' })).toBeNull();
    expect(await getTurn(db, 'evt_b')).toBeNull();
    expect(await getTurn(db, 'evt_c')).toBeNull();
    // An event already in the ledger: the session is made, the turn is not inserted again.
    const again = await acceptIntoNewSession(db, { ...input, session: { ...session, key: 's2' } });
    expect(again).toMatchObject({ session: { key: 's2' }, seq: null });
    expect((await getTurn(db, 'evt_a'))?.sessionKey).toBe('s1');
  });

  it("the claim's lock is one transaction's at a time; the gate reads the paused turns and the turn's own seq", async () => {
    const other = await t.reopen();
    const first = await accepted('evt_1');
    await accepted('evt_2');
    await pauseTurnOf('evt_1', 'waiting_clarification');
    let inner: Awaited<ReturnType<typeof lockSessionForClaim>> | null = null;
    const outer = await db.transaction().execute(async (trx) => {
      const gate = await lockSessionForClaim(trx, { sessionKey: 's1', eventId: 'evt_2' });
      inner = await other.db
        .transaction()
        .execute((trx2) => lockSessionForClaim(trx2, { sessionKey: 's1', eventId: 'evt_2' }));
      return gate;
    });
    expect(outer.locked).toBe(true);
    expect(inner!.locked).toBe(false);
    expect(outer.self).toEqual({ seq: first.seq + 1, status: 'accepted' });
    expect(outer.clarification?.eventId).toBe('evt_1');
    expect(outer.approval).toBeNull();
    const missing = await db
      .transaction()
      .execute((trx) => lockSessionForClaim(trx, { sessionKey: 's2', eventId: 'nope' }));
    expect(missing).toEqual({ locked: true, self: null, approval: null, clarification: null });
  });

  async function pauseTurnOf(eventId: string, status: 'waiting_approval' | 'waiting_clarification') {
    expect(await claimTurn(db, eventId, { owner: 'gw1', now: NOW })).not.toBeNull();
    expect(
      await pauseTurn(db, eventId, { status, pending: { calls: [] }, response: null, currentTool: null, now: NOW }),
    ).toBe(true);
  }

  it('claims only when no other turn of the session runs and none accepted earlier waits', async () => {
    await accepted('evt_1');
    await accepted('evt_2');
    const input = { sessionKey: 's1', owner: 'gw1', now: NOW };
    expect(await claimIfFree(db, { ...input, eventId: 'evt_2' })).toEqual({ busy: true, claimed: null });
    const first = await claimIfFree(db, { ...input, eventId: 'evt_1' });
    expect(first.busy).toBe(false);
    expect(first.claimed).toMatchObject({ eventId: 'evt_1', status: 'running', owner: 'gw1', startedAt: NOW });
    expect(await claimIfFree(db, { ...input, eventId: 'evt_2' })).toEqual({ busy: true, claimed: null });
    expect((await getTurn(db, 'evt_2'))!.status).toBe('accepted');
    expect(await claimIfFree(db, { ...input, eventId: 'evt_1' })).toEqual({ busy: false, claimed: null });
  });

  it("stores the claim's message and first event on a live session in one statement, nothing on a missing one", async () => {
    await accepted('evt_1');
    const event = { type: 'status', data: { status: 'running' } };
    expect(await recordClaimedMessage(db, { message: userMessage('evt_1'), event, window: budget(3) })).toBeNull();
    expect(await listTurnEvents(db, 'evt_1', 0, 10)).toEqual([]);
    await ensureSession(db, { key: 's1', channel: 'api', now: NOW });
    expect(await recordClaimedMessage(db, { message: userMessage('evt_1'), event, window: budget(3) })).toEqual({
      epoch: 0,
      window: [{ entry: { role: 'user', content: 'hello', toolCalls: null, toolCallId: null, name: null }, bytes: 21 }],
    });
    expect((await getSession(db, 's1'))!.messageCount).toBe(1);
    expect(await contextMessages(db, 's1', 0, 10)).toMatchObject([{ id: 'msg_evt_1', role: 'user', content: 'hello' }]);
    expect(await listTurnEvents(db, 'evt_1', 0, 10)).toMatchObject([
      { seq: 1, type: 'status', data: { status: 'running' } },
    ]);
  });

  it("reads the context window with the claim's writes: the newest of the epoch by id, the new message among them", async () => {
    await ensureSession(db, { key: 's1', channel: 'api', now: NOW });
    for (const [id, role, epoch] of [
      ['msg_0', 'user', 0],
      ['msg_1', 'assistant', 1],
      ['msg_2', 'user', 1],
      ['msg_4', 'tool', 1],
    ] as const) {
      await sql`insert into messages (id, session_key, context_epoch, role, content, tool_calls, created_at)
        values (${id}, 's1', ${epoch}, ${role}, ${id}, ${role === 'assistant' ? '[{"id":"c"}]' : null}, ${NOW})`.execute(
        db,
      );
    }
    await sql`update sessions set context_epoch = 1 where key = 's1'`.execute(db);
    await accepted('evt_1');
    const event = { type: 'status', data: { status: 'running' } };
    const recorded = await recordClaimedMessage(db, {
      message: userMessage('evt_1', 'msg_3'),
      event,
      window: budget(3),
    });
    expect(recorded!.epoch).toBe(1);
    // Oldest first, by id: the newest 3 of the epoch as they were, the new msg_3 among them (msg_4 is a later id).
    expect(recorded!.window.map((sized) => sized.entry.content)).toEqual(['msg_1', 'msg_2', 'hello', 'msg_4']);
    const wide = await db.transaction().execute(async (trx) => {
      await accepted('evt_2');
      return recordClaimedMessage(trx, { message: userMessage('evt_2', 'msg_5'), event, window: budget(100) });
    });
    expect(wide!.window.map((sized) => sized.entry.content)).toEqual(['msg_1', 'msg_2', 'hello', 'msg_4', 'hello']);
    expect(wide!.window[0]!.entry.toolCalls).toEqual([{ id: 'c' }]);
  });

  it('ends a held turn with its reply, usage, idempotency TTL and final event once; never one held elsewhere', async () => {
    await ensureSession(db, { key: 's1', channel: 'api', now: NOW });
    await accepted('evt_1');
    await claimTurn(db, 'evt_1', { owner: 'gw1', now: NOW });
    await claimIdempotencyKey(db, {
      scope: 'p:s1',
      key: 'k1',
      fingerprint: 'f',
      eventId: 'evt_1',
      sessionKey: 's1',
      wait: true,
      createdAt: NOW,
      expiresAt: null,
    });
    const reply = { ...userMessage('evt_1', 'msg_reply'), role: 'assistant', content: 'hi', toolCalls: [{ id: 'c' }] };
    const finish = (owner: string) =>
      finishHeldTurn(db, {
        eventId: 'evt_1',
        owner,
        status: 'completed',
        response: 'hi',
        terminationReason: 'completed',
        result: { message: { content: 'hi' } },
        messages: [{ ...reply, contextEpoch: 0 }],
        usage: [
          {
            id: 'use_1',
            eventId: 'evt_1',
            sessionKey: 's1',
            channel: 'api',
            model: 'm',
            inputTokens: 3,
            outputTokens: 5,
            costNanoUsd: 9_000_000_000_123,
            now: NOW,
          },
        ],
        idempotencyExpiresAt: '2026-11-27T11:00:00.000Z',
        event: { seq: 2, type: 'done', data: { status: 'completed' } },
        now: NOW,
      });
    expect(await finish('gw2')).toBeNull();
    expect((await getTurn(db, 'evt_1'))!.status).toBe('running');
    expect(await contextMessages(db, 's1', 0, 10)).toEqual([]);
    expect(await listTurnEvents(db, 'evt_1', 0, 10)).toEqual([]);

    const ended = await finish('gw1');
    expect(ended).toMatchObject({
      status: 'completed',
      response: 'hi',
      terminationReason: 'completed',
      finishedAt: NOW,
    });
    expect(ended!.result).toEqual({ message: { content: 'hi' } });
    expect(await contextMessages(db, 's1', 0, 10)).toMatchObject([
      { id: 'msg_reply', role: 'assistant', content: 'hi', toolCalls: [{ id: 'c' }] },
    ]);
    expect((await getSession(db, 's1'))!.messageCount).toBe(1);
    const usage = await sql<{ cost_nano_usd: number; input_tokens: number }>`select * from usage_records`.execute(db);
    expect(usage.rows).toMatchObject([{ cost_nano_usd: 9_000_000_000_123, input_tokens: 3 }]);
    const records = await sql<{ expires_at: string }>`select expires_at from idempotency_records`.execute(db);
    expect(records.rows).toEqual([{ expires_at: '2026-11-27T11:00:00.000Z' }]);
    expect(await listTurnEvents(db, 'evt_1', 0, 10)).toMatchObject([{ seq: 2, type: 'done' }]);
    // First terminal status wins: a second outcome writes nothing.
    expect(await finish('gw1')).toBeNull();
    expect((await getSession(db, 's1'))!.messageCount).toBe(1);
  });

  it('stores any number of streamed events in one statement, and a relaxed transaction still commits', async () => {
    const events = [1, 2, 3].map((seq) => ({
      eventId: 'evt_1',
      seq,
      type: 'delta',
      data: { text: `d${seq}` },
      now: NOW,
    }));
    await t.store.writer.run((trx) => appendTurnEvents(trx, events), { durable: false });
    expect(await listTurnEvents(db, 'evt_1', 0, 10)).toMatchObject(
      events.map((e) => ({ seq: e.seq, type: 'delta', data: e.data })),
    );
    // A transaction that runs nothing sends nothing, and the connection stays usable.
    await db.transaction().execute(async () => undefined);
    expect((await sql<{ one: number }>`select 1 as one`.execute(db)).rows).toEqual([{ one: 1 }]);
  });
});
