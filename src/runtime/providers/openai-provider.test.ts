import { createServer } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { echoReply, startFakeOpenAI, type FakeOpenAI } from '../../../test/helpers/fake-openai.js';
import { createProvider, ProviderError, type ChatMessage, type ProviderConfig, type ToolSpec } from './provider.js';

const KEY = 'sk-test-SECRETKEY-0123456789abcdef';

const WEATHER: ToolSpec = {
  name: 'get_weather',
  description: 'Current weather for a city',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};

let fake: FakeOpenAI;

beforeAll(async () => {
  fake = await startFakeOpenAI();
});
afterAll(async () => {
  await fake.close();
});
beforeEach(() => {
  fake.requests.length = 0;
});

function config(overrides: Partial<ProviderConfig> = {}): ProviderConfig {
  return {
    type: 'openai',
    base_url: fake.url,
    api_key: KEY,
    model: 'gpt-4o-mini',
    timeout_seconds: 5,
    pricing: {},
    ...overrides,
  };
}

/** Runs `promise`, expecting a ProviderError, and returns it. */
async function failure(promise: Promise<unknown>): Promise<ProviderError> {
  const err = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ProviderError);
  return err as ProviderError;
}

/** A loopback port with nothing listening on it. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe('openai provider: happy paths', () => {
  it('streams text deltas in order and maps usage and the request', async () => {
    fake.enqueue({ content: 'Hello there, world!', chunks: 4, usage: { prompt_tokens: 12, completion_tokens: 7 } });
    const provider = createProvider(config());
    const deltas: string[] = [];
    const messages: ChatMessage[] = [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'Say hello' },
    ];

    const res = await provider.complete({ messages, tools: [WEATHER], onDelta: (d) => deltas.push(d) });

    expect(deltas).toEqual(['Hello', ' ther', 'e, wo', 'rld!']);
    expect(res).toEqual({
      content: 'Hello there, world!',
      tool_calls: [],
      usage: { input_tokens: 12, output_tokens: 7 },
      model: 'gpt-4o-mini',
      finish_reason: 'stop',
    });
    expect(provider.type).toBe('openai');
    expect(provider.model).toBe('gpt-4o-mini');

    expect(fake.requests).toHaveLength(1);
    const req = fake.requests[0]!;
    expect(req.path).toBe('/v1/chat/completions');
    expect(req.headers.authorization).toBe(`Bearer ${KEY}`);
    expect(req.body).toEqual({
      model: 'gpt-4o-mini',
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Say hello' },
      ],
      stream: true,
      stream_options: { include_usage: true },
      tools: [{ type: 'function', function: WEATHER }],
    });
  });

  it('omits tools when there are none, defaults the model and sends a placeholder key', async () => {
    fake.enqueue(echoReply);
    const provider = createProvider(config({ model: null, api_key: null }));
    const res = await provider.complete({ messages: [{ role: 'user', content: 'ping' }], tools: [] });

    expect(provider.model).toBe('gpt-4o-mini');
    expect(res.content).toBe('fake: ping');
    expect(res.usage).toEqual({ input_tokens: 10, output_tokens: 5 });
    const body = fake.requests[0]!.body;
    expect(body.model).toBe('gpt-4o-mini');
    expect('tools' in body).toBe(false);
    expect(fake.requests[0]!.headers.authorization).toBe('Bearer not-needed');
  });

  it('assembles tool calls from deltas split across chunks', async () => {
    fake.enqueue({
      content: 'Let me check.',
      tool_calls: [
        { name: 'get_weather', arguments: { city: 'Paris', units: 'metric' }, id: 'call_a' },
        { name: 'get_weather', arguments: { city: 'Zürich, "CH"' }, id: 'call_b' },
      ],
      usage: { prompt_tokens: 30, completion_tokens: 20 },
    });
    const provider = createProvider(config());
    const res = await provider.complete({ messages: [{ role: 'user', content: 'weather?' }], tools: [WEATHER] });

    expect(res.finish_reason).toBe('tool_calls');
    expect(res.content).toBe('Let me check.');
    expect(res.tool_calls).toEqual([
      { id: 'call_a', name: 'get_weather', arguments: '{"city":"Paris","units":"metric"}' },
      { id: 'call_b', name: 'get_weather', arguments: '{"city":"Zürich, \\"CH\\""}' },
    ]);
    expect(JSON.parse(res.tool_calls[1]!.arguments)).toEqual({ city: 'Zürich, "CH"' });
    expect(res.usage).toEqual({ input_tokens: 30, output_tokens: 20 });
  });

  it('gives tool calls without text a null content', async () => {
    fake.enqueue({ tool_calls: [{ name: 'get_weather', arguments: {} }] });
    const res = await createProvider(config()).complete({
      messages: [{ role: 'user', content: 'x' }],
      tools: [WEATHER],
    });
    expect(res.content).toBeNull();
    expect(res.tool_calls).toHaveLength(1);
    expect(res.tool_calls[0]!.arguments).toBe('{}');
    expect(res.tool_calls[0]!.id).toMatch(/^call_/);
  });

  it('sends assistant tool calls and tool results back in the API shape', async () => {
    fake.enqueue(echoReply);
    const history: ChatMessage[] = [
      { role: 'system', content: 'sys' },
      { role: 'user', content: 'weather in Paris and Rome?' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'call_1', name: 'get_weather', arguments: '{"city":"Paris"}' },
          { id: 'call_2', name: 'get_weather', arguments: '{"city":"Rome"}' },
        ],
      },
      { role: 'tool', tool_call_id: 'call_1', name: 'get_weather', content: '{"temp":12}' },
      { role: 'tool', tool_call_id: 'call_2', name: 'get_weather', content: '{"temp":18}' },
      { role: 'assistant', content: 'Paris 12, Rome 18.' },
      { role: 'user', content: 'thanks' },
    ];
    await createProvider(config()).complete({ messages: history, tools: [WEATHER] });

    expect(fake.requests[0]!.body.messages).toEqual([
      { role: 'system', content: 'sys' },
      { role: 'user', content: 'weather in Paris and Rome?' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
          { id: 'call_2', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Rome"}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'call_1', content: '{"temp":12}' },
      { role: 'tool', tool_call_id: 'call_2', content: '{"temp":18}' },
      { role: 'assistant', content: 'Paris 12, Rome 18.' },
      { role: 'user', content: 'thanks' },
    ]);
  });

  it('reports zero usage when the server sends none', async () => {
    const chunk = (delta: object, finish: string | null = null): string =>
      `data: ${JSON.stringify({ id: 'x', object: 'chat.completion.chunk', created: 1, model: 'llama3', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
    fake.enqueue({ raw: chunk({ role: 'assistant', content: 'hi' }) + chunk({}, 'stop') + 'data: [DONE]\n\n' });
    const res = await createProvider(config({ model: 'llama3' })).complete({
      messages: [{ role: 'user', content: 'x' }],
      tools: [],
    });
    expect(res).toMatchObject({ content: 'hi', usage: { input_tokens: 0, output_tokens: 0 }, model: 'llama3' });
  });
});

describe('openai provider: failures', () => {
  it('maps HTTP 500 to kind http with the status, never leaking the api key', async () => {
    fake.enqueue({ status: 500, body: { error: { message: `upstream exploded (key ${KEY})`, type: 'server_error' } } });
    const err = await failure(
      createProvider(config()).complete({ messages: [{ role: 'user', content: 'x' }], tools: [] }),
    );
    expect(err.kind).toBe('http');
    expect(err.status).toBe(500);
    // The message is for clients: the provider and the status only. The upstream's text is the log's (`detail`).
    expect(err.message).toBe('openai: HTTP 500');
    expect(err.detail).toContain('upstream exploded');
    for (const text of [err.message, err.logText]) {
      expect(text).not.toContain(KEY);
      expect(text).not.toContain('SECRETKEY');
      expect(text.toLowerCase()).not.toContain('bearer');
    }
    expect(fake.requests).toHaveLength(1); // maxRetries 0: no hidden second call
  });

  it('scrubs credential-shaped text from a 401 body even when it is not the configured key', async () => {
    fake.enqueue({ status: 401, body: { error: { message: 'Incorrect API key provided: sk-proj-abcd****wxyz.' } } });
    const err = await failure(
      createProvider(config()).complete({ messages: [{ role: 'user', content: 'x' }], tools: [] }),
    );
    expect(err).toMatchObject({ kind: 'http', status: 401 });
    expect(err.logText).not.toContain('sk-proj');
  });

  it('maps a refused connection to kind network', async () => {
    const port = await closedPort();
    const provider = createProvider(config({ base_url: `http://127.0.0.1:${port}/v1` }));
    const err = await failure(provider.complete({ messages: [{ role: 'user', content: 'x' }], tools: [] }));
    expect(err.kind).toBe('network');
    expect(err.message).toContain('ECONNREFUSED');
    expect(err.reason).toBe('ECONNREFUSED');
    expect(err.message).not.toContain(KEY);
  });

  it('times out a server that never answers within timeout_seconds', async () => {
    fake.enqueue({ hang: true });
    const started = Date.now();
    const err = await failure(
      createProvider(config({ timeout_seconds: 1 })).complete({
        messages: [{ role: 'user', content: 'x' }],
        tools: [],
      }),
    );
    const elapsed = Date.now() - started;
    expect(err.kind).toBe('timeout');
    expect(elapsed).toBeGreaterThanOrEqual(900);
    expect(elapsed).toBeLessThan(2500);
  });

  it('times out a stream that stalls after its first deltas', async () => {
    fake.enqueue({ content: 'partial answer', chunks: 2, stall: true });
    const deltas: string[] = [];
    const started = Date.now();
    const err = await failure(
      createProvider(config({ timeout_seconds: 1 })).complete({
        messages: [{ role: 'user', content: 'x' }],
        tools: [],
        onDelta: (d) => deltas.push(d),
      }),
    );
    expect(err.kind).toBe('timeout');
    expect(deltas.join('')).toBe('partial answer');
    expect(Date.now() - started).toBeLessThan(2500);
  });

  it('aborts a pending call when the signal fires', async () => {
    const controller = new AbortController();
    fake.enqueue(() => {
      controller.abort(); // the request has reached the server
      return { hang: true };
    });
    const started = Date.now();
    const err = await failure(
      createProvider(config()).complete({
        messages: [{ role: 'user', content: 'x' }],
        tools: [],
        signal: controller.signal,
      }),
    );
    expect(err.kind).toBe('aborted');
    expect(Date.now() - started).toBeLessThan(1000);
  });

  it('aborts mid-stream', async () => {
    const controller = new AbortController();
    fake.enqueue({ content: 'one two three', chunks: 3, stall: true });
    const err = await failure(
      createProvider(config()).complete({
        messages: [{ role: 'user', content: 'x' }],
        tools: [],
        signal: controller.signal,
        onDelta: () => controller.abort(),
      }),
    );
    expect(err.kind).toBe('aborted');
  });

  it('does not call the server when the signal is already aborted', async () => {
    const err = await failure(
      createProvider(config()).complete({
        messages: [{ role: 'user', content: 'x' }],
        tools: [],
        signal: AbortSignal.abort(),
      }),
    );
    expect(err.kind).toBe('aborted');
    expect(fake.requests).toHaveLength(0);
  });

  it('maps invalid JSON in the stream to invalid_response', async () => {
    fake.enqueue({ raw: 'data: {"id": "x", "choices": [\n\n' });
    const err = await failure(
      createProvider(config()).complete({ messages: [{ role: 'user', content: 'x' }], tools: [] }),
    );
    expect(err.kind).toBe('invalid_response');
  });

  it('rejects a stream that ends before the model finished', async () => {
    fake.enqueue({
      raw: `data: ${JSON.stringify({ id: 'x', model: 'm', choices: [{ index: 0, delta: { content: 'cut' }, finish_reason: null }] })}\n\n`,
    });
    const err = await failure(
      createProvider(config()).complete({ messages: [{ role: 'user', content: 'x' }], tools: [] }),
    );
    expect(err.kind).toBe('invalid_response');
  });

  it('maps an error event inside the stream to kind http', async () => {
    fake.enqueue({
      raw: `data: ${JSON.stringify({ error: { message: 'model overloaded', type: 'server_error' } })}\n\n`,
    });
    const err = await failure(
      createProvider(config()).complete({ messages: [{ role: 'user', content: 'x' }], tools: [] }),
    );
    expect(err.kind).toBe('http');
    expect(err.message).toBe('openai: error in stream');
    expect(err.logText).toContain('model overloaded');
  });

  it('rethrows an exception from onDelta as is', async () => {
    fake.enqueue(echoReply);
    const boom = new Error('consumer failed');
    const err = await createProvider(config())
      .complete({
        messages: [{ role: 'user', content: 'x' }],
        tools: [],
        onDelta: () => {
          throw boom;
        },
      })
      .catch((e: unknown) => e);
    expect(err).toBe(boom);
  });
});
