/**
 * Tracing of turns (DECISIONS §21, ADR 0039) against a real OTLP/HTTP receiver: a real gateway (SQLite, and two
 * gateways on one PostgreSQL schema), the fake OpenAI provider over HTTP, the SDK's own exporter. One trace per
 * turn: `gatehouse.turn` (child of the caller's span) with its phases as children, the GenAI attributes of the
 * model call, the trace context sent on the model call, no message text unless `capture_content`.
 */
import { randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { AgentTool } from '../../src/runtime/index.js';
import { tracingSdkLoaded } from '../../src/tracing/index.js';
import { deferred } from '../helpers/deferred.js';
import { echoAnthropicReply, startFakeAnthropic } from '../helpers/fake-anthropic.js';
import { chatRequests, echoReply, startFakeOpenAI } from '../helpers/fake-openai.js';
import { API_TOKEN, adminHeaders, startHarness, useHarness, type Harness } from '../helpers/harness.js';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../helpers/otlp-receiver.js';
import { testBackends } from '../helpers/stores.js';
import { until } from '../helpers/until.js';
import { startReceiver } from '../subscriptions/receiver.js';

const PHASES = ['accept', 'queue', 'claim', 'chat gpt-4o-mini', 'persist', 'deliver'];

/** A caller's span context: a fresh trace per test, so the receiver's spans of one test are told apart. */
function caller(): { traceId: string; spanId: string; traceparent: string } {
  const traceId = randomBytes(16).toString('hex');
  const spanId = randomBytes(8).toString('hex');
  return { traceId, spanId, traceparent: `00-${traceId}-${spanId}-01` };
}

/** Text no attribute may carry unless content is captured. */
function marker(): string {
  return `secret-words-${randomBytes(6).toString('hex')}`;
}

/** A tool the fake model can call. */
const probeTool: AgentTool = {
  spec: { name: 'probe_tool', description: 'answers ok', parameters: { type: 'object', properties: {} } },
  run: async () => ({ ok: true }),
};

/** The spans of `traceId`, once its `gatehouse.turn` span has been exported (the gateways' exporters flushed). */
async function traceOf(receiver: OtlpReceiver, harnesses: Harness[], traceId: string): Promise<ReceivedSpan[]> {
  await until(`the gatehouse.turn span of ${traceId}`, async () => {
    for (const h of harnesses) await h.internals.tracing.flush();
    return receiver.spans.some((s) => s.traceId === traceId && s.name === 'gatehouse.turn');
  });
  return receiver.spans.filter((s) => s.traceId === traceId);
}

/** The one span named `name` (fails when there are none or several). */
function one(spans: ReceivedSpan[], name: string): ReceivedSpan {
  const found = spans.filter((s) => s.name === name);
  expect(
    found.map((s) => s.name),
    `spans named ${name}`,
  ).toEqual([name]);
  return found[0]!;
}

/** Every attribute value of every span (and its resource), as one text. */
function attributeText(spans: ReceivedSpan[]): string {
  return JSON.stringify(spans.map((s) => [s.attributes, s.resource]));
}

/** Checks the shape of one turn's trace: the turn span under the caller's, each phase once under it. */
function expectTurnTrace(spans: ReceivedSpan[], callerSpanId: string | null, phases = PHASES): ReceivedSpan {
  const turn = one(spans, 'gatehouse.turn');
  expect(turn.parentSpanId).toBe(callerSpanId ?? '');
  for (const phase of phases) expect(one(spans, phase).parentSpanId, phase).toBe(turn.spanId);
  expect(spans.map((s) => s.name).sort()).toEqual(['gatehouse.turn', ...phases].sort());
  // The turn span runs from the acceptance to the delivery.
  expect(turn.startNs).toBeLessThanOrEqual(one(spans, 'accept').startNs);
  expect(turn.endNs).toBeGreaterThanOrEqual(one(spans, 'deliver').endNs);
  return turn;
}

describe('tracing on (in process, SQLite)', async () => {
  const receiver = await startOtlpReceiver();
  afterAll(async () => {
    await receiver.close();
  });
  const rig = useHarness(() => ({
    fake: { always: echoReply },
    tools: [probeTool],
    config: {
      tracing: { enabled: true, endpoint: receiver.url },
      subscriptions: { allow_private_targets: true, allow_http: true },
    },
  }));

  it('a /message with a traceparent: one trace of the caller, gatehouse.turn under its span, every phase once under the turn, ids but no text', async () => {
    const parent = caller();
    const text = marker();
    const res = await rig.message(
      { platform: 'cli', user_id: 'u1', chat_id: 'c1', text, wait: true },
      { traceparent: parent.traceparent, tracestate: 'vendor=abc' },
    );
    expect(res.statusCode).toBe(200);
    const eventId = res.json<{ event_id: string }>().event_id;

    const spans = await traceOf(receiver, [rig], parent.traceId);
    const turn = expectTurnTrace(spans, parent.spanId);
    expect(turn.attributes).toMatchObject({
      'gatehouse.event_id': eventId,
      'gatehouse.session_key': 'gateway:cli:c1',
      'gatehouse.turn.status': 'completed',
      'gatehouse.agent': 'main',
      'gatehouse.principal': 'default',
    });
    expect(turn.resource['service.name']).toBe('gatehouse');
    expect(one(spans, 'accept').attributes).toMatchObject({ 'gatehouse.event_id': eventId, 'gatehouse.source': 'api' });

    // GenAI semantic conventions on the model call, token counts from the fake's usage (10 in, 5 out).
    const chat = one(spans, 'chat gpt-4o-mini');
    expect(chat.attributes).toMatchObject({
      'gen_ai.operation.name': 'chat',
      'gen_ai.system': 'openai',
      'gen_ai.request.model': 'gpt-4o-mini',
      'gen_ai.usage.input_tokens': 10,
      'gen_ai.usage.output_tokens': 5,
    });
    expect(chat.kind).toBe(3); // CLIENT

    // The model call carried the trace: its traceparent names the chat span, the caller's tracestate goes on.
    const call = rig.fake.requests.filter((r) => r.path === '/v1/chat/completions').at(-1)!;
    expect(call.headers.traceparent).toBe(`00-${parent.traceId}-${chat.spanId}-01`);
    expect(call.headers.tracestate).toBe('vendor=abc');

    // No message text in any attribute (the reply echoes it too).
    expect(attributeText(spans)).not.toContain(text);

    // The turn API names the trace.
    const record = await rig.inject({ method: 'GET', url: `/api/v1/turns/${eventId}`, headers: adminHeaders });
    expect(record.json<{ trace_id: string }>().trace_id).toBe(parent.traceId);
  });

  it('a tool call: execute_tool <name> once under the turn, between the two model calls', async () => {
    const parent = caller();
    rig.fake.enqueue({ tool_calls: [{ name: 'probe_tool', arguments: {} }] });
    const res = await rig.message(
      { platform: 'cli', user_id: 'u1', chat_id: 'c2', text: 'use the tool', wait: true },
      { traceparent: parent.traceparent },
    );
    expect(res.json<{ status: string }>().status).toBe('completed');
    const spans = await traceOf(receiver, [rig], parent.traceId);
    const turn = one(spans, 'gatehouse.turn');
    const tool = one(spans, 'execute_tool probe_tool');
    expect(tool.parentSpanId).toBe(turn.spanId);
    expect(tool.attributes).toMatchObject({
      'gen_ai.operation.name': 'execute_tool',
      'gen_ai.tool.name': 'probe_tool',
    });
    const chats = spans.filter((s) => s.name === 'chat gpt-4o-mini').sort((a, b) => (a.startNs < b.startNs ? -1 : 1));
    expect(chats).toHaveLength(2);
    for (const chat of chats) expect(chat.parentSpanId).toBe(turn.spanId);
    expect(tool.startNs).toBeGreaterThanOrEqual(chats[0]!.endNs);
    expect(tool.endNs).toBeLessThanOrEqual(chats[1]!.startNs);
    // Each model call carried its own span as the parent.
    const calls = chatRequests(rig.fake).length;
    const headers = rig.fake.requests.filter((r) => r.path === '/v1/chat/completions').slice(-2);
    expect(calls).toBeGreaterThanOrEqual(2);
    expect(headers.map((r) => r.headers.traceparent)).toEqual(
      chats.map((chat) => `00-${parent.traceId}-${chat.spanId}-01`),
    );
    for (const phase of ['accept', 'queue', 'claim', 'persist', 'deliver'])
      expect(one(spans, phase).parentSpanId).toBe(turn.spanId);
  });

  it('without a traceparent the turn starts a trace of its own: gatehouse.turn is a root span, the API names it', async () => {
    const res = await rig.message({ platform: 'cli', user_id: 'u1', chat_id: 'c3', text: 'hello', wait: true });
    const eventId = res.json<{ event_id: string }>().event_id;
    const record = await rig.inject({ method: 'GET', url: `/api/v1/turns/${eventId}`, headers: adminHeaders });
    const traceId = record.json<{ trace_id: string | null }>().trace_id;
    expect(traceId).toMatch(/^[0-9a-f]{32}$/);
    const spans = await traceOf(receiver, [rig], traceId!);
    expectTurnTrace(spans, null);
    expect(one(spans, 'gatehouse.turn').attributes['gatehouse.event_id']).toBe(eventId);
  });

  it('an invalid traceparent is ignored: a new trace, never an error', async () => {
    const res = await rig.message(
      { platform: 'cli', user_id: 'u1', chat_id: 'c4', text: 'hello', wait: true },
      { traceparent: `00-${'0'.repeat(32)}-${'1'.repeat(16)}-01` },
    );
    expect(res.statusCode).toBe(200);
    const eventId = res.json<{ event_id: string }>().event_id;
    const record = await rig.inject({ method: 'GET', url: `/api/v1/turns/${eventId}`, headers: adminHeaders });
    const traceId = record.json<{ trace_id: string }>().trace_id;
    expect(traceId).not.toBe('0'.repeat(32));
    expectTurnTrace(await traceOf(receiver, [rig], traceId), null);
  });

  it('capture_content: true puts the message text and the model input and output on the spans', async () => {
    const h = await rig.open({ config: { tracing: { capture_content: true } } });
    const parent = caller();
    const text = marker();
    await h.message(
      { platform: 'cli', user_id: 'u1', chat_id: 'c5', text, wait: true },
      { traceparent: parent.traceparent },
    );
    const spans = await traceOf(receiver, [h], parent.traceId);
    expect(one(spans, 'accept').attributes['gatehouse.message.text']).toBe(text);
    const chat = one(spans, 'chat gpt-4o-mini');
    expect(String(chat.attributes['gen_ai.input.messages'])).toContain(text);
    expect(String(chat.attributes['gen_ai.output.messages'])).toContain(`fake: ${text}`);
  });

  it('POST /sessions/{id}/messages and /v1/chat/completions read the traceparent too', async () => {
    const created = await rig.inject({
      method: 'POST',
      url: '/api/v1/sessions',
      headers: adminHeaders,
      payload: { channel: 'api' },
    });
    const sessionId = created.json<{ id: string }>().id;
    const first = caller();
    const sent = await rig.inject({
      method: 'POST',
      url: `/api/v1/sessions/${encodeURIComponent(sessionId)}/messages`,
      headers: { ...adminHeaders, traceparent: first.traceparent },
      payload: { content: 'hi', role: 'user' },
    });
    expect(sent.statusCode).toBe(200);
    expectTurnTrace(await traceOf(receiver, [rig], first.traceId), first.spanId);

    const second = caller();
    const completion = await rig.inject({
      method: 'POST',
      url: '/v1/chat/completions',
      headers: { authorization: `Bearer ${API_TOKEN}`, traceparent: second.traceparent },
      payload: { model: 'gatehouse', messages: [{ role: 'user', content: 'hi' }] },
    });
    expect(completion.statusCode).toBe(200);
    expectTurnTrace(await traceOf(receiver, [rig], second.traceId), second.spanId);
  });

  it('a WebSocket message frame with a traceparent continues that trace', async () => {
    const base = await rig.gateway.listen();
    const parent = caller();
    const socket = new WebSocket(`${base.replace(/^http/, 'ws')}/api/v1/ws`, { headers: { 'x-api-token': API_TOKEN } });
    const frames: Array<Record<string, unknown>> = [];
    const final = deferred<Record<string, unknown>>();
    socket.on('message', (data: Buffer) => {
      const frame = JSON.parse(data.toString('utf8')) as Record<string, unknown>;
      frames.push(frame);
      if (frame.type === 'auth_ok') {
        socket.send(
          JSON.stringify({ type: 'message', text: 'over the socket', traceparent: parent.traceparent, ref: 1 }),
        );
      }
      if (frame.type === 'final' || frame.type === 'error') final.resolve(frame);
    });
    try {
      const end = await final.promise;
      expect(end).toMatchObject({ type: 'final', status: 'completed' });
      const spans = await traceOf(receiver, [rig], parent.traceId);
      expectTurnTrace(spans, parent.spanId);
      expect(one(spans, 'accept').attributes['gatehouse.source']).toBe('websocket');
    } finally {
      socket.terminate();
    }
  });

  it("an MCP client's send_message with a traceparent header continues that trace", async () => {
    const base = await rig.gateway.listen();
    const parent = caller();
    const client = new Client({ name: 'traced', version: '1.0.0' });
    const transport = new StreamableHTTPClientTransport(new URL(`${base}/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${API_TOKEN}`, traceparent: parent.traceparent } },
    });
    await client.connect(transport);
    try {
      const result = await client.callTool({ name: 'send_message', arguments: { text: 'over MCP', chat_id: 'm1' } });
      expect(result.structuredContent).toMatchObject({ status: 'completed' });
      const spans = await traceOf(receiver, [rig], parent.traceId);
      expectTurnTrace(spans, parent.spanId);
      expect(one(spans, 'accept').attributes['gatehouse.source']).toBe('mcp');
    } finally {
      await client.close();
    }
  });

  it("a subscription's delivery of turn.completed carries a traceparent of the turn's trace", async () => {
    const hooks = await startReceiver();
    try {
      const created = await rig.inject({
        method: 'POST',
        url: '/api/v1/subscriptions',
        headers: adminHeaders,
        payload: { url: `${hooks.url}/hook`, events: ['turn.completed'] },
      });
      expect(created.statusCode).toBe(201);
      const parent = caller();
      const res = await rig.message(
        { platform: 'cli', user_id: 'u1', chat_id: 'hooked', text: 'tell the hook', wait: true },
        { traceparent: parent.traceparent },
      );
      expect(res.statusCode).toBe(200);
      await until('the turn.completed delivery', () => hooks.received.some((r) => r.json.type === 'turn.completed'));
      const delivery = hooks.received.find((r) => r.json.type === 'turn.completed')!;
      expect(delivery.headers.traceparent).toMatch(new RegExp(`^00-${parent.traceId}-[0-9a-f]{16}-01$`));
    } finally {
      await hooks.close();
    }
  });

  it('a turn paused for approval: gatehouse.turn ends at the pause; the resumed run joins it, with no second turn span', async () => {
    const h = await rig.open({ config: { agent: { approval_required: ['probe_tool'] } } });
    const parent = caller();
    rig.fake.enqueue({ tool_calls: [{ name: 'probe_tool', arguments: {} }] });
    const paused = await h.message(
      { platform: 'cli', user_id: 'u1', chat_id: 'c6', text: 'risky', wait: true },
      { traceparent: parent.traceparent },
    );
    const eventId = paused.json<{ event_id: string; status: string }>().event_id;
    expect(paused.json<{ status: string }>().status).toBe('waiting_approval');
    const before = await traceOf(receiver, [h], parent.traceId);
    const turn = one(before, 'gatehouse.turn');
    expect(turn.attributes['gatehouse.turn.status']).toBe('waiting_approval');

    const approved = await h.inject({ method: 'POST', url: `/api/v1/turns/${eventId}/approve`, headers: adminHeaders });
    expect(approved.statusCode).toBe(200);
    expect((await h.internals.messages.waitFor(eventId, 5_000))?.status).toBe('completed');
    const spans = await until('the resumed run’s spans', async () => {
      await h.internals.tracing.flush();
      const all = receiver.spans.filter((s) => s.traceId === parent.traceId);
      return all.filter((s) => s.name === 'deliver').length === 2 ? all : null;
    });
    expect(spans.filter((s) => s.name === 'gatehouse.turn')).toHaveLength(1);
    expect(one(spans, 'execute_tool probe_tool').parentSpanId).toBe(turn.spanId);
    for (const name of ['chat gpt-4o-mini', 'persist', 'deliver']) {
      const found = spans.filter((s) => s.name === name);
      expect(found, name).toHaveLength(2);
      for (const span of found) expect(span.parentSpanId).toBe(turn.spanId);
    }
    for (const name of ['accept', 'queue', 'claim']) one(spans, name);
  });

  it('the Anthropic provider sends the trace context as the SDK’s per-request headers', async () => {
    const anthropic = await startFakeAnthropic();
    anthropic.always(echoAnthropicReply);
    try {
      const h = await rig.open({
        config: {
          provider: { type: 'anthropic', base_url: anthropic.url, model: 'claude-test', api_key: 'sk-ant-test' },
        },
      });
      const parent = caller();
      const res = await h.message(
        { platform: 'cli', user_id: 'u1', chat_id: 'c7', text: 'hi', wait: true },
        { traceparent: parent.traceparent },
      );
      expect(res.json<{ status: string }>().status).toBe('completed');
      const spans = await traceOf(receiver, [h], parent.traceId);
      expectTurnTrace(spans, parent.spanId, ['accept', 'queue', 'claim', 'chat claude-test', 'persist', 'deliver']);
      const chat = one(spans, 'chat claude-test');
      expect(chat.attributes).toMatchObject({
        'gen_ai.system': 'anthropic',
        'gen_ai.request.model': 'claude-test',
        'gen_ai.usage.input_tokens': 10,
        'gen_ai.usage.output_tokens': 5,
      });
      const call = anthropic.requests.find((r) => r.path === '/v1/messages')!;
      expect(call.headers.traceparent).toBe(`00-${parent.traceId}-${chat.spanId}-01`);
    } finally {
      await rig.open(); // the next gateway points at the OpenAI fake again
      await anthropic.close();
    }
  });

  it('the SDK was loaded (the tracing-off test checks the opposite in a process of its own)', () => {
    expect(tracingSdkLoaded()).toBe(true);
    const cache = Object.keys(createRequire(import.meta.url).cache);
    expect(cache.some((path) => path.includes('@opentelemetry/sdk-trace'))).toBe(true);
  });
});

