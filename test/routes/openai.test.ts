import { describe, expect, it, vi } from 'vitest';
import { deferred } from '../helpers/deferred.js';
import { chatRequests, contentText, echoReply, lastUserText } from '../helpers/fake-openai.js';
import { adminHeaders, API_TOKEN, apiHeaders, useHarness, type Harness } from '../helpers/harness.js';
import { recordingTool } from './builders.js';

const bearer = { authorization: `Bearer ${API_TOKEN}` };

interface Completion {
  id: string;
  object: string;
  created: number;
  model: string;
  choices: Array<{ index: number; message: { role: string; content: string }; finish_reason: string }>;
  usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number };
}

interface OpenAiErrorBody {
  error: { message: string; type: string; code: string; param: null };
}

interface HistoryItem {
  role: string;
  content: string | null;
}

/** POST /v1/chat/completions with the api token as the SDKs send it (Bearer). */
function complete(h: Harness, body: Record<string, unknown>, headers: Record<string, string> = {}) {
  return h.inject({
    method: 'POST',
    url: '/v1/chat/completions',
    headers: { ...bearer, ...headers },
    payload: { model: 'gatehouse', ...body },
  });
}

const user = (content: unknown) => ({ role: 'user', content });

/** The `data:` lines of an OpenAI stream, parsed (`[DONE]` kept as the string). */
function dataLines(raw: string): unknown[] {
  return raw
    .split('\n\n')
    .filter((block) => block.startsWith('data: '))
    .map((block) => {
      const text = block.slice('data: '.length);
      return text === '[DONE]' ? text : (JSON.parse(text) as unknown);
    });
}

async function history(h: Harness, sessionKey: string): Promise<HistoryItem[]> {
  const res = await h.inject({
    method: 'GET',
    url: `/api/v1/sessions/${encodeURIComponent(sessionKey)}/history`,
    headers: apiHeaders,
  });
  expect(res.statusCode).toBe(200);
  return res.json<{ items: HistoryItem[] }>().items;
}

async function sessionOf(h: Harness, eventId: string): Promise<string> {
  const turn = await h.internals.messages.turn(eventId);
  expect(turn).not.toBeNull();
  return turn!.sessionKey;
}

function expectOpenAiError(body: unknown, type: string, code: string): OpenAiErrorBody['error'] {
  const error = (body as OpenAiErrorBody).error;
  expect(Object.keys(body as object)).toEqual(['error']);
  expect(Object.keys(error).sort()).toEqual(['code', 'message', 'param', 'type']);
  expect(error).toMatchObject({ type, code, param: null });
  expect(typeof error.message).toBe('string');
  return error;
}

