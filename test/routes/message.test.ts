import { describe, expect, it } from 'vitest';
import { BUILTIN_PRICES } from '../../src/runtime/providers/pricing.js';
import { chatRequests, echoReply, lastOfRole } from '../helpers/fake-openai.js';
import { useHarness } from '../helpers/harness.js';
import { ISO_MS, MESSAGE_FIELDS, msg } from './builders.js';

describe('POST /message', () => {
  // Turns whose answer a test does not script get the echo `fake: <text>`.
  const rig = useHarness({ fake: { always: echoReply }, autoOpen: false });

  describe('happy', () => {
    it('answers 202 {status: accepted, event_id, session_key} once stored, and the turn then runs', async () => {
      const h = await rig.open();
      const res = await h.message(msg('hello there', 'chat-202', { platform: 'telegram' }));
      expect(res.statusCode).toBe(202);
      const body = res.json<{ status: string; event_id: string; session_key: string }>();
      expect(Object.keys(body).sort()).toEqual(['event_id', 'session_key', 'status']);
      expect(body.status).toBe('accepted');
      expect(body.event_id).toMatch(/^evt_/);
      expect(body.session_key).toBe('gateway:telegram:chat-202');

      const turn = await h.internals.messages.waitFor(body.event_id, 5_000);
      expect(turn?.status).toBe('completed');
      expect(turn?.response).toBe('fake: hello there');
    });

    it('with wait in the body answers 200 with the final result, the Message and its cost from usage × price', async () => {
      const h = await rig.open();
      rig.fake.enqueue({ content: 'the answer', usage: { prompt_tokens: 1000, completion_tokens: 500 } });
      const res = await h.message(msg('question', 'c-wait', { wait: true }));
      expect(res.statusCode).toBe(200);
      const body = res.json<Record<string, unknown>>();
      expect(Object.keys(body).sort()).toEqual(['event_id', 'message', 'response', 'session_key', 'status']);
      expect(body.status).toBe('completed');
      expect(body.session_key).toBe('gateway:api:c-wait');
      expect(body.response).toBe('the answer');
      const price = BUILTIN_PRICES['gpt-4o-mini']!;
      const expectedUsd = (1000 * price.input_per_mtok + 500 * price.output_per_mtok) / 1e6;
      const message = body.message as Record<string, unknown>;
      expect(Object.keys(message).sort()).toEqual(MESSAGE_FIELDS);
      expect(message).toMatchObject({
        role: 'assistant',
        content: 'the answer',
        tool_calls: [],
        status: 'completed',
        event_id: body.event_id,
        cost: { input_tokens: 1000, output_tokens: 500 },
      });
      expect(message.id).toMatch(/^msg_/);
      expect((message.cost as { total_usd: number }).total_usd).toBeCloseTo(expectedUsd, 12);
      expect(expectedUsd).toBeGreaterThan(0);
    });

    it('with ?wait=true answers 200 with the final result', async () => {
      const h = await rig.open();
      const res = await h.message(msg('via query', 'c-q'), {}, '?wait=true');
      expect(res.statusCode).toBe(200);
      expect(res.json()).toMatchObject({ status: 'completed', response: 'fake: via query' });
    });

    it('wait=false in the body wins over ?wait=true', async () => {
      const h = await rig.open();
      const res = await h.message(msg('body wins', 'c-bw', { wait: false }), {}, '?wait=true');
      expect(res.statusCode).toBe(202);
      await h.internals.messages.waitFor(res.json<{ event_id: string }>().event_id, 5_000);
    });

    it("sends the user's text as the last user-role message, after the earlier turns of the session", async () => {
      const h = await rig.open({ config: { agent: { system_prompt: 'be brief' } } });
      expect((await h.message(msg('first message', 'c-ctx', { wait: true }))).statusCode).toBe(200);
      expect((await h.message(msg('second message', 'c-ctx', { wait: true }))).statusCode).toBe(200);
      const calls = chatRequests(rig.fake);
      expect(calls).toHaveLength(2);
      expect(calls[1]!.model).toBe('gpt-4o-mini');
      expect(calls[1]!.messages?.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'user']);
      expect(calls[1]!.messages?.[0]?.content).toBe('be brief');
      expect(lastOfRole(calls[1]!, 'user')).toBe('second message');
      expect(calls[1]!.messages?.at(-1)).toMatchObject({ role: 'user', content: 'second message' });
      expect(lastOfRole(calls[1]!, 'assistant')).toBe('fake: first message');
    });

    it('runs on the built-in echo provider without configuration', async () => {
      const h = await rig.open({ fake: undefined });
      const res = await h.message(msg('ping', 'c-echo', { wait: true }));
      expect(res.statusCode).toBe(200);
      expect(res.json()).toMatchObject({ status: 'completed', response: 'echo: ping' });
      expect(res.json<{ message: { cost: { total_usd: number } } }>().message.cost.total_usd).toBe(0);
    });
  });

  describe('errors', () => {
    // One gateway for the table of bad bodies, none of which may reach the model.
    const shared = useHarness({ fake: true, scope: 'all' });
    const bad: Array<[string, Record<string, unknown>, string?]> = [
      ['missing text', { platform: 'api', user_id: 'u', chat_id: 'c' }],
      ['empty text', msg('')],
      ['non-string text', { ...msg('x'), text: 42 }],
      ['timeout_seconds 0', msg('x', 'c', { timeout_seconds: 0 })],
      ['timeout_seconds 601', msg('x', 'c', { timeout_seconds: 601 })],
      ['timeout_seconds 1.5', msg('x', 'c', { timeout_seconds: 1.5 })],
      ['wait "yes"', msg('x', 'c', { wait: 'yes' })],
      ['missing platform', { user_id: 'u', chat_id: 'c', text: 'x' }],
      ['missing chat_id', { platform: 'api', user_id: 'u', text: 'x' }],
      ['?timeout_seconds=0', msg('x'), '?timeout_seconds=0'],
      ['?wait=yes', msg('x'), '?wait=yes'],
    ];
    it.each(bad)('%s → 400 BAD_REQUEST, nothing accepted', async (_name, body, query) => {
      const res = await shared.message(body, {}, query ?? '');
      expect(res.statusCode).toBe(400);
      const error = res.json<{ error: { code: string; request_id: string; details: unknown } }>().error;
      expect(error.code).toBe('BAD_REQUEST');
      expect(error.request_id).toBe(res.headers['x-request-id']);
      expect(Array.isArray(error.details)).toBe(true);
      const turns = await shared.internals.store.db.selectFrom('turns').select('event_id').execute();
      expect(turns).toEqual([]);
      expect(chatRequests(shared.fake)).toHaveLength(0);
    });

    it('a non-object body → 400', async () => {
      const h = await rig.open();
      const res = await h.inject({
        method: 'POST',
        url: '/api/v1/message',
        headers: { 'x-api-token': 'test-api-token-0123456789', 'content-type': 'application/json' },
        payload: '["text"]',
      });
      expect(res.statusCode).toBe(400);
    });

    it('a provider HTTP 500 → 502 UPSTREAM_ERROR with details.event_id; the ledger says failed', async () => {
      const h = await rig.open();
      rig.fake.enqueue({ status: 500 });
      const res = await h.message(msg('boom', 'c-500', { wait: true }));
      expect(res.statusCode).toBe(502);
      const error = res.json<{ error: { code: string; message: string; details: { event_id: string } } }>().error;
      expect(error.code).toBe('UPSTREAM_ERROR');
      expect(error.details.event_id).toMatch(/^evt_/);
      const turn = await h.adminGet(`/api/v1/turns/${error.details.event_id}`);
      expect(turn.statusCode).toBe(200);
      expect(turn.json()).toMatchObject({
        status: 'failed',
        termination_reason: 'provider_error',
        event_id: error.details.event_id,
      });
      expect(turn.json<{ finished_at: string }>().finished_at).toMatch(ISO_MS);
    });
  });

  describe('security', () => {
    it('without a token → 401 and nothing is accepted', async () => {
      const h = await rig.open();
      const res = await h.inject({ method: 'POST', url: '/api/v1/message', payload: msg('x') });
      expect(res.statusCode).toBe(401);
      expect(res.json<{ error: { code: string } }>().error.code).toBe('UNAUTHORIZED');
      const wrong = await h.message(msg('x'), { 'x-api-token': 'not-a-token' });
      expect(wrong.statusCode).toBe(401);
      expect(await h.internals.store.db.selectFrom('turns').select('event_id').execute()).toEqual([]);
    });

    it('a Bearer api token is accepted', async () => {
      const h = await rig.open();
      const res = await h.inject({
        method: 'POST',
        url: '/api/v1/message',
        headers: { authorization: 'Bearer test-api-token-0123456789' },
        payload: msg('bearer', 'c-bearer'),
      });
      expect(res.statusCode).toBe(202);
      await h.internals.messages.waitFor(res.json<{ event_id: string }>().event_id, 5_000);
    });

    it("the provider's error body reaches the log only: the client gets the provider's name and the status", async () => {
      const h = await rig.open();
      const upstream = 'quota exceeded for acct_7781 (see https://billing.internal.example/acct_7781)';
      rig.fake.enqueue({ status: 500, body: { error: { message: upstream, type: 'server_error' } } });
      const res = await h.message(msg('boom', 'c-leak', { wait: true }));
      expect(res.statusCode).toBe(502);
      const error = res.json<{ error: { code: string; message: string } }>().error;
      expect(error).toMatchObject({ code: 'UPSTREAM_ERROR', message: 'model provider failed: openai: HTTP 500' });
      expect(res.body).not.toContain('acct_7781');
      expect(res.body).not.toContain('stack');
      expect(res.body).not.toContain(h.config.data_dir);
      // The ledger, the history of events and a keyed replay answer the same stable message.
      const eventId = res.json<{ error: { details: { event_id: string } } }>().error.details.event_id;
      const events = await h.adminGet(`/api/v1/turns/${eventId}/events`);
      expect(events.body).not.toContain('acct_7781');
      // The operator still finds the upstream's words in the log.
      expect(h.logs.join('\n')).toContain('acct_7781');
    });
  });
});
