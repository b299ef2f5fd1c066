/**
 * The OpenAI-compatible API end to end (DECISIONS §13, ADR 0015): the
 * official `openai` SDK as the client of the built gateway process, which
 * talks to the fake OpenAI server in this process as its model provider.
 */
import OpenAI from 'openai';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { killAllNow } from '../../bench/processes.js';
import { chatRequests, echoReply, startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai.js';
import { API_TOKEN, call, e2eHome, removeE2EHomes, startGateway, type Running } from './helpers.js';

/** A client as users configure it: the gateway's `/v1` and an api token; no retries, so each call is one request. */
function client(url: string, apiKey = API_TOKEN): OpenAI {
  return new OpenAI({ baseURL: `${url}/v1`, apiKey, maxRetries: 0, timeout: 15_000 });
}

describe('the official openai SDK against a gateway process', () => {
  let fake: FakeOpenAI;
  let gateway: Running;

  beforeAll(async () => {
    fake = await startFakeOpenAI();
    fake.always(echoReply);
    gateway = await startGateway(
      e2eHome(fake, { security: { rate_limits: { read: 100_000, write: 100_000, analytics: 100, lifecycle: 100 } } }),
    );
  });
  afterAll(async () => {
    killAllNow();
    removeE2EHomes();
    await fake.close();
  });
  afterEach(() => fake.verify());

  it('lists the gatehouse model', async () => {
    const models = await client(gateway.url).models.list();
    expect(models.data.map((m) => m.id)).toEqual(['gatehouse']);
  });

  it('a plain completion', async () => {
    fake.enqueue({ content: 'plain answer', usage: { prompt_tokens: 9, completion_tokens: 2 } });
    const { data, response } = await client(gateway.url)
      .chat.completions.create({ model: 'gatehouse', messages: [{ role: 'user', content: 'say something' }] })
      .withResponse();
    const eventId = response.headers.get('x-gatehouse-event-id');
    expect(eventId).toMatch(/^evt_/);
    expect(data.id).toBe(`chatcmpl-${eventId}`);
    expect(data.model).toBe('gatehouse');
    expect(data.choices[0]!.message).toMatchObject({ role: 'assistant', content: 'plain answer' });
    expect(data.choices[0]!.finish_reason).toBe('stop');
    expect(data.usage).toMatchObject({ prompt_tokens: 9, completion_tokens: 2, total_tokens: 11 });
  });

  it('streaming: the deltas join to the reply and the usage arrives with include_usage', async () => {
    fake.enqueue({ content: 'streamed reply text', chunks: 4, usage: { prompt_tokens: 6, completion_tokens: 4 } });
    const stream = await client(gateway.url).chat.completions.create({
      model: 'gatehouse',
      messages: [{ role: 'user', content: 'stream please' }],
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = '';
    let finish: string | null = null;
    let usage: OpenAI.CompletionUsage | undefined;
    let first = true;
    for await (const chunk of stream) {
      if (first) expect(chunk.choices[0]?.delta.role).toBe('assistant');
      first = false;
      text += chunk.choices[0]?.delta.content ?? '';
      finish = chunk.choices[0]?.finish_reason ?? finish;
      if (chunk.usage) usage = chunk.usage;
    }
    expect(text).toBe('streamed reply text');
    expect(finish).toBe('stop');
    expect(usage).toMatchObject({ prompt_tokens: 6, completion_tokens: 4, total_tokens: 10 });
  });

  it('a tool call round trip inside the agent: the SDK sees only the final answer', async () => {
    const before = chatRequests(fake).length;
    fake.enqueue(
      { tool_calls: [{ id: 'call_mem', name: 'memory_save', arguments: { content: 'Ada prefers green tea' } }] },
      { content: 'Noted: green tea.' },
    );
    const completion = await client(gateway.url).chat.completions.create({
      model: 'gatehouse',
      user: 'ada',
      messages: [{ role: 'user', content: 'remember that I prefer green tea' }],
    });
    expect(completion.choices[0]!.message.content).toBe('Noted: green tea.');
    expect(completion.choices[0]!.message.tool_calls).toBeUndefined();
    const calls = chatRequests(fake, before);
    expect(calls).toHaveLength(2);
    expect(calls[1]!.messages?.find((m) => m.role === 'tool')).toMatchObject({ tool_call_id: 'call_mem' });
    const memory = await call<{ items: Array<{ content: string }> }>(gateway.url, 'GET', '/api/v1/memory', {
      token: API_TOKEN,
    });
    expect(memory.status).toBe(200);
    expect(memory.body.items.map((m) => m.content)).toContain('Ada prefers green tea');
  });

  it('a keyed retry answers the same completion with one provider call', async () => {
    const before = chatRequests(fake).length;
    fake.enqueue({ content: 'answered once' });
    const sdk = client(gateway.url);
    const ask = () =>
      sdk.chat.completions.create(
        { model: 'gatehouse', messages: [{ role: 'user', content: 'keyed question' }] },
        { headers: { 'Idempotency-Key': 'sdk-key-1' } },
      );
    const first = await ask();
    const second = await ask();
    expect(second.id).toBe(first.id);
    expect(second.choices[0]!.message.content).toBe('answered once');
    expect(second).toEqual(first);
    expect(chatRequests(fake, before)).toHaveLength(1);
  });

  it('a bad token raises AuthenticationError', async () => {
    const error = await client(gateway.url, 'not-a-token')
      .chat.completions.create({ model: 'gatehouse', messages: [{ role: 'user', content: 'hi' }] })
      .catch((err: unknown) => err);
    expect(error).toBeInstanceOf(OpenAI.AuthenticationError);
    expect((error as InstanceType<typeof OpenAI.AuthenticationError>).status).toBe(401);
    expect((error as InstanceType<typeof OpenAI.AuthenticationError>).type).toBe('authentication_error');
  });

  it('an unknown model raises NotFoundError (model_not_found)', async () => {
    const error = await client(gateway.url)
      .chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] })
      .catch((err: unknown) => err);
    expect(error).toBeInstanceOf(OpenAI.NotFoundError);
    expect((error as InstanceType<typeof OpenAI.NotFoundError>).code).toBe('model_not_found');
  });
});

