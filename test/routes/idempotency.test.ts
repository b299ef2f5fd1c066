import { describe, expect, it, vi } from 'vitest';
import { deferred } from '../helpers/deferred.js';
import { chatRequests, echoReply } from '../helpers/fake-openai.js';
import { ADMIN_TOKEN, adminHeaders, useHarness, type Harness } from '../helpers/harness.js';
import { msg, recordingTool } from './builders.js';

/** The gateway's time where a test moves it: 2026-11-21 10:00 UTC on a ManualClock. */
const START = Date.UTC(2026, 10, 21, 10, 0, 0, 0);

interface Ack {
  status: string;
  event_id: string;
  session_key: string;
}

describe('idempotent retries of POST /message (spec rules 1–8, DECISIONS §6)', () => {
  // Model calls a test does not script get the echo `fake: <text>`.
  const rig = useHarness({ fake: { always: echoReply }, autoOpen: false });

  const turnCount = async (h: Harness) =>
    (await h.internals.store.db.selectFrom('turns').select('event_id').execute()).length;
  /**
   * A model call whose answer is held until the test releases it: the test,
   * not wall time, decides that the original is still running when its retry
   * arrives (spec: idempotent retries, rule 6).
   */
  const heldAnswer = (content: string) => {
    const release = deferred();
    rig.fake.enqueue({ after: release.promise, then: { content } });
    return release;
  };
  /** Resolves once `count` requests wait for a turn's outcome. */
  const waitersReach = (h: Harness, count: number) =>
    vi.waitFor(() => expect(h.internals.messages.gauges.waiters()).toBe(count), { timeout: 5_000, interval: 5 });
  const settle = async (h: Harness, eventId: string) => {
    const turn = await h.internals.messages.waitFor(eventId, 5_000);
    expect(turn).not.toBeNull();
    await h.internals.messages.idle(5_000);
    return turn!;
  };

  describe('happy', () => {
    it.each(['Idempotency-Key', 'X-Idempotency-Key'])(
      'takes the key from %s: a retry replays the 202 and publishes nothing again',
      async (header) => {
        const h = await rig.open();
        const first = await h.message(msg('hello', 'c1'), { [header]: 'key-1' });
        expect(first.statusCode).toBe(202);
        const ack = first.json<Ack>();
        await settle(h, ack.event_id);

        const retry = await h.message(msg('hello', 'c1'), { [header]: 'key-1' });
        expect(retry.statusCode).toBe(202);
        expect(retry.json()).toEqual(ack);
        await h.internals.messages.idle(5_000);
        expect(chatRequests(rig.fake)).toHaveLength(1);
        expect(await turnCount(h)).toBe(1);
      },
    );

    it('where the key travelled is not content: Idempotency-Key then X-Idempotency-Key replays', async () => {
      const h = await rig.open();
      const first = await h.message(msg('hello', 'c1'), { 'Idempotency-Key': 'k' });
      const retry = await h.message(msg('hello', 'c1'), { 'X-Idempotency-Key': 'k' });
      expect(retry.json<Ack>().event_id).toBe(first.json<Ack>().event_id);
      await settle(h, first.json<Ack>().event_id);
      expect(chatRequests(rig.fake)).toHaveLength(1);
    });

    it('accepts both headers and the body key when they agree', async () => {
      const h = await rig.open();
      const res = await h.message(msg('hello', 'c1', { idempotency_key: 'same' }), {
        'Idempotency-Key': 'same',
        'X-Idempotency-Key': 'same',
      });
      expect(res.statusCode).toBe(202);
      await settle(h, res.json<Ack>().event_id);
    });

    it('accepts a key of exactly 200 characters', async () => {
      const h = await rig.open();
      const res = await h.message(msg('hello'), { 'Idempotency-Key': 'k'.repeat(200) });
      expect(res.statusCode).toBe(202);
      await settle(h, res.json<Ack>().event_id);
    });

    it('a waited original replays the same body; the provider is not called again and no second turn exists', async () => {
      const h = await rig.open();
      rig.fake.enqueue({ content: 'only once', usage: { prompt_tokens: 100, completion_tokens: 10 } });
      const first = await h.message(msg('question', 'c1', { wait: true }), { 'Idempotency-Key': 'k-wait' });
      expect(first.statusCode).toBe(200);
      expect(first.json()).toMatchObject({ status: 'completed', response: 'only once' });

      const retry = await h.message(msg('question', 'c1', { wait: true }), { 'Idempotency-Key': 'k-wait' });
      expect(retry.statusCode).toBe(200);
      expect(retry.json()).toEqual(first.json());
      // A retry without wait still gets what the original answered: the final result.
      const noWait = await h.message(msg('question', 'c1'), { 'Idempotency-Key': 'k-wait' });
      expect(noWait.statusCode).toBe(200);
      expect(noWait.json()).toEqual(first.json());
      expect(chatRequests(rig.fake)).toHaveLength(1);
      expect(await turnCount(h)).toBe(1);
      const history = await h.inject({
        method: 'GET',
        url: `/api/v1/sessions/${encodeURIComponent('gateway:api:c1')}/history`,
        headers: adminHeaders,
      });
      expect(history.json<{ total: number }>().total).toBe(2); // one user message, one reply
    });

    it('wait and timeout_seconds are not content', async () => {
      const h = await rig.open();
      const first = await h.message(msg('hello', 'c1'), { 'Idempotency-Key': 'k' });
      expect(first.statusCode).toBe(202);
      const retry = await h.message(msg('hello', 'c1', { wait: true, timeout_seconds: 30 }), {
        'Idempotency-Key': 'k',
      });
      expect(retry.statusCode).toBe(200);
      expect(retry.json()).toMatchObject({ event_id: first.json<Ack>().event_id, status: 'completed' });
      expect(chatRequests(rig.fake)).toHaveLength(1);
    });

    it('a wait=true retry of a wait=false original waits for the same event’s final result', async () => {
      const h = await rig.open({ clock: START });
      const model = heldAnswer('slow answer');
      const first = await h.message(msg('slow', 'c1'), { 'Idempotency-Key': 'k' });
      expect(first.statusCode).toBe(202);
      const turnNow = await h.adminGet(`/api/v1/turns/${first.json<Ack>().event_id}`);
      expect(['accepted', 'running']).toContain(turnNow.json<{ status: string }>().status);

      const pending = h.message(msg('slow', 'c1', { wait: true }), { 'Idempotency-Key': 'k' });
      await waitersReach(h, 1);
      h.clock.advance(300);
      model.resolve();
      const retry = await pending;
      expect(retry.statusCode).toBe(200);
      expect(retry.json()).toMatchObject({
        event_id: first.json<Ack>().event_id,
        status: 'completed',
        response: 'slow answer',
      });
      expect(chatRequests(rig.fake)).toHaveLength(1);
    });

    it('racing identical retries share one result and one provider call', async () => {
      const h = await rig.open({ clock: START });
      const model = heldAnswer('shared');
      const racing = Promise.all(
        Array.from({ length: 5 }, () =>
          h.message(msg('race', 'c1', { wait: true }), { 'Idempotency-Key': 'race-key' }),
        ),
      );
      // The original and its four retries all wait for the one turn.
      await waitersReach(h, 5);
      h.clock.advance(100);
      model.resolve();
      const results = await racing;
      for (const res of results) expect(res.statusCode).toBe(200);
      const bodies = results.map((r) => r.json<{ event_id: string; response: string }>());
      expect(new Set(bodies.map((b) => b.event_id)).size).toBe(1);
      for (const body of bodies) expect(body).toEqual(bodies[0]);
      expect(bodies[0]!.response).toBe('shared');
      expect(chatRequests(rig.fake)).toHaveLength(1);
      expect(await turnCount(h)).toBe(1);
    });

    it('rule 6: a wait that times out is 504 TIMEOUT; the same keyed retry later gets the late result', async () => {
      const h = await rig.open({ clock: START });
      // The model answers only after the first wait has given up (its 1 s bound is a timer of the gateway).
      const model = heldAnswer('late but here');
      const first = await h.message(msg('slow', 'c1', { wait: true, timeout_seconds: 1 }), {
        'Idempotency-Key': 'slow-key',
      });
      expect(first.statusCode).toBe(504);
      const error = first.json<{ error: { code: string; details: { event_id: string }; request_id: string } }>().error;
      expect(error.code).toBe('TIMEOUT');
      expect(error.details.event_id).toMatch(/^evt_/);
      expect(error.request_id).toBe(first.headers['x-request-id']);

      const pending = h.message(msg('slow', 'c1', { wait: true, timeout_seconds: 10 }), {
        'Idempotency-Key': 'slow-key',
      });
      await waitersReach(h, 1);
      h.clock.advance(1_300);
      model.resolve();
      const retry = await pending;
      expect(retry.statusCode).toBe(200);
      expect(retry.json()).toMatchObject({
        event_id: error.details.event_id,
        status: 'completed',
        response: 'late but here',
      });
      expect(chatRequests(rig.fake)).toHaveLength(1);
    });

    it('a failed waited original replays its 502 without calling the provider again', async () => {
      const h = await rig.open();
      rig.fake.enqueue({ status: 500 });
      const first = await h.message(msg('boom', 'c1', { wait: true }), { 'Idempotency-Key': 'k-fail' });
      expect(first.statusCode).toBe(502);
      const retry = await h.message(msg('boom', 'c1', { wait: true }), { 'Idempotency-Key': 'k-fail' });
      expect(retry.statusCode).toBe(502);
      const a = first.json<{ error: { code: string; message: string; details: unknown } }>().error;
      const b = retry.json<{ error: { code: string; message: string; details: unknown } }>().error;
      expect(b).toMatchObject({ code: a.code, message: a.message, details: a.details });
      expect(chatRequests(rig.fake)).toHaveLength(1);
    });

    it('rule 8: records survive a restart — the retry replays and the provider is not called again', async () => {
      const h = await rig.open();
      const waited = await h.message(msg('before restart', 'c1', { wait: true }), { 'Idempotency-Key': 'k-w' });
      expect(waited.statusCode).toBe(200);
      const acked = await h.message(msg('acked', 'c2'), { 'Idempotency-Key': 'k-a' });
      expect(acked.statusCode).toBe(202);
      await settle(h, acked.json<Ack>().event_id);
      expect(chatRequests(rig.fake)).toHaveLength(2);

      await h.restart();

      const replayWaited = await h.message(msg('before restart', 'c1', { wait: true }), { 'Idempotency-Key': 'k-w' });
      expect(replayWaited.statusCode).toBe(200);
      expect(replayWaited.json()).toEqual(waited.json());
      const replayAcked = await h.message(msg('acked', 'c2'), { 'Idempotency-Key': 'k-a' });
      expect(replayAcked.statusCode).toBe(202);
      expect(replayAcked.json()).toEqual(acked.json());
      const conflict = await h.message(msg('changed', 'c1'), { 'Idempotency-Key': 'k-w' });
      expect(conflict.statusCode).toBe(409);
      await h.internals.messages.idle(5_000);
      expect(chatRequests(rig.fake)).toHaveLength(2);
      expect(await turnCount(h)).toBe(2);
    });

    it('after the record lifetime the key is free again: a new event runs with the new content', async () => {
      const h = await rig.open({ clock: START });
      const { clock } = h;
      const first = await h.message(msg('first life', 'c1', { wait: true }), { 'Idempotency-Key': 'k-ttl' });
      expect(first.statusCode).toBe(200);
      clock.advance(3_600_000 + 60_000);
      const second = await h.message(msg('second life', 'c1', { wait: true }), { 'Idempotency-Key': 'k-ttl' });
      expect(second.statusCode).toBe(200);
      expect(second.json()).toMatchObject({ status: 'completed', response: 'fake: second life' });
      expect(second.json<Ack>().event_id).not.toBe(first.json<Ack>().event_id);
      expect(chatRequests(rig.fake)).toHaveLength(2);
      // And the new life replays like any other record.
      const retry = await h.message(msg('second life', 'c1', { wait: true }), { 'Idempotency-Key': 'k-ttl' });
      expect(retry.json()).toEqual(second.json());
      expect(chatRequests(rig.fake)).toHaveLength(2);
    });
  });

  describe('errors', () => {
    it('both headers differing → 400, nothing accepted', async () => {
      const h = await rig.open();
      const res = await h.message(msg('x'), { 'Idempotency-Key': 'a', 'X-Idempotency-Key': 'b' });
      expect(res.statusCode).toBe(400);
      expect(res.json<{ error: { code: string } }>().error.code).toBe('BAD_REQUEST');
      expect(await turnCount(h)).toBe(0);
    });

    it('a body idempotency_key differing from the header → 400', async () => {
      const h = await rig.open();
      const res = await h.message(msg('x', 'c1', { idempotency_key: 'body-key' }), { 'Idempotency-Key': 'header-key' });
      expect(res.statusCode).toBe(400);
      expect(await turnCount(h)).toBe(0);
    });

    const badKeys: Array<[string, string]> = [
      ['empty', ''],
      ['whitespace-only', '   '],
      ['201 characters', 'k'.repeat(201)],
      ['a control character', 'abc\tdef'],
    ];
    it.each(badKeys)('a header key that is %s → 400', async (_name, key) => {
      const h = await rig.open();
      const res = await h.message(msg('x'), { 'Idempotency-Key': key });
      expect(res.statusCode).toBe(400);
      expect(res.json<{ error: { code: string } }>().error.code).toBe('BAD_REQUEST');
      expect(await turnCount(h)).toBe(0);
    });

    it.each([...badKeys, ['a non-string', 42] as [string, unknown], ['a DEL character', 'a\u007fb']])(
      'a body key that is %s → 400',
      async (_name, key) => {
        const h = await rig.open();
        const res = await h.message(msg('x', 'c1', { idempotency_key: key }));
        expect(res.statusCode).toBe(400);
        expect(await turnCount(h)).toBe(0);
      },
    );

    it('same key with changed content → 409 with exactly {"error": "<string>"}; no event is created', async () => {
      const h = await rig.open();
      const first = await h.message(msg('original', 'c1'), { 'Idempotency-Key': 'k' });
      await settle(h, first.json<Ack>().event_id);
      for (const changed of [msg('changed', 'c1'), { ...msg('original', 'c1'), user_id: 'someone-else' }]) {
        const res = await h.message(changed, { 'Idempotency-Key': 'k' });
        expect(res.statusCode).toBe(409);
        const body = res.json<Record<string, unknown>>();
        expect(Object.keys(body)).toEqual(['error']);
        expect(typeof body.error).toBe('string');
        expect((body.error as string).length).toBeGreaterThan(0);
      }
      expect(await turnCount(h)).toBe(1);
      expect(chatRequests(rig.fake)).toHaveLength(1);
    });

    it('409 also while the original is still running', async () => {
      const h = await rig.open({ clock: START });
      const model = heldAnswer('x');
      const first = await h.message(msg('original', 'c1'), { 'Idempotency-Key': 'k' });
      const res = await h.message(msg('changed', 'c1', { wait: true }), { 'Idempotency-Key': 'k' });
      expect(res.statusCode).toBe(409);
      model.resolve();
      await settle(h, first.json<Ack>().event_id);
    });

    it('rule 7: the ceiling of unexpired records → 503 with nothing published; replays still answer', async () => {
      const h = await rig.open({ limits: { idempotencyCeiling: 2 } });
      const a = await h.message(msg('a', 'c1'), { 'Idempotency-Key': 'k1' });
      const b = await h.message(msg('b', 'c2'), { 'Idempotency-Key': 'k2' });
      expect([a.statusCode, b.statusCode]).toEqual([202, 202]);
      await settle(h, a.json<Ack>().event_id);
      await settle(h, b.json<Ack>().event_id);

      const third = await h.message(msg('c', 'c3'), { 'Idempotency-Key': 'k3' });
      expect(third.statusCode).toBe(503);
      expect(third.json<{ error: { code: string } }>().error.code).toBe('UNAVAILABLE');
      await h.internals.messages.idle(5_000);
      expect(await turnCount(h)).toBe(2);
      expect(chatRequests(rig.fake)).toHaveLength(2);
      const sessions = await h.internals.store.db.selectFrom('sessions').select('key').execute();
      expect(sessions.map((s) => s.key)).not.toContain('gateway:api:c3');

      const replay = await h.message(msg('a', 'c1'), { 'Idempotency-Key': 'k1' });
      expect(replay.statusCode).toBe(202);
      expect(replay.json()).toEqual(a.json());
    });

    it('rule 7 at the ceiling after a restart: a replay found in the store still answers, a new key is 503', async () => {
      const h = await rig.open({ limits: { idempotencyCeiling: 2 } });
      const a = await h.message(msg('a', 'c1', { wait: true }), { 'Idempotency-Key': 'k1' });
      const b = await h.message(msg('b', 'c2'), { 'Idempotency-Key': 'k2' });
      expect([a.statusCode, b.statusCode]).toEqual([200, 202]);
      await settle(h, b.json<Ack>().event_id);
      await h.restart();

      const replayA = await h.message(msg('a', 'c1', { wait: true }), { 'Idempotency-Key': 'k1' });
      expect(replayA.statusCode).toBe(200);
      expect(replayA.json()).toEqual(a.json());
      const replayB = await h.message(msg('b', 'c2'), { 'Idempotency-Key': 'k2' });
      expect(replayB.statusCode).toBe(202);
      expect(replayB.json()).toEqual(b.json());
      const conflict = await h.message(msg('changed', 'c2'), { 'Idempotency-Key': 'k2' });
      expect(conflict.statusCode).toBe(409);
      const fresh = await h.message(msg('c', 'c3'), { 'Idempotency-Key': 'k3' });
      expect(fresh.statusCode).toBe(503);
      await h.internals.messages.idle(5_000);
      expect(chatRequests(rig.fake)).toHaveLength(2);
      expect(await turnCount(h)).toBe(2);
    });

    it('a full turn queue (agent.max_queued_turns) → 503 for a new message, while a replay still answers', async () => {
      const gate = deferred();
      const entered = deferred();
      const tool = recordingTool('hold', async () => {
        entered.resolve();
        await gate.promise;
        return 'ok';
      });
      const h = await rig.open({ config: { agent: { max_queued_turns: 1 } }, tools: [tool] });
      rig.fake.enqueue({ tool_calls: [{ name: 'hold', arguments: {} }] });
      const running = await h.message(msg('first', 'c1'));
      await entered.promise;
      const queued = await h.message(msg('second', 'c1'), { 'Idempotency-Key': 'kq' });
      expect(queued.statusCode).toBe(202);
      const rejected = await h.message(msg('third', 'c1'), { 'Idempotency-Key': 'kq-new' });
      expect(rejected.statusCode).toBe(503);
      expect(rejected.json<{ error: { code: string } }>().error.code).toBe('UNAVAILABLE');
      const replay = await h.message(msg('second', 'c1'), { 'Idempotency-Key': 'kq' });
      expect(replay.statusCode).toBe(202);
      expect(replay.json()).toEqual(queued.json());
      expect(await turnCount(h)).toBe(2);
      gate.resolve();
      await settle(h, running.json<Ack>().event_id);
      await settle(h, queued.json<Ack>().event_id);
    });

    it('rule 7: the idempotency store unavailable → 503, nothing accepted', async () => {
      const h = await rig.open();
      await h.internals.store.close();
      const keyed = await h.message(msg('x', 'c1'), { 'Idempotency-Key': 'k-down' });
      expect(keyed.statusCode).toBe(503);
      expect(keyed.json<{ error: { code: string } }>().error.code).toBe('UNAVAILABLE');
      const unkeyed = await h.message(msg('x', 'c1'));
      expect(unkeyed.statusCode).toBe(503);
      expect(chatRequests(rig.fake)).toHaveLength(0);
    });
  });

  describe('security', () => {
    it('keys from different tokens never collide: separate events, separate runs, no 409', async () => {
      const h = await rig.open();
      const api = await h.message(msg('same text', 'c1', { wait: true }), { 'Idempotency-Key': 'shared' });
      const admin = await h.message(msg('same text', 'c1', { wait: true }), {
        'x-api-token': ADMIN_TOKEN,
        'Idempotency-Key': 'shared',
      });
      expect(api.statusCode).toBe(200);
      expect(admin.statusCode).toBe(200);
      expect(admin.json<Ack>().event_id).not.toBe(api.json<Ack>().event_id);
      const otherContent = await h.message(msg('different text', 'c1'), {
        'x-api-token': ADMIN_TOKEN,
        'Idempotency-Key': 'shared-2',
      });
      expect(otherContent.statusCode).toBe(202);
      const apiDifferent = await h.message(msg('yet another', 'c1'), { 'Idempotency-Key': 'shared-2' });
      expect(apiDifferent.statusCode).toBe(202);
      expect(apiDifferent.json<Ack>().event_id).not.toBe(otherContent.json<Ack>().event_id);
      await settle(h, apiDifferent.json<Ack>().event_id);
      await settle(h, otherContent.json<Ack>().event_id);
      expect(chatRequests(rig.fake)).toHaveLength(4);
    });

    it('a different session is a different scope: same key, other chat_id → its own event, no 409', async () => {
      const h = await rig.open();
      const one = await h.message(msg('text one', 'chat-a'), { 'Idempotency-Key': 'k' });
      const two = await h.message(msg('text two', 'chat-b'), { 'Idempotency-Key': 'k' });
      expect(one.statusCode).toBe(202);
      expect(two.statusCode).toBe(202);
      expect(two.json<Ack>().event_id).not.toBe(one.json<Ack>().event_id);
      expect(two.json<Ack>().session_key).toBe('gateway:api:chat-b');
      await settle(h, one.json<Ack>().event_id);
      await settle(h, two.json<Ack>().event_id);
      expect(await turnCount(h)).toBe(2);
    });

    it('the 409 body does not reveal the original content', async () => {
      const h = await rig.open();
      const first = await h.message(msg('secret original text', 'c1'), { 'Idempotency-Key': 'k' });
      await settle(h, first.json<Ack>().event_id);
      const res = await h.message(msg('probe', 'c1'), { 'Idempotency-Key': 'k' });
      expect(res.statusCode).toBe(409);
      expect(res.body).not.toContain('secret original text');
      expect(res.body).not.toContain(first.json<Ack>().event_id);
    });
  });
});
