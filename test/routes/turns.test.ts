import { describe, expect, it, vi } from 'vitest';
import type { AgentTool } from '../../src/runtime/tools.js';
import { deferred } from '../helpers/deferred.js';
import { echoReply } from '../helpers/fake-openai.js';
import { adminHeaders, apiHeaders, useHarness, type Harness } from '../helpers/harness.js';
import { parseSse } from '../helpers/sse.js';
import { ISO_MS, msg, recordingTool } from './builders.js';

interface TurnView {
  event_id: string;
  session_key: string;
  status: string;
  current_tool: string | null;
  pending_tool_call?: { id: string; name: string; arguments: string } | null;
  response: string | null;
  termination_reason: string | null;
  context_epoch: number;
  accepted_at: string;
  started_at: string | null;
  finished_at: string | null;
  updated_at: string;
}

const enc = encodeURIComponent;

describe('turn ledger API', () => {
  // Model calls a test does not script get the echo `fake: <text>`.
  const rig = useHarness({ fake: { always: echoReply }, autoOpen: false });

  const waited = async (h: Harness, text: string, chat = 'c1') => {
    const res = await h.message(msg(text, chat, { wait: true }));
    expect(res.statusCode).toBe(200);
    return res.json<{ event_id: string }>().event_id;
  };
  const events = (h: Harness, eventId: string, headers: Record<string, string> = {}) =>
    h.inject({ method: 'GET', url: `/api/v1/turns/${eventId}/events`, headers: { ...apiHeaders, ...headers } });

  describe('happy', () => {
    it('GET /turns/{id} answers the record with every field, timestamps ISO with ms', async () => {
      const h = await rig.open();
      const eventId = await waited(h, 'hello');
      const res = await h.adminGet(`/api/v1/turns/${eventId}`);
      expect(res.statusCode).toBe(200);
      const turn = res.json<TurnView>();
      expect(Object.keys(turn).sort()).toEqual(
        [
          'event_id',
          'session_key',
          'status',
          'current_tool',
          'pending_tool_call',
          'response',
          'termination_reason',
          'context_epoch',
          'accepted_at',
          'started_at',
          'finished_at',
          'updated_at',
          'trace_id',
          'source',
        ].sort(),
      );
      expect(turn).toMatchObject({
        trace_id: null, // tracing is off
        event_id: eventId,
        session_key: 'gateway:api:c1',
        status: 'completed',
        current_tool: null,
        pending_tool_call: null,
        response: 'fake: hello',
        termination_reason: 'completed',
        context_epoch: 0,
      });
      expect(Number.isInteger(turn.context_epoch)).toBe(true);
      for (const field of ['accepted_at', 'started_at', 'finished_at', 'updated_at'] as const) {
        expect(turn[field]).toMatch(ISO_MS);
      }
      expect(turn.accepted_at <= turn.started_at!).toBe(true);
      expect(turn.started_at! <= turn.finished_at!).toBe(true);
      expect(turn.finished_at).toBe(turn.updated_at);
    });

    it('GET /sessions/{key}/turns lists newest first; limit picks the newest; default 20', async () => {
      const h = await rig.open({ fake: undefined });
      const ids: string[] = [];
      for (let i = 0; i < 22; i++) {
        const res = await h.message(msg(`m${i}`, 'many'));
        expect(res.statusCode).toBe(202);
        ids.push(res.json<{ event_id: string }>().event_id);
      }
      await h.internals.messages.waitFor(ids.at(-1)!, 10_000);
      const url = `/api/v1/sessions/${enc('gateway:api:many')}/turns`;
      const all = (await h.adminGet(url)).json<{ items: TurnView[] }>();
      expect(Object.keys(all)).toEqual(['items']);
      expect(all.items.map((t) => t.event_id)).toEqual([...ids].reverse().slice(0, 20));
      const two = (await h.adminGet(`${url}?limit=2`)).json<{ items: TurnView[] }>();
      expect(two.items.map((t) => t.event_id)).toEqual([ids[21], ids[20]]);
      const max = (await h.adminGet(`${url}?limit=100`)).json<{ items: TurnView[] }>();
      expect(max.items).toHaveLength(22);
      expect(max.items.every((t) => t.status === 'completed')).toBe(true);
    });

    it('GET /turns lists paused turns across sessions, oldest first, and pages on with next_after', async () => {
      const risky = recordingTool('risky', () => 'done');
      const h = await rig.open({ tools: [risky], config: { agent: { approval_required: ['risky'] } } });
      const paused: string[] = [];
      for (const chat of ['a', 'b', 'c']) {
        rig.fake.enqueue({ tool_calls: [{ name: 'risky', arguments: {} }] });
        const res = await h.message(msg(`risk ${chat}`, chat, { wait: true }));
        expect(res.json<{ status: string }>().status).toBe('waiting_approval');
        paused.push(res.json<{ event_id: string }>().event_id);
      }
      rig.fake.enqueue({ content: 'plain' });
      const completed = await waited(h, 'plain', 'd');

      const inbox = (await h.adminGet('/api/v1/turns')).json<{ items: TurnView[]; next_after: number | null }>();
      expect(inbox.items.map((t) => t.event_id)).toEqual(paused);
      expect(inbox.items.map((t) => t.session_key)).toEqual(['gateway:api:a', 'gateway:api:b', 'gateway:api:c']);
      expect(inbox.items.every((t) => t.status === 'waiting_approval' && t.current_tool === 'risky')).toBe(true);
      expect(inbox.next_after).toBeNull();

      const first = (await h.adminGet('/api/v1/turns?limit=2')).json<{ items: TurnView[]; next_after: number }>();
      expect(first.items.map((t) => t.event_id)).toEqual(paused.slice(0, 2));
      const rest = (await h.adminGet(`/api/v1/turns?limit=2&after=${first.next_after}`)).json<{ items: TurnView[] }>();
      expect(rest.items.map((t) => t.event_id)).toEqual([paused[2]]);

      const done = (await h.adminGet('/api/v1/turns?status=completed')).json<{ items: TurnView[] }>();
      expect(done.items.map((t) => t.event_id)).toEqual([completed]);
      const bad = await h.adminGet('/api/v1/turns?status=paused');
      expect(bad.statusCode).toBe(400);
      expect(bad.json<{ error: { code: string } }>().error.code).toBe('BAD_REQUEST');
      expect(bad.body).toContain('a comma-separated list of');
      expect((await h.inject({ method: 'GET', url: '/api/v1/turns', headers: apiHeaders })).statusCode).toBe(403);
    });

    it('a paused turn names the call it waits on; its resumption says how it was decided', async () => {
      const risky = recordingTool('risky', () => 'done');
      const h = await rig.open({ tools: [risky], config: { agent: { approval_required: ['risky'] } } });
      rig.fake.enqueue({ tool_calls: [{ name: 'risky', arguments: { target: 'prod', force: true } }] });
      const res = await h.message(msg('risk it', 'pending', { wait: true }));
      const eventId = res.json<{ event_id: string }>().event_id;
      const inbox = (await h.adminGet('/api/v1/turns')).json<{ items: TurnView[] }>();
      const call = inbox.items.find((t) => t.event_id === eventId)?.pending_tool_call;
      expect(call).toMatchObject({ name: 'risky' });
      expect(JSON.parse(call!.arguments)).toEqual({ target: 'prod', force: true });
      expect((await h.adminGet(`/api/v1/turns/${eventId}`)).json<TurnView>().pending_tool_call).toEqual(call);

      rig.fake.enqueue({ content: 'ran it' });
      const approved = await h.inject({
        method: 'POST',
        url: `/api/v1/turns/${eventId}/approve`,
        headers: adminHeaders,
      });
      expect(approved.statusCode).toBe(200);
      expect(approved.json<TurnView>().pending_tool_call).toBeNull();
      await h.internals.messages.waitFor(eventId, 10_000);
      const statuses = parseSse((await events(h, eventId)).body)
        .filter((e) => e.event === 'status')
        .map((e) => e.data as { status: string; resolution?: string });
      expect(statuses.map((e) => [e.status, e.resolution])).toEqual([
        ['running', undefined],
        ['waiting_approval', undefined],
        ['running', 'approve'],
      ]);
      expect((await h.adminGet(`/api/v1/turns/${eventId}`)).json<TurnView>()).toMatchObject({
        status: 'completed',
        pending_tool_call: null,
      });
    });

    it('GET /turns/{id}/events replays a finished turn: ids 1..n, named events, ending with done', async () => {
      const h = await rig.open();
      rig.fake.enqueue({ content: 'abcdef', chunks: 3 });
      const eventId = await waited(h, 'go');
      const res = await events(h, eventId);
      expect(res.statusCode).toBe(200);
      expect(res.headers['content-type']).toContain('text/event-stream');
      const list = parseSse(res.body);
      expect(list.map((e) => e.id)).toEqual(list.map((_, i) => String(i + 1)));
      expect(list.map((e) => e.event)).toEqual(['status', 'delta', 'delta', 'delta', 'done']);
      expect(list[0]!.data).toEqual({ status: 'running' });
      expect(list.at(-1)!.data).toMatchObject({
        role: 'assistant',
        status: 'completed',
        content: 'abcdef',
        event_id: eventId,
      });
    });

    it('Last-Event-ID resumes after what was seen', async () => {
      const h = await rig.open();
      rig.fake.enqueue({ content: 'abcdef', chunks: 3 });
      const eventId = await waited(h, 'go');
      const res = await events(h, eventId, { 'last-event-id': '2' });
      const list = parseSse(res.body);
      expect(list.map((e) => [e.id, e.event])).toEqual([
        ['3', 'delta'],
        ['4', 'delta'],
        ['5', 'done'],
      ]);
      // Resuming after the final event: nothing more to say, 204 (an EventSource stops reconnecting).
      const after = await events(h, eventId, { 'last-event-id': '5' });
      expect(after.statusCode).toBe(204);
      expect(after.body).toBe('');
    });

    it('follows a running turn live to its end', async () => {
      const gate = deferred();
      const entered = deferred();
      const tool = recordingTool('slow_step', async () => {
        entered.resolve();
        await gate.promise;
        return { done: true };
      });
      const h = await rig.open({ tools: [tool] });
      rig.fake.enqueue({ tool_calls: [{ name: 'slow_step', arguments: {} }] }, { content: 'finished', chunks: 2 });
      const ack = await h.message(msg('work', 'live'));
      const eventId = ack.json<{ event_id: string }>().event_id;
      await entered.promise;
      const running = (await h.adminGet(`/api/v1/turns/${eventId}`)).json<TurnView>();
      expect(running).toMatchObject({ status: 'running', current_tool: 'slow_step', finished_at: null });

      const following = events(h, eventId);
      await vi.waitFor(() => expect(h.internals.messages.listenerCount()).toBeGreaterThan(0));
      gate.resolve();
      const res = await following;
      const list = parseSse(res.body);
      expect(list.map((e) => e.event)).toEqual(['status', 'tool_call', 'tool_result', 'delta', 'delta', 'done']);
      expect(list.map((e) => e.id)).toEqual(['1', '2', '3', '4', '5', '6']);
      expect(list[2]!.data).toMatchObject({ name: 'slow_step', result: { done: true } });
      expect(list.at(-1)!.data).toMatchObject({ status: 'completed', content: 'finished' });
    });

    it('follows an accepted turn from before it starts', async () => {
      const gate = deferred();
      const entered = deferred();
      const tool = recordingTool('slow_step', async () => {
        entered.resolve();
        await gate.promise;
        return 'ok';
      });
      const h = await rig.open({ tools: [tool] });
      rig.fake.enqueue({ tool_calls: [{ name: 'slow_step', arguments: {} }] }, { content: 'first done' });
      expect((await h.message(msg('first', 'queue'))).statusCode).toBe(202);
      await entered.promise;
      const second = (await h.message(msg('second', 'queue'))).json<{ event_id: string }>().event_id;
      expect((await h.adminGet(`/api/v1/turns/${second}`)).json<TurnView>().status).toBe('accepted');
      const following = events(h, second);
      await vi.waitFor(() => expect(h.internals.messages.listenerCount()).toBeGreaterThan(0));
      gate.resolve();
      const list = parseSse((await following).body);
      expect(list.map((e) => e.event)).toEqual(['status', 'delta', 'delta', 'delta', 'done']);
      expect(list.at(-1)!.data).toMatchObject({ content: 'fake: second', event_id: second });
    });

    it('a restart interrupts the running turn (shutdown) and runs the accepted ones', async () => {
      const entered = deferred();
      const stuck: AgentTool = {
        spec: { name: 'stuck', description: 'waits until interrupted', parameters: { type: 'object' } },
        run: (_args, ctx) =>
          new Promise((_resolve, reject) => {
            entered.resolve();
            ctx.signal.addEventListener('abort', () => reject(new Error('aborted')), { once: true });
          }),
      };
      const h = await rig.open({ tools: [stuck] });
      rig.fake.enqueue({ tool_calls: [{ name: 'stuck', arguments: {} }] });
      const running = await h.message(msg('first', 'restart', { wait: true, timeout_seconds: 1 }), {
        'Idempotency-Key': 'k-running',
      });
      expect(running.statusCode).toBe(504);
      await entered.promise;
      const runningId = running.json<{ error: { details: { event_id: string } } }>().error.details.event_id;
      const queued = (await h.message(msg('second', 'restart'))).json<{ event_id: string }>().event_id;
      expect((await h.adminGet(`/api/v1/turns/${queued}`)).json<TurnView>().status).toBe('accepted');

      await h.restart(0);

      const done = await h.internals.messages.waitFor(queued, 5_000);
      expect(done?.status).toBe('completed');
      expect(done?.response).toBe('fake: second');
      expect((await h.adminGet(`/api/v1/turns/${runningId}`)).json<TurnView>()).toMatchObject({
        status: 'interrupted',
        termination_reason: 'shutdown',
      });
      // Interrupted is a final state a keyed retry replays with 200 (spec: retryable).
      const retry = await h.message(msg('first', 'restart', { wait: true }), { 'Idempotency-Key': 'k-running' });
      expect(retry.statusCode).toBe(200);
      expect(retry.json()).toMatchObject({ status: 'interrupted', event_id: runningId });
    });
  });

  describe('errors', () => {
    it.each(['0', '101', 'ten'])('GET /sessions/{key}/turns?limit=%s → 400', async (limit) => {
      const h = await rig.open();
      const res = await h.adminGet(`/api/v1/sessions/${enc('gateway:api:c1')}/turns?limit=${limit}`);
      expect(res.statusCode).toBe(400);
      expect(res.json<{ error: { code: string } }>().error.code).toBe('BAD_REQUEST');
    });

    it('an unknown turn → 404 on the record, its events, approve and deny', async () => {
      const h = await rig.open();
      const responses = [
        await h.adminGet('/api/v1/turns/evt_unknown'),
        await events(h, 'evt_unknown'),
        await h.inject({ method: 'POST', url: '/api/v1/turns/evt_unknown/approve', headers: adminHeaders }),
        await h.inject({ method: 'POST', url: '/api/v1/turns/evt_unknown/deny', headers: adminHeaders }),
      ];
      for (const res of responses) {
        expect(res.statusCode).toBe(404);
        expect(res.json<{ error: { code: string } }>().error.code).toBe('NOT_FOUND');
      }
    });

    it('an unknown session has no turns', async () => {
      const h = await rig.open();
      const res = await h.adminGet(`/api/v1/sessions/${enc('gateway:api:none')}/turns`);
      expect(res.statusCode).toBe(200);
      expect(res.json()).toEqual({ items: [] });
    });

    it('a malformed Last-Event-ID → 400', async () => {
      const h = await rig.open();
      const eventId = await waited(h, 'x');
      expect((await events(h, eventId, { 'last-event-id': 'abc' })).statusCode).toBe(400);
      expect((await events(h, eventId, { 'last-event-id': '-1' })).statusCode).toBe(400);
    });

    // spec: both ledger reads return 503 when the ledger is unavailable.
    it('the ledger answers 503 when the store is unavailable', async () => {
      const h = await rig.open();
      const eventId = await waited(h, 'x');
      await h.internals.store.close();
      const res = await h.adminGet(`/api/v1/turns/${eventId}`);
      expect(res.statusCode).toBe(503);
      expect(res.json<{ error: { code: string } }>().error.code).toBe('UNAVAILABLE');
      const list = await h.adminGet(`/api/v1/sessions/${enc('gateway:api:c1')}/turns`);
      expect(list.statusCode).toBe(503);
    });
  });

  describe('security', () => {
    it('the ledger reads and approvals are admin: an api token → 403, none → 401', async () => {
      const h = await rig.open();
      const eventId = await waited(h, 'x');
      const urls = [
        { method: 'GET' as const, url: `/api/v1/turns/${eventId}` },
        { method: 'GET' as const, url: `/api/v1/sessions/${enc('gateway:api:c1')}/turns` },
        { method: 'POST' as const, url: `/api/v1/turns/${eventId}/approve` },
        { method: 'POST' as const, url: `/api/v1/turns/${eventId}/deny` },
      ];
      for (const request of urls) {
        const api = await h.inject({ ...request, headers: apiHeaders });
        expect(api.statusCode, `${request.method} ${request.url}`).toBe(403);
        expect(api.json<{ error: { code: string } }>().error.code).toBe('FORBIDDEN');
        const none = await h.inject(request);
        expect(none.statusCode).toBe(401);
      }
    });

    it('the events stream needs a token', async () => {
      const h = await rig.open();
      const eventId = await waited(h, 'x');
      const res = await h.inject({ method: 'GET', url: `/api/v1/turns/${eventId}/events` });
      expect(res.statusCode).toBe(401);
    });
  });
});