describe('rate limits through the SDK', () => {
  let fake: FakeOpenAI;

  beforeAll(async () => {
    fake = await startFakeOpenAI();
    fake.always(echoReply);
  });
  afterAll(async () => {
    killAllNow();
    removeE2EHomes();
    await fake.close();
  });

  it('over the write limit the SDK raises RateLimitError (maxRetries 0)', async () => {
    const gateway = await startGateway(
      e2eHome(fake, { security: { rate_limits: { read: 100, write: 1, analytics: 100, lifecycle: 100 } } }),
    );
    const sdk = client(gateway.url);
    const body = { model: 'gatehouse', messages: [{ role: 'user' as const, content: 'one' }] };
    expect((await sdk.chat.completions.create(body)).choices[0]!.message.content).toBe('fake: one');
    const error = await sdk.chat.completions.create(body).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(OpenAI.RateLimitError);
    const limited = error as InstanceType<typeof OpenAI.RateLimitError>;
    expect(limited.status).toBe(429);
    expect(Number(limited.headers?.get('retry-after'))).toBeGreaterThan(0);
    expect(chatRequests(fake)).toHaveLength(1);
  });
});

describe('agents and principals through the SDK (DECISIONS §17-18)', () => {
  const ALICE = 'alice-sdk-token-0123456789abcdef';
  const BOB = 'bob-sdk-token-0123456789abcdef';
  let fake: FakeOpenAI;
  let gateway: Running;

  beforeAll(async () => {
    fake = await startFakeOpenAI();
    fake.always(echoReply);
    gateway = await startGateway(
      e2eHome(fake, {
        gateway: {
          port: 0,
          auth: {
            api_tokens: [API_TOKEN],
            principals: [
              { id: 'alice', tokens: [ALICE], agents: ['main'] },
              { id: 'bob', tokens: [BOB] },
            ],
          },
        },
        agents: { main: {}, support: { system_prompt: 'You are the support agent.' } },
      }),
    );
  });
  afterAll(async () => {
    killAllNow();
    removeE2EHomes();
    await fake.close();
  });

  it("models.list is each principal's agents; gatehouse/<agent> runs that agent; another's is model_not_found", async () => {
    const ids = async (token: string) => (await client(gateway.url, token).models.list()).data.map((m) => m.id);
    expect(await ids(BOB)).toEqual(['gatehouse', 'gatehouse/main', 'gatehouse/support']);
    expect(await ids(ALICE)).toEqual(['gatehouse', 'gatehouse/main']);

    const from = fake.requests.length;
    const answer = await client(gateway.url, BOB).chat.completions.create({
      model: 'gatehouse/support',
      messages: [{ role: 'user', content: 'who are you?' }],
    });
    expect(answer.choices[0]!.message.content).toBe('fake: who are you?');
    expect(chatRequests(fake, from)[0]!.messages?.[0]).toMatchObject({ role: 'system' });
    expect(JSON.stringify(chatRequests(fake, from)[0]!.messages?.[0])).toContain('You are the support agent.');

    const error = await client(gateway.url, ALICE)
      .chat.completions.create({ model: 'gatehouse/support', messages: [{ role: 'user', content: 'let me in' }] })
      .catch((err: unknown) => err);
    expect(error).toBeInstanceOf(OpenAI.NotFoundError);
    expect((error as InstanceType<typeof OpenAI.NotFoundError>).code).toBe('model_not_found');
    expect(chatRequests(fake, from)).toHaveLength(1);
  });
});