const postgres = testBackends().find((backend) => backend.name === 'postgres')!;
const pgUrl = process.env.GATEHOUSE_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

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

describe.skipIf(postgres.skip)('tracing across gateways (PostgreSQL)', () => {
  const schema = `gh_trace_${randomBytes(6).toString('hex')}`;
  let receiver: OtlpReceiver;
  beforeAll(async () => {
    receiver = await startOtlpReceiver();
    await adminQuery(`create schema ${schema}`);
  });
  afterAll(async () => {
    await receiver.close();
    await adminQuery(`drop schema if exists ${schema} cascade`);
  });

  it('a turn accepted by one gateway and run by another is one trace: accept from the first, the rest from the second', async () => {
    const url = new URL(pgUrl);
    url.searchParams.set('options', `-c search_path=${schema}`);
    const config = {
      storage: { driver: 'postgres', url: url.toString() },
      agent: { max_concurrent_turns: 1 },
      tracing: { enabled: true, endpoint: receiver.url },
    };
    const fakeA = await startFakeOpenAI();
    const fakeB = await startFakeOpenAI();
    fakeB.always(echoReply);
    const gate = deferred();
    fakeA.enqueue({ after: gate.promise, then: echoReply });
    const a = await startHarness({ fake: fakeA, config });
    let b: Harness | undefined;
    try {
      // The first gateway's only turn slot is held at the model: the traced turn waits in its queue.
      await a.message({ platform: 'cli', user_id: 'u', chat_id: 'hold', text: 'hold' });
      await until('the first turn calls the model', () => chatRequests(fakeA).length === 1);
      const parent = caller();
      const accepted = await a.message(
        { platform: 'cli', user_id: 'u', chat_id: 'moved', text: 'run me elsewhere' },
        { traceparent: parent.traceparent },
      );
      expect(accepted.statusCode).toBe(202);
      const eventId = accepted.json<{ event_id: string }>().event_id;
      // It leaves (the held turn ends interrupted); the accepted one stays accepted for another gateway.
      await a.gateway.shutdown(0);
      b = await startHarness({ fake: fakeB, config });
      const turn = await until('the second gateway runs the turn', async () => {
        const record = await b!.inject({ method: 'GET', url: `/api/v1/turns/${eventId}`, headers: adminHeaders });
        const body = record.json<{ status: string; trace_id: string }>();
        return body.status === 'completed' ? body : null;
      });
      expect(turn.trace_id).toBe(parent.traceId);
      expect(chatRequests(fakeA).map((r) => r.messages?.at(-1)?.content)).not.toContain('run me elsewhere');

      const spans = await traceOf(receiver, [b], parent.traceId);
      expectTurnTrace(spans, parent.spanId);
      const instanceOf = (name: string) => one(spans, name).resource['service.instance.id'];
      expect(instanceOf('accept')).toBe(a.internals.messages.owner);
      for (const name of ['gatehouse.turn', 'queue', 'claim', 'chat gpt-4o-mini', 'persist', 'deliver']) {
        expect(instanceOf(name), name).toBe(b.internals.messages.owner);
      }
      const call = fakeB.requests.filter((r) => r.path === '/v1/chat/completions').at(-1)!;
      expect(call.headers.traceparent).toBe(`00-${parent.traceId}-${one(spans, 'chat gpt-4o-mini').spanId}-01`);
    } finally {
      gate.resolve();
      await b?.close();
      await a.close();
      await fakeA.close();
      await fakeB.close();
    }
  });
});
