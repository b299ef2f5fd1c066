/**
 * The OpenAI Responses API (DECISIONS §22, ADR 0041) with the official
 * `openai` SDK as the client of an in-process gateway listening on a port,
 * whose model provider is the fake OpenAI server.
 */
import OpenAI from 'openai';
import { describe, expect, it, vi } from 'vitest';
import { deferred } from '../helpers/deferred.js';
import { chatRequests, contentText, echoReply, lastUserText } from '../helpers/fake-openai.js';
import { adminHeaders, useHarness } from '../helpers/harness.js';
import { recordingTool } from '../routes/builders.js';

const ALICE_TOKEN = 'alice-token-0123456789abcdef';
const BOB_TOKEN = 'bob-token-0123456789abcdef';

const lookup = recordingTool('lookup', (args) => ({ found: `record ${String(args.value)}` }));

describe('POST /v1/responses with the official openai SDK', () => {
  const t = useHarness({
    fake: { always: echoReply },
    scope: 'all',
    tools: [lookup],
    config: {
      gateway: {
        auth: {
          principals: [
            { id: 'alice', tokens: [ALICE_TOKEN] },
            { id: 'bob', tokens: [BOB_TOKEN] },
          ],
        },
      },
    },
  });
  let base: string | undefined;
  /** A client as users configure it: the gateway's `/v1` and a token; no retries, so each call is one request. */
  const client = async (token = ALICE_TOKEN): Promise<OpenAI> => {
    base ??= await t.gateway.listen();
    return new OpenAI({ baseURL: `${base}/v1`, apiKey: token, maxRetries: 0, timeout: 15_000 });
  };
  const eventOf = (responseId: string) => responseId.replace(/^resp_/, '');

  it('create: a completed response with the reply as output_text, usage and the turn behind it', async () => {
    t.fake.enqueue({ content: 'plain answer', usage: { prompt_tokens: 9, completion_tokens: 2 } });
    const { data, response } = await (
      await client()
    ).responses
      .create({ model: 'gatehouse', input: 'say something' })
      .withResponse();
    const eventId = response.headers.get('x-gatehouse-event-id');
    expect(eventId).toMatch(/^evt_/);
    expect(data).toMatchObject({ id: `resp_${eventId}`, object: 'response', status: 'completed', model: 'gatehouse' });
    expect(data.output_text).toBe('plain answer');
    expect(data.output).toEqual([expect.objectContaining({ type: 'message', role: 'assistant', status: 'completed' })]);
    expect(data.usage).toMatchObject({ input_tokens: 9, output_tokens: 2, total_tokens: 11 });
    expect(lastUserText(chatRequests(t.fake).at(-1)!)).toBe('say something');

    const turn = await t.internals.messages.turn(eventId!);
    expect(turn).toMatchObject({ status: 'completed', response: 'plain answer' });
    expect(turn!.payload).toMatchObject({ source: 'responses', channel: 'responses' });
    const record = await t.inject({ method: 'GET', url: `/api/v1/turns/${eventId}`, headers: adminHeaders });
    expect(record.json()).toMatchObject({ event_id: eventId, source: 'responses' }); // what the turn inspector shows
    const analytics = await t.inject({
      method: 'GET',
      url: '/api/v1/analytics?group_by=channel',
      headers: adminHeaders,
    });
    expect(Object.keys(analytics.json<{ by_channel: Record<string, unknown> }>().by_channel)).toContain('responses');
  });

  it('input items and instructions: the last user message is the turn, the rest and the instructions its context', async () => {
    const sdk = await client();
    const before = chatRequests(t.fake).length;
    const answer = await sdk.responses.create({
      model: 'gatehouse',
      instructions: 'Answer in one word.',
      input: [
        { role: 'user', content: 'earlier question' },
        { role: 'assistant', content: 'earlier answer' },
        { role: 'user', content: [{ type: 'input_text', text: 'the question' }] },
      ],
    });
    expect(answer.output_text).toBe('fake: the question');
    const sent = chatRequests(t.fake, before)[0]!.messages!.map((m) => ({
      role: m.role,
      content: contentText(m.content),
    }));
    expect(sent).toContainEqual({ role: 'system', content: 'Answer in one word.' });
    const tail = sent.slice(-3);
    expect(tail).toEqual([
      { role: 'user', content: 'earlier question' },
      { role: 'assistant', content: 'earlier answer' },
      { role: 'user', content: 'the question' },
    ]);
  });

  it('create with stream: true: the Responses event stream in order, numbered, joining to the reply', async () => {
    t.fake.enqueue({ content: 'streamed reply text', chunks: 4, usage: { prompt_tokens: 6, completion_tokens: 4 } });
    const stream = await (
      await client()
    ).responses.create({ model: 'gatehouse', input: 'stream please', stream: true });
    const events: OpenAI.Responses.ResponseStreamEvent[] = [];
    for await (const event of stream) events.push(event);
    const types = events.map((e) => e.type);
    expect(types.slice(0, 4)).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.content_part.added',
    ]);
    expect(types.slice(-4)).toEqual([
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.completed',
    ]);
    expect(events.map((e) => e.sequence_number)).toEqual(events.map((_, i) => i));
    const deltas = events.filter((e) => e.type === 'response.output_text.delta');
    expect(deltas.length).toBeGreaterThan(1);
    expect(deltas.map((e) => e.delta).join('')).toBe('streamed reply text');
    const completed = events.at(-1) as OpenAI.Responses.ResponseCompletedEvent;
    expect(completed.response.status).toBe('completed');
    expect(completed.response.usage).toMatchObject({ input_tokens: 6, output_tokens: 4, total_tokens: 10 });
  });

  it('responses.stream(): delta events and finalResponse() with output_text', async () => {
    t.fake.enqueue({ content: 'the final words', chunks: 3 });
    const stream = (await client()).responses.stream({ model: 'gatehouse', input: 'stream helper' });
    let joined = '';
    stream.on('response.output_text.delta', (event) => {
      joined += event.delta;
    });
    const final = await stream.finalResponse();
    expect(joined).toBe('the final words');
    expect(final.status).toBe('completed');
    expect(final.output_text).toBe('the final words');
    expect(final.id).toMatch(/^resp_evt_/);
  });

  it('background: answers queued at once, the turn runs anyway, retrieve polls it to completed', async () => {
    const gate = deferred();
    t.fake.enqueue({ after: gate.promise, then: { content: 'done in the background' } });
    const sdk = await client();
    const queued = await sdk.responses.create({ model: 'gatehouse', input: 'take your time', background: true });
    expect(['queued', 'in_progress']).toContain(queued.status);
    expect(queued.background).toBe(true);
    expect(queued.output).toEqual([]);
    await vi.waitFor(async () => expect((await sdk.responses.retrieve(queued.id)).status).toBe('in_progress'));
    gate.resolve();
    const done = await vi.waitFor(
      async () => {
        const polled = await sdk.responses.retrieve(queued.id);
        expect(polled.status).toBe('completed');
        return polled;
      },
      { timeout: 5_000, interval: 20 },
    );
    expect(done.output_text).toBe('done in the background');
  });

  it('background with stream: the events of the queued response through to response.completed', async () => {
    const stream = (await client()).responses.stream({ model: 'gatehouse', input: 'both at once', background: true });
    const final = await stream.finalResponse();
    expect(final.status).toBe('completed');
    expect(final.output_text).toBe('fake: both at once');
  });

  it('cancel: interrupts a running background response, which then reads cancelled', async () => {
    const gate = deferred();
    t.fake.enqueue({ after: gate.promise, then: { content: 'too late' } });
    const sdk = await client();
    const before = chatRequests(t.fake).length;
    const started = await sdk.responses.create({ model: 'gatehouse', input: 'a long job', background: true });
    await vi.waitFor(() => expect(chatRequests(t.fake).length).toBe(before + 1));
    const cancelled = await sdk.responses.cancel(started.id);
    expect(cancelled).toMatchObject({ id: started.id, status: 'cancelled' });
    expect((await sdk.responses.retrieve(started.id)).status).toBe('cancelled');
    expect(await t.internals.messages.turn(eventOf(started.id))).toMatchObject({
      status: 'interrupted',
      terminationReason: 'cancelled',
    });
    gate.resolve();
    // A finished response is answered as it is.
    expect((await sdk.responses.cancel(started.id)).status).toBe('cancelled');
  });

  it('cancel: a queued response (behind another turn of its conversation) is stopped when it would start', async () => {
    const gate = deferred();
    t.fake.enqueue({ after: gate.promise, then: { content: 'first done' } });
    const sdk = await client();
    const first = await sdk.responses.create({ model: 'gatehouse', input: 'first', background: true });
    const second = await sdk.responses.create({
      model: 'gatehouse',
      input: 'second',
      background: true,
      previous_response_id: first.id,
    });
    expect(second.status).toBe('queued');
    const cancelling = sdk.responses.cancel(second.id);
    gate.resolve();
    expect((await cancelling).status).toBe('cancelled');
    expect(await t.internals.messages.turn(eventOf(second.id))).toMatchObject({
      status: 'interrupted',
      terminationReason: 'cancelled',
    });
    await vi.waitFor(async () => expect((await sdk.responses.retrieve(first.id)).status).toBe('completed'));
  });

  it('previous_response_id continues the conversation: the second turn sees the first', async () => {
    const sdk = await client();
    const first = await sdk.responses.create({ model: 'gatehouse', input: 'my name is Ada' });
    const before = chatRequests(t.fake).length;
    const second = await sdk.responses.create({
      model: 'gatehouse',
      input: 'what is my name?',
      previous_response_id: first.id,
    });
    expect(second.previous_response_id).toBe(first.id);
    const sent = chatRequests(t.fake, before)[0]!.messages!.map((m) => contentText(m.content));
    expect(sent).toContain('my name is Ada');
    expect(sent).toContain('fake: my name is Ada');
    expect(sent.at(-1)).toBe('what is my name?');
    const [a, b] = await Promise.all([first, second].map((r) => t.internals.messages.turn(eventOf(r.id))));
    expect(b!.sessionKey).toBe(a!.sessionKey);
  });

  it('a tool call inside the agent: function_call and function_call_output items before the message', async () => {
    t.fake.enqueue({ tool_calls: [{ name: 'lookup', arguments: { value: 'x7' } }] }, { content: 'Found it.' });
    const answer = await (await client()).responses.create({ model: 'gatehouse', input: 'look x7 up' });
    expect(answer.output.map((item) => item.type)).toEqual(['function_call', 'function_call_output', 'message']);
    const [call, output] = answer.output as [
      OpenAI.Responses.ResponseFunctionToolCall,
      OpenAI.Responses.ResponseFunctionToolCallOutputItem,
    ];
    expect(call).toMatchObject({ name: 'lookup', status: 'completed' });
    expect(JSON.parse(call.arguments)).toEqual({ value: 'x7' });
    expect(output.call_id).toBe(call.call_id);
    expect(output.output).toContain('record x7');
    expect(answer.output_text).toBe('Found it.');

    // Streamed, the tool call and its result arrive as items as they happen.
    t.fake.enqueue({ tool_calls: [{ name: 'lookup', arguments: { value: 'y8' } }] }, { content: 'Found that too.' });
    const stream = (await client()).responses.stream({ model: 'gatehouse', input: 'look y8 up' });
    const added: string[] = [];
    stream.on('response.output_item.added', (event) => added.push(event.item.type));
    const final = await stream.finalResponse();
    expect(added).toEqual(['function_call', 'function_call_output', 'message']);
    expect(final.output_text).toBe('Found that too.');
  });

  it('Idempotency-Key: a retry answers the same response with no second model call; another body is 409', async () => {
    const sdk = await client();
    const before = chatRequests(t.fake).length;
    const body = { model: 'gatehouse', input: 'only once' };
    // The SDK's `idempotencyKey` option sends nothing for OpenAI's client (it names no idempotency header): the header.
    const keyed = { headers: { 'Idempotency-Key': 'resp-key-1' } };
    const first = await sdk.responses.create(body, keyed);
    const again = await sdk.responses.create(body, keyed);
    expect(again.id).toBe(first.id);
    expect(again.output_text).toBe(first.output_text);
    expect(chatRequests(t.fake, before)).toHaveLength(1);
    const conflict = await sdk.responses
      .create({ model: 'gatehouse', input: 'something else' }, keyed)
      .catch((err: unknown) => err);
    expect(conflict).toBeInstanceOf(OpenAI.ConflictError);
    expect((conflict as InstanceType<typeof OpenAI.ConflictError>).error).toMatchObject({
      type: 'invalid_request_error',
      code: 'conflict',
    });
    expect(chatRequests(t.fake, before)).toHaveLength(1);
  });

  it('a failed turn is a response with status failed and its error (streamed: response.failed)', async () => {
    t.fake.enqueue({ status: 500, body: { error: { message: 'billing account acct_991 is suspended' } } });
    const sdk = await client();
    const failed = await sdk.responses.create({ model: 'gatehouse', input: 'boom' });
    expect(failed.status).toBe('failed');
    expect(failed.error).toEqual({ code: 'server_error', message: 'model provider failed: openai: HTTP 500' });
    expect(failed.output).toEqual([]);
    expect((await sdk.responses.retrieve(failed.id)).status).toBe('failed');

    t.fake.enqueue({ status: 500 });
    const stream = await sdk.responses.create({ model: 'gatehouse', input: 'boom again', stream: true });
    const types: string[] = [];
    for await (const event of stream) types.push(event.type);
    expect(types).toEqual(['response.created', 'response.in_progress', 'response.failed']);
  });

  it("another principal's response id is 404: retrieve, cancel and previous_response_id", async () => {
    const mine = await (await client()).responses.create({ model: 'gatehouse', input: 'alice only' });
    const bob = await client(BOB_TOKEN);
    const before = chatRequests(t.fake).length;
    await expect(bob.responses.retrieve(mine.id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    await expect(bob.responses.cancel(mine.id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    await expect(
      bob.responses.create({ model: 'gatehouse', input: 'continue hers', previous_response_id: mine.id }),
    ).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    await expect(bob.responses.retrieve('resp_evt_unknown')).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    await expect(bob.responses.retrieve('not-a-response')).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    expect(chatRequests(t.fake, before)).toHaveLength(0);
    // The owner reads it.
    expect((await (await client()).responses.retrieve(mine.id)).output_text).toBe('fake: alice only');
  });

  it("a malformed request is BadRequestError with OpenAI's error body; an unknown model is model_not_found", async () => {
    const sdk = await client();
    const before = chatRequests(t.fake).length;
    const empty = await sdk.responses.create({ model: 'gatehouse', input: [] }).catch((err: unknown) => err);
    expect(empty).toBeInstanceOf(OpenAI.BadRequestError);
    const error = (empty as InstanceType<typeof OpenAI.BadRequestError>).error as Record<string, unknown>;
    expect(error).toMatchObject({ type: 'invalid_request_error', param: null });
    expect(String(error.message)).toContain('input');
    const lastAssistant = await sdk.responses
      .create({ model: 'gatehouse', input: [{ role: 'assistant', content: 'not a question' }] })
      .catch((err: unknown) => err);
    expect(lastAssistant).toBeInstanceOf(OpenAI.BadRequestError);
    const unknown = await sdk.responses.create({ model: 'gpt-4o', input: 'hi' }).catch((err: unknown) => err);
    expect(unknown).toBeInstanceOf(OpenAI.NotFoundError);
    expect((unknown as InstanceType<typeof OpenAI.NotFoundError>).code).toBe('model_not_found');
    expect(chatRequests(t.fake, before)).toHaveLength(0);
  });
});
