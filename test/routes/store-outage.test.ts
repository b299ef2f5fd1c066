/**
 * The message path through a store outage, in process: the store's fault
 * seam (`StoreFaults`, ADR 0014) fails every query the way an unreachable
 * database or a full disk does, then heals. Every acknowledged message must
 * reach a terminal ledger status without a restart, no event may run twice,
 * a session's turns keep their arrival order, and health follows the store.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { StoreFaults } from '../../src/store/index.js';
import { claimTurn, insertTurn } from '../../src/turns/turns.repo.js';
import { deferred } from '../helpers/deferred.js';
import { chatRequests, echoReply, lastUserText, type FakeReply } from '../helpers/fake-openai.js';
import { adminHeaders, useHarness, type Harness } from '../helpers/harness.js';
import { parseSse } from '../helpers/sse.js';
import { testBackends } from '../helpers/stores.js';
import { msg } from '../routes/builders.js';

interface TurnView {
  event_id: string;
  session_key: string;
  status: string;
  termination_reason: string | null;
  accepted_at: string;
  started_at: string | null;
  finished_at: string | null;
}

const TERMINAL = new Set(['completed', 'incomplete', 'failed', 'interrupted']);

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls `check` every 20 ms until it holds; fails with `label` after `timeoutMs`. */
async function until(check: () => boolean | Promise<boolean>, timeoutMs: number, label: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms: ${label}`);
    await pause(20);
  }
}

async function turnOf(h: Harness, eventId: string): Promise<TurnView | null> {
  const res = await h.adminGet(`/api/v1/turns/${eventId}`);
  return res.statusCode === 200 ? res.json<TurnView>() : null;
}

/** Waits until every turn is terminal (reading the ledger through the API); answers the records. */
/** The visible history of the API session of `chat`, oldest first. */
async function historyOf(h: Harness, chat: string): Promise<Array<{ role: string; content: string }>> {
  const history = await h.adminGet(`/api/v1/sessions/${encodeURIComponent(`gateway:api:${chat}`)}/history`);
  return history.json<{ items: Array<{ role: string; content: string }> }>().items;
}

async function allTerminal(h: Harness, eventIds: string[], timeoutMs: number): Promise<Map<string, TurnView>> {
  const seen = new Map<string, TurnView>();
  await until(
    async () => {
      for (const id of eventIds) {
        if (seen.has(id)) continue;
        const turn = await turnOf(h, id);
        if (turn && TERMINAL.has(turn.status)) seen.set(id, turn);
      }
      return seen.size === eventIds.length;
    },
    timeoutMs,
    `every turn terminal (${eventIds.length} turns)`,
  );
  return seen;
}

/** How often the model was called for each user text. */
function callsPerText(h: Harness): Map<string, number> {
  const calls = new Map<string, number>();
  for (const body of chatRequests(h.fake)) {
    const text = lastUserText(body);
    calls.set(text, (calls.get(text) ?? 0) + 1);
  }
  return calls;
}

/** The user texts in the order the model saw them. */
function modelOrder(h: Harness): string[] {
  return chatRequests(h.fake).map(lastUserText);
}

/** Waits until no job runs or waits in the queue (a job lets go of its slot just after its ledger write). */
async function settled(h: Harness): Promise<void> {
  const { gauges } = h.internals.messages;
  await until(() => gauges.running() === 0 && gauges.queued() === 0, 2_000, 'the queue empty and idle');
}

async function healthStatus(h: Harness): Promise<number> {
  return (await h.inject({ method: 'GET', url: '/api/v1/health' })).statusCode;
}

const postgres = testBackends().find((b) => b.name === 'postgres')!;
const pgUrl = process.env.GATEHOUSE_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

/** The storage block of a gateway on SQLite (the harness's temp dir) or on a fresh PostgreSQL schema. */
function storageFor(backend: 'sqlite' | 'postgres', schema: string): Record<string, unknown> {
  if (backend === 'sqlite') return {};
  const url = new URL(pgUrl);
  url.searchParams.set('options', `-c search_path=${schema}`);
  return { storage: { driver: 'postgres', url: url.toString() } };
}

async function adminQuery(text: string): Promise<void> {
  const client = new pg.Client({ connectionString: pgUrl });
  client.on('error', () => undefined);
  await client.connect();
  try {
    await client.query(text);
  } finally {
    await client.end();
  }
}

for (const backend of ['sqlite', 'postgres'] as const) {
  const skip = backend === 'postgres' && postgres.skip;
  describe.skipIf(skip)(`store outage [${backend}]`, () => {
    const schema = `gh_fault_${randomBytes(6).toString('hex')}`;
    // Model calls the test does not script get the echo `fake: <text>`.
    const rig = useHarness({ fake: { always: echoReply }, autoOpen: false });
    let faults: StoreFaults;

    beforeAll(async () => {
      if (backend === 'postgres') await adminQuery(`create schema ${schema}`);
    });
    afterAll(async () => {
      if (backend === 'postgres') await adminQuery(`drop schema if exists ${schema} cascade`);
    });

    const open = async (config: Record<string, unknown> = {}): Promise<Harness> => {
      faults = new StoreFaults();
      // A fresh schema per test on PostgreSQL: drop what the last test left.
      if (backend === 'postgres') {
        await adminQuery(`drop schema if exists ${schema} cascade`);
        await adminQuery(`create schema ${schema}`);
      }
      return rig.open({ storeFaults: faults, config: { ...storageFor(backend, schema), ...config } });
    };

    /** A gateway with one turn slot, held by turn `g` (session c0) at the model until `gate` resolves. */
    const holdingTheOnlySlot = async () => {
      const h = await open({ agent: { max_concurrent_turns: 1 } });
      const gate = deferred();
      h.fake.enqueue({ after: gate.promise, then: echoReply });
      const g = (await h.message(msg('g', 'c0'))).json<{ event_id: string }>().event_id;
      await until(() => chatRequests(h.fake).length === 1, 5_000, 'the first turn calls the model');
      return { h, gate, g };
    };

    it('a store failure when the model has answered keeps the reply: the outcome is stored once the store heals; the turns queued behind it run then, in order', async () => {
      const h = await open({ agent: { max_concurrent_turns: 1 } });
      const gate = deferred();
      h.fake.enqueue({ after: gate.promise, then: echoReply });
      const a = (await h.message(msg('a', 'c1'))).json<{ event_id: string }>().event_id;
      await until(() => chatRequests(h.fake).length === 1, 5_000, 'the first turn calls the model');
      const b = (await h.message(msg('b', 'c1'))).json<{ event_id: string }>().event_id;
      const c = (await h.message(msg('c', 'c2'))).json<{ event_id: string }>().event_id;

      faults.inject('all');
      gate.resolve(); // the model answers into an unreachable store
      await pause(300);
      expect(chatRequests(h.fake)).toHaveLength(1); // nothing else got as far as the model
      faults.heal();
      const healedAt = Date.now();

      const turns = await allTerminal(h, [a, b, c], 10_000);
      const healMs = Date.now() - healedAt;
      // The reply, its usage and the ledger's end are one commit: written whole once the store is back.
      expect(turns.get(a)).toMatchObject({ status: 'completed', termination_reason: 'completed' });
      expect(turns.get(b)).toMatchObject({ status: 'completed' });
      expect(turns.get(c)).toMatchObject({ status: 'completed' });
      expect(Object.fromEntries(callsPerText(h))).toEqual({ a: 1, b: 1, c: 1 });
      expect(modelOrder(h).indexOf('b')).toBeGreaterThan(modelOrder(h).indexOf('a'));
      expect(healMs).toBeLessThan(5_000);
      const items = await historyOf(h, 'c1');
      expect(items.map((m) => `${m.role}:${m.content}`)).toEqual([
        'user:a',
        'assistant:fake: a',
        'user:b',
        'assistant:fake: b',
      ]);

      // Its stream ends with one `done` event, carrying the reply.
      const events = await h.inject({ method: 'GET', url: `/api/v1/turns/${a}/events`, headers: adminHeaders });
      const done = parseSse(events.body).filter((e) => e.event === 'done');
      expect(done).toHaveLength(1);
      expect(done[0]!.data).toMatchObject({ status: 'completed', content: 'fake: a' });
      await settled(h);
    });

    it('a store failure after the model asked for a tool ends that turn interrupted (store_unavailable), never run again', async () => {
      const h = await open({ agent: { max_concurrent_turns: 1 } });
      const gate = deferred();
      h.fake.enqueue({
        after: gate.promise,
        then: { tool_calls: [{ id: 'call_m', name: 'memory_search', arguments: { query: 'x' } }] },
      });
      const a = (await h.message(msg('a', 'c1'))).json<{ event_id: string }>().event_id;
      await until(() => chatRequests(h.fake).length === 1, 5_000, 'the turn calls the model');
      const b = (await h.message(msg('b', 'c1'))).json<{ event_id: string }>().event_id;

      faults.inject('all');
      gate.resolve(); // the tool step cannot be stored: the turn has had an effect, it is not retried
      await pause(300);
      faults.heal();

      const turns = await allTerminal(h, [a, b], 10_000);
      expect(turns.get(a)).toMatchObject({ status: 'interrupted', termination_reason: 'store_unavailable' });
      expect(turns.get(b)).toMatchObject({ status: 'completed' });
      expect(Object.fromEntries(callsPerText(h))).toEqual({ a: 1, b: 1 });
      const events = await h.inject({ method: 'GET', url: `/api/v1/turns/${a}/events`, headers: adminHeaders });
      const done = parseSse(events.body).filter((e) => e.event === 'done');
      expect(done).toHaveLength(1);
      expect(done[0]!.data).toMatchObject({ status: 'interrupted' });
      await settled(h);
    });

    it('a claim that fails is retried at the head of its lane: a later message of the session never overtakes it', async () => {
      const { h, gate, g } = await holdingTheOnlySlot();
      const m1 = (await h.message(msg('m1', 'c1'))).json<{ event_id: string }>().event_id;
      faults.inject('writes'); // reads answer, every commit fails: m1's claim cannot commit
      gate.resolve();
      await pause(250);
      expect(chatRequests(h.fake)).toHaveLength(1);
      faults.heal();
      const m2 = (await h.message(msg('m2', 'c1'))).json<{ event_id: string }>().event_id;

      const turns = await allTerminal(h, [g, m1, m2], 10_000);
      // g's reply was known when its commit failed: it is stored once writes succeed again.
      expect(turns.get(g)).toMatchObject({ status: 'completed', termination_reason: 'completed' });
      expect(turns.get(m1)?.status).toBe('completed');
      expect(turns.get(m2)?.status).toBe('completed');
      expect(modelOrder(h)).toEqual(['g', 'm1', 'm2']);
    });

    it.skipIf(backend === 'postgres')(
      'a store failure after the claim but before the model call retries the claimed turn: it completes once, its message stored once',
      async () => {
        const h = await open();
        // The claim commits; the reads before the model call fail. (A new session's first message is its whole
        // conversation, known without reading it: what is left to read is the session, for its agent.)
        faults.inject('all', { match: /^select \* from "?sessions"?\b/i });
        const id = (await h.message(msg('early', 'c1'))).json<{ event_id: string }>().event_id;
        await pause(300);
        expect(chatRequests(h.fake)).toHaveLength(0);
        expect((await turnOf(h, id))?.status).toBe('running');
        faults.heal();
        const turns = await allTerminal(h, [id], 5_000);
        expect(turns.get(id)?.status).toBe('completed');
        expect(callsPerText(h).get('early')).toBe(1);
        const roles = (await historyOf(h, 'c1')).map((m) => m.role);
        expect(roles).toEqual(['user', 'assistant']);
        await settled(h);
      },
    );

    it.skipIf(backend === 'sqlite')(
      'on PostgreSQL the claim reads the conversation itself: no read of messages stands between it and the model call',
      async () => {
        const h = await open();
        // Every separate read of the conversation fails; the claim's own statement (ADR 0032) is not one of them.
        faults.inject('all', { match: /^(with recent as \(\s*)?select [\s\S]*from "?messages"?\b/i });
        const id = (await h.message(msg('early', 'c1'))).json<{ event_id: string }>().event_id;
        const turns = await allTerminal(h, [id], 5_000);
        expect(turns.get(id)?.status).toBe('completed');
        expect(callsPerText(h).get('early')).toBe(1);
        faults.heal();
        const roles = (await historyOf(h, 'c1')).map((m) => m.role);
        expect(roles).toEqual(['user', 'assistant']);
        await settled(h);
      },
    );

    it('a claim whose commit was applied but not acknowledged is taken over, not lost: the turn runs once', async () => {
      const { h, gate, g } = await holdingTheOnlySlot();
      const m1 = (await h.message(msg('m1', 'c1'))).json<{ event_id: string }>().event_id;
      faults.inject('unacknowledged'); // every commit applies, and its caller hears it failed
      gate.resolve();
      await until(async () => (await turnOf(h, m1))?.status === 'running', 5_000, 'm1 claimed');
      await pause(200);
      faults.heal();
      const turns = await allTerminal(h, [g, m1], 10_000);
      expect(turns.get(m1)?.status).toBe('completed');
      expect(callsPerText(h).get('m1')).toBe(1);
      const items = await historyOf(h, 'c1');
      expect(items.filter((m) => m.role === 'user').map((m) => m.content)).toEqual(['m1']);
      await settled(h);
    });

    it('an acknowledgement lost with its commit (503, yet accepted) still runs, and a keyed retry replays its event', async () => {
      const h = await open();
      faults.inject('unacknowledged');
      const first = await h.message(msg('lost-ack', 'c1'), { 'idempotency-key': 'k-lost-ack' });
      expect(first.statusCode).toBe(503);
      faults.heal();
      const retry = await h.message(msg('lost-ack', 'c1'), { 'idempotency-key': 'k-lost-ack' });
      expect(retry.statusCode).toBe(202);
      const id = retry.json<{ event_id: string }>().event_id;
      const turns = await allTerminal(h, [id], 8_000);
      expect(turns.get(id)?.status).toBe('completed');
      expect(callsPerText(h).get('lost-ack')).toBe(1);
      await settled(h);
    });

    it('an accepted turn of this process that no lane holds is found and run', async () => {
      const h = await open();
      const { store, messages } = h.internals;
      const now = new Date().toISOString();
      // What an acknowledgement whose commit outlived its connection leaves behind: the row, no queue entry.
      await store.writer.run((trx) =>
        insertTurn(trx, {
          eventId: 'evt_orphan_accepted',
          sessionKey: 'gateway:api:orphan',
          contextEpoch: 0,
          payload: { text: 'orphan', platform: 'api', user_id: 'u1', chat_id: 'orphan', channel: 'api', source: 'api' },
          owner: messages.owner,
          now,
        }),
      );
      const turns = await allTerminal(h, ['evt_orphan_accepted'], 8_000);
      expect(turns.get('evt_orphan_accepted')?.status).toBe('completed');
      expect(callsPerText(h).get('orphan')).toBe(1);
    });

    it('a running turn of this process that no runner holds is interrupted (store_unavailable) with its done event', async () => {
      const h = await open();
      const { store, messages } = h.internals;
      const now = new Date().toISOString();
      await store.writer.run(async (trx) => {
        await insertTurn(trx, {
          eventId: 'evt_orphan_running',
          sessionKey: 'gateway:api:orphan',
          contextEpoch: 0,
          payload: { text: 'orphan', platform: 'api', user_id: 'u1', chat_id: 'orphan', channel: 'api', source: 'api' },
          owner: messages.owner,
          now,
        });
        await claimTurn(trx, 'evt_orphan_running', { owner: messages.owner, now });
      });
      const turns = await allTerminal(h, ['evt_orphan_running'], 8_000);
      expect(turns.get('evt_orphan_running')).toMatchObject({
        status: 'interrupted',
        termination_reason: 'store_unavailable',
      });
      const events = await h.inject({
        method: 'GET',
        url: '/api/v1/turns/evt_orphan_running/events',
        headers: adminHeaders,
      });
      expect(parseSse(events.body).map((e) => e.event)).toEqual(['done']);
      expect(chatRequests(h.fake)).toHaveLength(0);
    });

    it('health is unhealthy (503) while writes fail, though reads answer, and healthy within 2 s of recovery', async () => {
      const h = await open();
      expect(await healthStatus(h)).toBe(200);
      faults.inject('writes');
      expect((await h.message(msg('x', 'c1'))).statusCode).toBe(503); // a write fails
      const res = await h.inject({ method: 'GET', url: '/api/v1/health' });
      expect(res.statusCode).toBe(503);
      expect(res.json()).toMatchObject({ status: 'unhealthy', error: { code: 'UNAVAILABLE' } });
      faults.heal();
      const healedAt = Date.now();
      await until(async () => (await healthStatus(h)) === 200, 2_000, 'health back to 200');
      expect(Date.now() - healedAt).toBeLessThan(2_000);
    });

    it('health is unhealthy (503) while the store is unreachable, and healthy again after', async () => {
      const h = await open();
      faults.inject('all');
      expect(await healthStatus(h)).toBe(503);
      faults.heal();
      expect(await healthStatus(h)).toBe(200);
    });

    it('under keyed load on several sessions, a fault mid-load heals without a restart: every 202 ends, none runs twice, order holds', async () => {
      const h = await open({ agent: { max_concurrent_turns: 4 } });
      const slow: FakeReply = { delayMs: 15, then: echoReply };
      h.fake.always(slow);
      const SESSIONS = 6;
      const PER_SESSION = 15;
      const accepted = new Map<string, string>(); // text → event id
      const acceptedOrder = new Map<string, string[]>(); // chat → texts in acceptance order
      const health: number[] = [];
      let polling = true;
      const poller = (async () => {
        while (polling) {
          health.push(await healthStatus(h));
          await pause(25);
        }
      })();

      const send = async (chat: string, i: number): Promise<void> => {
        const text = `${chat}-m${i}`;
        for (let attempt = 0; attempt < 400; attempt++) {
          const res = await h.message(msg(text, chat), { 'idempotency-key': `key-${text}` });
          if (res.statusCode === 202) {
            const eventId = res.json<{ event_id: string }>().event_id;
            if (!accepted.has(text)) {
              accepted.set(text, eventId);
              acceptedOrder.set(chat, [...(acceptedOrder.get(chat) ?? []), text]);
            } else {
              expect(eventId).toBe(accepted.get(text)); // a keyed retry replays the same event
            }
            return;
          }
          expect(res.statusCode).toBe(503); // the outage answers 503, nothing else
          await pause(20);
        }
        throw new Error(`${text} was never accepted`);
      };
      const load = (async () => {
        const sessions = Array.from({ length: SESSIONS }, (_, s) => `chat${s}`);
        for (let i = 0; i < PER_SESSION; i++) {
          await Promise.all(sessions.map((chat) => send(chat, i)));
          await pause(10);
        }
      })();
      await until(() => accepted.size >= (SESSIONS * PER_SESSION) / 3, 10_000, 'a third accepted');
      faults.inject('all');
      await pause(300);
      const ackedBeforeHeal = [...accepted.values()];
      faults.heal();
      const healedAt = Date.now();
      // Time to heal: until every turn acknowledged before the store came back has ended.
      await allTerminal(h, ackedBeforeHeal, 20_000);
      const healMs = Date.now() - healedAt;
      await load;
      const eventIds = [...accepted.values()];
      const turns = await allTerminal(h, eventIds, 20_000);
      polling = false;
      await poller;

      expect(eventIds).toHaveLength(SESSIONS * PER_SESSION);
      const statuses = new Map<string, number>();
      for (const turn of turns.values()) statuses.set(turn.status, (statuses.get(turn.status) ?? 0) + 1);
      // Only the turns caught after their model call may end interrupted; none fails, none is lost.
      expect([...statuses.keys()].every((s) => s === 'completed' || s === 'interrupted')).toBe(true);
      for (const turn of turns.values()) {
        if (turn.status === 'interrupted') expect(turn.termination_reason).toBe('store_unavailable');
      }
      const calls = callsPerText(h);
      for (const [text, eventId] of accepted) {
        const n = calls.get(text) ?? 0;
        if (turns.get(eventId)!.status === 'completed') expect(n, text).toBe(1);
        else expect(n, text).toBeLessThanOrEqual(1);
      }
      // Per session, the model saw the messages in the order they were accepted.
      const order = modelOrder(h);
      for (const [chat, texts] of acceptedOrder) {
        const seen = order.filter((t) => t.startsWith(`${chat}-`));
        expect(seen, chat).toEqual(texts.filter((t) => seen.includes(t)));
      }
      expect(health).toContain(503);
      expect(health.at(-1)).toBe(200);
      expect(await healthStatus(h)).toBe(200);
      await settled(h);
      console.info(
        `[store outage ${backend}] ${eventIds.length} acked, ${JSON.stringify(Object.fromEntries(statuses))}, ` +
          `the ${ackedBeforeHeal.length} acked before the store came back all ended ${healMs} ms after it did`,
      );
    });
  });
}