describe('OpenAI-compatible API', () => {
  const rig = useHarness({ fake: { always: echoReply }, autoOpen: false });

  describe('happy', () => {
    it('GET /v1/models lists `gatehouse` in OpenAI’s list shape', async () => {
      const h = await rig.open();
      const res = await h.inject({ method: 'GET', url: '/v1/models', headers: bearer });
      expect(res.statusCode).toBe(200);
      const body = res.json<{ object: string; data: Array<Record<string, unknown>> }>();
      expect(body.object).toBe('list');
      expect(body.data).toHaveLength(1);
      expect(Object.keys(body.data[0]!).sort()).toEqual(['created', 'id', 'object', 'owned_by']);
      expect(body.data[0]).toMatchObject({ id: 'gatehouse', object: 'model', owned_by: 'gatehouse' });
      expect(Number.isInteger(body.data[0]!.created)).toBe(true);
      // Not under the API prefix.
      expect((await h.inject({ method: 'GET', url: '/api/v1/v1/models', headers: bearer })).statusCode).toBe(404);
    });

    it('answers a chat.completion with the turn’s reply, usage, id chatcmpl-<event id> and the event header', async () => {
      const h = await rig.open();
      rig.fake.enqueue({ content: 'hello from the agent', usage: { prompt_tokens: 12, completion_tokens: 7 } });
      const res = await complete(h, { messages: [user('hi')], temperature: 0.2, top_p: 1, max_tokens: 50, n: 1 });
      expect(res.statusCode).toBe(200);
      const eventId = res.headers['x-gatehouse-event-id'] as string;
      expect(eventId).toMatch(/^evt_/);
      const body = res.json<Completion>();
      expect(body).toMatchObject({
        id: `chatcmpl-${eventId}`,
        object: 'chat.completion',
        model: 'gatehouse',
        choices: [{ index: 0, message: { role: 'assistant', content: 'hello from the agent' }, finish_reason: 'stop' }],
        usage: { prompt_tokens: 12, completion_tokens: 7, total_tokens: 19 },
      });
      const turn = await h.internals.messages.turn(eventId);
      expect(body.created).toBe(Math.floor(Date.parse(turn!.acceptedAt) / 1000));
      expect(turn).toMatchObject({ status: 'completed', response: 'hello from the agent' });
      // The provider got the configured model, not `gatehouse`, and the user's text last.
      const call = chatRequests(rig.fake)[0]!;
      expect(call.model).toBe('gpt-4o-mini');
      expect(call.messages?.at(-1)).toMatchObject({ role: 'user', content: 'hi' });
    });

    it('without user or X-Session-Key: a fresh session per call whose context is the request’s messages', async () => {
      const h = await rig.open({ config: { agent: { system_prompt: 'gateway prompt' } } });
      const messages = [
        { role: 'system', content: 'client system' },
        user('my name is Ada'),
        { role: 'assistant', content: 'Hello Ada' },
        { role: 'developer', content: [{ type: 'text', text: 'be kind' }] },
        user([
          { type: 'text', text: 'what is ' },
          { type: 'text', text: 'my name?' },
        ]),
      ];
      const first = await complete(h, { messages });
      expect(first.statusCode).toBe(200);
      const call = chatRequests(rig.fake)[0]!;
      expect(call.messages?.map((m) => [m.role, contentText(m.content)])).toEqual([
        ['system', 'gateway prompt'],
        ['system', 'client system'],
        ['user', 'my name is Ada'],
        ['assistant', 'Hello Ada'],
        ['system', 'be kind'],
        ['user', 'what is my name?'],
      ]);
      const firstSession = await sessionOf(h, first.headers['x-gatehouse-event-id'] as string);
      expect(firstSession).toMatch(/^gateway:openai:~/);
      // Its history holds the turn itself; the request's earlier messages are context, not history.
      expect((await history(h, firstSession)).map((m) => [m.role, m.content])).toEqual([
        ['user', 'what is my name?'],
        ['assistant', 'fake: what is my name?'],
      ]);

      const second = await complete(h, { messages: [user('again')] });
      const secondSession = await sessionOf(h, second.headers['x-gatehouse-event-id'] as string);
      expect(secondSession).not.toBe(firstSession);
      expect(chatRequests(rig.fake)[1]!.messages?.map((m) => m.role)).toEqual(['system', 'user']);
    });

    it('`user` names the session gateway:openai:<user>: its history is the context, the request’s is not', async () => {
      const h = await rig.open();
      const first = await complete(h, { user: 'alice', messages: [user('first question')] });
      expect(await sessionOf(h, first.headers['x-gatehouse-event-id'] as string)).toBe('gateway:openai:alice');
      const second = await complete(h, {
        user: 'alice',
        messages: [user('first question'), { role: 'assistant', content: 'client copy' }, user('second question')],
      });
      expect(second.statusCode).toBe(200);
      const call = chatRequests(rig.fake)[1]!;
      expect(call.messages?.map((m) => [m.role, contentText(m.content)])).toEqual([
        ['user', 'first question'],
        ['assistant', 'fake: first question'],
        ['user', 'second question'],
      ]);
    });

    it('X-Session-Key names the session (its value is the chat id) and wins over `user`', async () => {
      const h = await rig.open();
      const res = await complete(h, { user: 'bob', messages: [user('hello')] }, { 'x-session-key': 'team-chat' });
      expect(res.statusCode).toBe(200);
      expect(await sessionOf(h, res.headers['x-gatehouse-event-id'] as string)).toBe('gateway:openai:team-chat');
      const next = await complete(h, { messages: [user('and then')] }, { 'x-session-key': 'team-chat' });
      expect(lastUserText(chatRequests(rig.fake)[1]!)).toBe('and then');
      expect(chatRequests(rig.fake)[1]!.messages).toHaveLength(3);
      expect(next.json<Completion>().choices[0]!.message.content).toBe('fake: and then');
    });

    it('streams chat.completion.chunk data lines: role, deltas, finish_reason, usage, [DONE]', async () => {
      const h = await rig.open();
      rig.fake.enqueue({ content: 'one two three', chunks: 3, usage: { prompt_tokens: 4, completion_tokens: 3 } });
      const res = await complete(h, {
        messages: [user('count')],
        stream: true,
        stream_options: { include_usage: true },
      });
      expect(res.statusCode).toBe(200);
      expect(res.headers['content-type']).toMatch(/^text\/event-stream/);
      const eventId = res.headers['x-gatehouse-event-id'] as string;
      expect(eventId).toMatch(/^evt_/);
      expect(res.body).not.toMatch(/^event:/m);
      expect(res.body.endsWith('data: [DONE]\n\n')).toBe(true);
      const lines = dataLines(res.body);
      expect(lines.at(-1)).toBe('[DONE]');
      const chunks = lines.slice(0, -1) as Array<Record<string, unknown>>;
      for (const chunk of chunks) {
        expect(chunk).toMatchObject({ id: `chatcmpl-${eventId}`, object: 'chat.completion.chunk', model: 'gatehouse' });
      }
      const turn = await h.internals.messages.turn(eventId);
      expect(chunks[0]!.created).toBe(Math.floor(Date.parse(turn!.acceptedAt) / 1000));
      const choices = chunks.map((c) => c.choices as Array<{ delta: Record<string, unknown>; finish_reason: unknown }>);
      expect(choices[0]![0]).toMatchObject({ delta: { role: 'assistant', content: '' }, finish_reason: null });
      const deltas = choices.slice(1, -2).map((c) => c[0]!.delta.content as string);
      expect(deltas.length).toBe(3);
      expect(deltas.join('')).toBe('one two three');
      expect(choices.at(-2)![0]).toMatchObject({ delta: {}, finish_reason: 'stop' });
      expect(chunks.at(-1)).toMatchObject({
        choices: [],
        usage: { prompt_tokens: 4, completion_tokens: 3, total_tokens: 7 },
      });
    });

    it('streams without a usage chunk unless include_usage is asked for', async () => {
      const h = await rig.open();
      const res = await complete(h, { messages: [user('plain')], stream: true });
      const chunks = dataLines(res.body).slice(0, -1) as Array<{ choices: unknown[]; usage?: unknown }>;
      expect(chunks.every((c) => c.choices.length === 1 && c.usage === undefined)).toBe(true);
    });

    it('a turn paused for approval answers finish_reason stop with what is awaited and the event id', async () => {
      const risky = recordingTool('risky', () => 'did it');
      const h = await rig.open({ tools: [risky], config: { agent: { approval_required: ['risky'] } } });
      rig.fake.enqueue({ tool_calls: [{ name: 'risky', arguments: { value: 'go' } }] });
      const res = await complete(h, { messages: [user('do the risky thing')] });
      expect(res.statusCode).toBe(200);
      const eventId = res.headers['x-gatehouse-event-id'] as string;
      const body = res.json<Completion>();
      expect(body.choices[0]!.finish_reason).toBe('stop');
      const content = body.choices[0]!.message.content;
      expect(content).toContain('approve');
      expect(content).toContain('"risky"');
      expect(content).toContain(eventId);
      expect(risky.calls).toHaveLength(0);
      expect((await h.internals.messages.turn(eventId))!.status).toBe('waiting_approval');

      // Streamed, the pause ends the stream the same way.
      rig.fake.enqueue({ tool_calls: [{ name: 'risky', arguments: { value: 'again' } }] });
      const streamed = await complete(h, { messages: [user('once more')], stream: true }, { 'x-session-key': 's2' });
      const streamedId = streamed.headers['x-gatehouse-event-id'] as string;
      const chunks = dataLines(streamed.body);
      expect(chunks.at(-1)).toBe('[DONE]');
      const text = (chunks.slice(0, -1) as Array<{ choices: Array<{ delta: { content?: string } }> }>)
        .map((c) => c.choices[0]?.delta.content ?? '')
        .join('');
      expect(text).toContain(streamedId);
      expect((chunks.at(-2) as { choices: Array<{ finish_reason: string }> }).choices[0]!.finish_reason).toBe('stop');
    });

    it('a question from the agent (ask_user) is the content, with the event id; the next call answers it', async () => {
      const h = await rig.open();
      rig.fake.enqueue(
        { tool_calls: [{ name: 'ask_user', arguments: { question: 'Which city?' } }] },
        { content: 'Paris it is' },
      );
      const asked = await complete(h, { user: 'dora', messages: [user('book a trip')] });
      const eventId = asked.headers['x-gatehouse-event-id'] as string;
      const content = asked.json<Completion>().choices[0]!.message.content;
      expect(content.startsWith('Which city?')).toBe(true);
      expect(content).toContain(eventId);
      expect(asked.json<Completion>().choices[0]!.finish_reason).toBe('stop');
      const answered = await complete(h, { user: 'dora', messages: [user('Paris')] });
      expect(answered.json<Completion>().choices[0]!.message.content).toBe('Paris it is');
      expect((await h.internals.messages.turn(eventId))!.status).toBe('completed');
    });

    it('a turn that stops early (daily budget spent) ends with finish_reason length and says why', async () => {
      const h = await rig.open({ config: { budget: { daily_usd: 0 } } });
      const res = await complete(h, { messages: [user('too expensive')] });
      expect(res.statusCode).toBe(200);
      const choice = res.json<Completion>().choices[0]!;
      expect(choice.finish_reason).toBe('length');
      expect(choice.message.content).toContain('budget_exceeded');
      expect(chatRequests(rig.fake)).toHaveLength(0);
      const streamed = await complete(h, { messages: [user('again')], stream: true });
      const last = dataLines(streamed.body).at(-2) as { choices: Array<{ finish_reason: string }> };
      expect(last.choices[0]!.finish_reason).toBe('length');
    });

    it('a streamed retry of a turn paused and then approved answers with its final reply', async () => {
      const risky = recordingTool('risky', () => 'ok');
      const h = await rig.open({ tools: [risky], config: { agent: { approval_required: ['risky'] } } });
      rig.fake.enqueue({ tool_calls: [{ name: 'risky', arguments: {} }] }, { content: 'approved and done' });
      const key = { 'idempotency-key': 'k-pause' };
      const paused = await complete(h, { user: 'erin', messages: [user('go')] }, key);
      const eventId = paused.headers['x-gatehouse-event-id'] as string;
      expect((await h.internals.messages.turn(eventId))!.status).toBe('waiting_approval');
      const approve = await h.inject({
        method: 'POST',
        url: `/api/v1/turns/${eventId}/approve`,
        headers: adminHeaders,
      });
      expect(approve.statusCode).toBe(200);
      const retry = await complete(h, { user: 'erin', messages: [user('go')], stream: true }, key);
      expect(retry.headers['x-gatehouse-event-id']).toBe(eventId);
      const lines = dataLines(retry.body);
      const text = (lines.slice(0, -1) as Array<{ choices: Array<{ delta: { content?: string } }> }>)
        .map((c) => c.choices[0]?.delta.content ?? '')
        .join('');
      expect(text).toBe('approved and done');
      expect(chatRequests(rig.fake)).toHaveLength(2);
    });

    it('an allowed browser origin may send X-Session-Key and read X-Gatehouse-Event-Id', async () => {
      const origin = 'https://chat.example.com';
      const h = await rig.open({ config: { gateway: { auth: { allowed_origins: [origin] } } } });
      const preflight = await h.inject({
        method: 'OPTIONS',
        url: '/v1/chat/completions',
        headers: { origin, 'access-control-request-method': 'POST' },
      });
      expect(preflight.statusCode).toBe(204);
      expect(String(preflight.headers['access-control-allow-headers'])).toContain('X-Session-Key');
      const res = await complete(h, { messages: [user('from a page')] }, { origin, 'x-session-key': 'web' });
      expect(res.statusCode).toBe(200);
      expect(res.headers['access-control-allow-origin']).toBe(origin);
      expect(String(res.headers['access-control-expose-headers'])).toContain('X-Gatehouse-Event-Id');
    });

    it('a client that goes away mid-stream does not cancel the turn', async () => {
      const h = await rig.open();
      const gate = deferred();
      rig.fake.enqueue({ after: gate.promise, then: { content: 'finished anyway' } });
      const url = await h.gateway.listen();
      const controller = new AbortController();
      const res = await fetch(`${url}/v1/chat/completions`, {
        method: 'POST',
        headers: { ...bearer, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'gatehouse', messages: [user('slow one')], stream: true }),
        signal: controller.signal,
      });
      expect(res.status).toBe(200);
      const eventId = res.headers.get('x-gatehouse-event-id')!;
      const reader = res.body!.getReader();
      const first = new TextDecoder().decode((await reader.read()).value);
      expect(first).toContain('"role":"assistant"');
      await vi.waitFor(() => expect(chatRequests(rig.fake)).toHaveLength(1));
      controller.abort();
      await vi.waitFor(() => expect(h.internals.messages.listenerCount()).toBe(0));
      gate.resolve();
      const turn = await h.internals.messages.waitFor(eventId, 5_000);
      expect(turn).toMatchObject({ status: 'completed', response: 'finished anyway' });
    });

    it('a keyed retry replays the same completion and does not call the provider again', async () => {
      const h = await rig.open();
      rig.fake.enqueue({ content: 'only once' });
      const send = () => complete(h, { messages: [user('keyed')] }, { 'idempotency-key': 'k-1' });
      const first = await send();
      const second = await send();
      expect(first.statusCode).toBe(200);
      expect(second.statusCode).toBe(200);
      expect(second.headers['x-gatehouse-event-id']).toBe(first.headers['x-gatehouse-event-id']);
      expect(second.json()).toEqual(first.json());
      expect(second.json<Completion>().choices[0]!.message.content).toBe('only once');
      expect(chatRequests(rig.fake)).toHaveLength(1);

      // X-Idempotency-Key too, in a named session, and a streamed retry of a JSON original.
      const named = () => complete(h, { user: 'carol', messages: [user('named')] }, { 'x-idempotency-key': 'k-2' });
      const a = await named();
      const b = await named();
      expect(b.json()).toEqual(a.json());
      const streamed = await complete(
        h,
        { user: 'carol', messages: [user('named')], stream: true },
        { 'idempotency-key': 'k-2' },
      );
      expect(streamed.headers['x-gatehouse-event-id']).toBe(a.headers['x-gatehouse-event-id']);
      const text = (dataLines(streamed.body).slice(0, -1) as Array<{ choices: Array<{ delta: { content?: string } }> }>)
        .map((c) => c.choices[0]?.delta.content ?? '')
        .join('');
      expect(text).toBe('fake: named');
      expect(chatRequests(rig.fake)).toHaveLength(2);
    });
  });

  describe('errors (OpenAI’s shape, the API’s statuses)', () => {
    it('400 for invalid bodies: validation, n > 1, client-side tools, a last message not from the user', async () => {
      const h = await rig.open();
      const cases: Array<[Record<string, unknown>, RegExp]> = [
        [{ messages: [] }, /messages/],
        [{ messages: 'hi' }, /messages/],
        [{ messages: [user('x')], n: 2 }, /n = 1/],
        [{ messages: [user('x')], tools: [{ type: 'function', function: { name: 'f' } }] }, /client-side tools/],
        [{ messages: [{ role: 'tool', content: 'x', tool_call_id: 'c' }] }, /role/],
        [{ messages: [user('x'), { role: 'assistant', content: 'y' }] }, /last message must have role user/],
        [{ messages: [user([{ type: 'image_url', image_url: { url: 'http://x' } }])] }, /text/],
        [{ messages: [user('x')], user: '~mine' }, /must not start with/],
        [{ messages: [user('   ')] }, /must not be empty/],
      ];
      for (const [body, message] of cases) {
        const res = await complete(h, body);
        expect(res.statusCode, JSON.stringify(body)).toBe(400);
        const error = expectOpenAiError(res.json(), 'invalid_request_error', 'bad_request');
        expect(error.message, JSON.stringify(body)).toMatch(message);
      }
      const noModel = await h.inject({
        method: 'POST',
        url: '/v1/chat/completions',
        headers: bearer,
        payload: { messages: [user('x')] },
      });
      expect(noModel.statusCode).toBe(400);
      expectOpenAiError(noModel.json(), 'invalid_request_error', 'bad_request');
      const badJson = await h.inject({
        method: 'POST',
        url: '/v1/chat/completions',
        headers: { ...bearer, 'content-type': 'application/json' },
        payload: '{"model":',
      });
      expect(badJson.statusCode).toBe(400);
      expectOpenAiError(badJson.json(), 'invalid_request_error', 'bad_request');
      const badHeader = await complete(h, { messages: [user('x')] }, { 'x-session-key': '~x' });
      expect(badHeader.statusCode).toBe(400);
      expectOpenAiError(badHeader.json(), 'invalid_request_error', 'bad_request');
      expect(chatRequests(rig.fake)).toHaveLength(0);
    });

    it('404 model_not_found for any model but gatehouse; nothing is submitted', async () => {
      const h = await rig.open();
      const res = await complete(h, { model: 'gpt-4o', messages: [user('x')] });
      expect(res.statusCode).toBe(404);
      expectOpenAiError(res.json(), 'invalid_request_error', 'model_not_found');
      expect(res.headers['x-gatehouse-event-id']).toBeUndefined();
      expect(chatRequests(rig.fake)).toHaveLength(0);
    });

    it('401 and 403 from the guard in OpenAI’s shape, while /api/v1 keeps the envelope', async () => {
      const h = await rig.open();
      const missing = await h.inject({ method: 'POST', url: '/v1/chat/completions', payload: {} });
      expect(missing.statusCode).toBe(401);
      expectOpenAiError(missing.json(), 'authentication_error', 'unauthorized');
      const wrong = await h.inject({ method: 'GET', url: '/v1/models', headers: { authorization: 'Bearer nope' } });
      expect(wrong.statusCode).toBe(401);
      expectOpenAiError(wrong.json(), 'authentication_error', 'unauthorized');
      const crossSite = await h.inject({
        method: 'GET',
        url: '/v1/models',
        headers: { ...bearer, origin: 'https://evil.example' },
      });
      expect(crossSite.statusCode).toBe(403);
      const error = expectOpenAiError(crossSite.json(), 'permission_error', 'forbidden');
      expect(error.message).toBe('cross-site request forbidden');

      const api = await h.inject({ method: 'GET', url: '/api/v1/sessions' });
      expect(api.statusCode).toBe(401);
      expect(api.json()).toMatchObject({ error: { code: 'UNAUTHORIZED', request_id: expect.any(String) } });
    });

    it('409 in OpenAI’s shape when a key is reused with another message; /message keeps its own body', async () => {
      const h = await rig.open();
      const key = { 'idempotency-key': 'k-conflict' };
      expect((await complete(h, { messages: [user('first')] }, key)).statusCode).toBe(200);
      const conflict = await complete(h, { messages: [user('changed')] }, key);
      expect(conflict.statusCode).toBe(409);
      expectOpenAiError(conflict.json(), 'invalid_request_error', 'conflict');
      // A fresh session's earlier messages are part of its content too.
      const withContext = await complete(h, { messages: [user('earlier'), user('first')] }, key);
      expect(withContext.statusCode).toBe(409);
      expect(chatRequests(rig.fake)).toHaveLength(1);

      const msgKey = { 'idempotency-key': 'k-msg' };
      const body = { platform: 'api', user_id: 'u', chat_id: 'c', text: 'one' };
      expect((await h.message(body, msgKey)).statusCode).toBe(202);
      const apiConflict = await h.message({ ...body, text: 'two' }, msgKey);
      expect(apiConflict.statusCode).toBe(409);
      expect(apiConflict.json()).toEqual({ error: 'idempotency key reused with different content' });
      await h.internals.messages.idle(5_000);
    });

    it('429 with Retry-After from the write rate group, in OpenAI’s shape; models count as reads', async () => {
      const h = await rig.open({ roomyLimits: false, config: { security: { rate_limits: { write: 1, read: 100 } } } });
      expect((await complete(h, { messages: [user('one')] })).statusCode).toBe(200);
      const limited = await complete(h, { messages: [user('two')] });
      expect(limited.statusCode).toBe(429);
      expectOpenAiError(limited.json(), 'rate_limit_error', 'rate_limited');
      expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
      expect(limited.headers['x-ratelimit-remaining']).toBe('0');
      expect((await h.inject({ method: 'GET', url: '/v1/models', headers: bearer })).statusCode).toBe(200);
      expect(chatRequests(rig.fake)).toHaveLength(1);
    });

    it('a failed turn is 502 in OpenAI’s shape with the event id header; streamed, an error object', async () => {
      const h = await rig.open();
      rig.fake.enqueue({ status: 500, body: { error: { message: 'billing account acct_991 is suspended' } } });
      const res = await complete(h, { messages: [user('boom')] });
      expect(res.statusCode).toBe(502);
      expectOpenAiError(res.json(), 'server_error', 'upstream_error');
      // The provider's name and status, never the upstream's own text (it goes to the log).
      expect(res.json<{ error: { message: string } }>().error.message).toBe('model provider failed: openai: HTTP 500');
      expect(res.body).not.toContain('acct_991');
      const eventId = res.headers['x-gatehouse-event-id'] as string;
      expect((await h.internals.messages.turn(eventId))!.status).toBe('failed');

      rig.fake.enqueue({ status: 500 });
      const streamed = await complete(h, { messages: [user('boom')], stream: true });
      expect(streamed.statusCode).toBe(200);
      const lines = dataLines(streamed.body);
      expect(lines.at(-1)).not.toBe('[DONE]');
      expectOpenAiError(lines.at(-1), 'server_error', 'upstream_error');
    });
  });
});
