import { createServer } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { echoAnthropicReply, startFakeAnthropic, type FakeAnthropic } from '../../../test/helpers/fake-anthropic.js';
import { toAnthropicMessages } from './anthropic-provider.js';
import { createProvider, ProviderError, type ChatMessage, type ProviderConfig, type ToolSpec } from './provider.js';

const KEY = 'sk-ant-test-SECRETKEY-0123456789';

const LOOKUP: ToolSpec = {
  name: 'memory_search',
  description: 'Search memory',
  parameters: { type: 'object', properties: { query: { type: 'string' } }, required: ['query'] },
};

let fake: FakeAnthropic;

beforeAll(async () => {
  fake = await startFakeAnthropic();
});
afterAll(async () => {
  await fake.close();
});
beforeEach(() => {
  fake.requests.length = 0;
});

function config(overrides: Partial<ProviderConfig> = {}): ProviderConfig {
  return {
    type: 'anthropic',
    base_url: fake.url,
    api_key: KEY,
    model: 'claude-haiku-4-5',
    timeout_seconds: 5,
    pricing: {},
    ...overrides,
  };
}

async function failure(promise: Promise<unknown>): Promise<ProviderError> {
  const err = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ProviderError);
  return err as ProviderError;
}

describe('anthropic provider: happy paths', () => {
  it('streams text, maps usage and puts the system prompt in `system`', async () => {
    fake.enqueue({ content: 'Bonjour tout le monde', chunks: 3, usage: { input_tokens: 21, output_tokens: 9 } });
    const provider = createProvider(config());
    const deltas: string[] = [];
    const res = await provider.complete({
      messages: [
        { role: 'system', content: 'You are terse.' },
        { role: 'user', content: 'Say hi in French' },
      ],
      tools: [LOOKUP],
      onDelta: (d) => deltas.push(d),
    });

    expect(deltas).toEqual(['Bonjour', ' tout l', 'e monde']);
    expect(res).toEqual({
      content: 'Bonjour tout le monde',
      tool_calls: [],
      usage: { input_tokens: 21, output_tokens: 9 },
      model: 'claude-haiku-4-5',
      finish_reason: 'stop',
    });
    expect(provider.type).toBe('anthropic');

    const req = fake.requests[0]!;
    expect(req.path).toBe('/v1/messages');
    expect(JSON.stringify(req.headers)).toContain(KEY);
    expect(req.body).toEqual({
      model: 'claude-haiku-4-5',
      max_tokens: 4096,
      stream: true,
      system: 'You are terse.',
      messages: [{ role: 'user', content: [{ type: 'text', text: 'Say hi in French' }] }],
      tools: [{ name: 'memory_search', description: 'Search memory', input_schema: LOOKUP.parameters }],
    });
  });

  it('defaults the model and omits system and tools when absent', async () => {
    fake.enqueue(echoAnthropicReply);
    const provider = createProvider(config({ model: null }));
    expect(provider.model).toBe('claude-sonnet-4-6');
    const res = await provider.complete({ messages: [{ role: 'user', content: 'ping' }], tools: [] });
    expect(res.content).toBe('fake: ping');
    const body = fake.requests[0]!.body;
    expect(body.model).toBe('claude-sonnet-4-6');
    expect('system' in body).toBe(false);
    expect('tools' in body).toBe(false);
  });

  it('turns tool_use blocks into tool calls with JSON arguments', async () => {
    fake.enqueue({
      content: 'Searching.',
      tool_calls: [
        { name: 'memory_search', arguments: { query: 'cats "and" dogs', limit: 3 }, id: 'toolu_1' },
        { name: 'memory_search', arguments: {}, id: 'toolu_2' },
      ],
      usage: { input_tokens: 50, output_tokens: 40 },
    });
    const res = await createProvider(config()).complete({
      messages: [{ role: 'user', content: 'q' }],
      tools: [LOOKUP],
    });
    expect(res).toEqual({
      content: 'Searching.',
      tool_calls: [
        { id: 'toolu_1', name: 'memory_search', arguments: '{"query":"cats \\"and\\" dogs","limit":3}' },
        { id: 'toolu_2', name: 'memory_search', arguments: '{}' },
      ],
      usage: { input_tokens: 50, output_tokens: 40 },
      model: 'claude-haiku-4-5',
      finish_reason: 'tool_calls',
    });
  });

  it('maps history: tool_use blocks, merged tool_result blocks, alternating roles', async () => {
    fake.enqueue(echoAnthropicReply);
    const history: ChatMessage[] = [
      { role: 'system', content: 'sys' },
      { role: 'user', content: 'find cats and dogs' },
      {
        role: 'assistant',
        content: 'Looking.',
        tool_calls: [
          { id: 'toolu_a', name: 'memory_search', arguments: '{"query":"cats"}' },
          { id: 'toolu_b', name: 'memory_search', arguments: '{"query":"dogs"}' },
        ],
      },
      { role: 'tool', tool_call_id: 'toolu_a', name: 'memory_search', content: 'cat facts' },
      { role: 'tool', tool_call_id: 'toolu_b', name: 'memory_search', content: 'dog facts' },
      { role: 'assistant', content: 'Done.' },
      { role: 'user', content: 'thanks' },
    ];
    await createProvider(config()).complete({ messages: history, tools: [LOOKUP] });

    const body = fake.requests[0]!.body;
    expect(body.system).toBe('sys');
    expect(body.messages).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'find cats and dogs' }] },
      {
        role: 'assistant',
        content: [
          { type: 'text', text: 'Looking.' },
          { type: 'tool_use', id: 'toolu_a', name: 'memory_search', input: { query: 'cats' } },
          { type: 'tool_use', id: 'toolu_b', name: 'memory_search', input: { query: 'dogs' } },
        ],
      },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'toolu_a', content: 'cat facts' },
          { type: 'tool_result', tool_use_id: 'toolu_b', content: 'dog facts' },
        ],
      },
      { role: 'assistant', content: [{ type: 'text', text: 'Done.' }] },
      { role: 'user', content: [{ type: 'text', text: 'thanks' }] },
    ]);
  });

  it('merges a user message that follows tool results and drops empty assistant text', () => {
    const { system, messages } = toAnthropicMessages([
      { role: 'user', content: 'a' },
      { role: 'assistant', content: '', tool_calls: [{ id: 't1', name: 'n', arguments: 'not json' }] },
      { role: 'tool', tool_call_id: 't1', name: 'n', content: 'r' },
      { role: 'user', content: 'b' },
    ]);
    expect(system).toBeNull();
    expect(messages).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'a' }] },
      { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'n', input: {} }] },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 't1', content: 'r' },
          { type: 'text', text: 'b' },
        ],
      },
    ]);
  });
});

describe('anthropic provider: failures', () => {
  it('maps an HTTP error to kind http with the status, never leaking the api key', async () => {
    fake.enqueue({
      status: 529,
      body: { type: 'error', error: { type: 'overloaded_error', message: `busy, key ${KEY}` } },
    });
    const err = await failure(
      createProvider(config()).complete({ messages: [{ role: 'user', content: 'x' }], tools: [] }),
    );
    expect(err).toMatchObject({ kind: 'http', status: 529 });
    expect(err.message).toBe('anthropic: HTTP 529'); // the upstream's text is the log's, not the client's
    expect(err.logText).toContain('busy');
    for (const text of [err.message, err.logText]) {
      expect(text).not.toContain(KEY);
      expect(text).not.toContain('SECRETKEY');
    }
    expect(fake.requests).toHaveLength(1);
  });

  it('maps a refused connection to kind network', async () => {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as { port: number };
    await new Promise<void>((resolve) => server.close(() => resolve()));
    const err = await failure(
      createProvider(config({ base_url: `http://127.0.0.1:${port}` })).complete({
        messages: [{ role: 'user', content: 'x' }],
        tools: [],
      }),
    );
    expect(err.kind).toBe('network');
  });

  it('aborts a pending call when the signal fires', async () => {
    const controller = new AbortController();
    fake.enqueue(() => {
      controller.abort();
      return { hang: true };
    });
    const err = await failure(
      createProvider(config()).complete({
        messages: [{ role: 'user', content: 'x' }],
        tools: [],
        signal: controller.signal,
      }),
    );
    expect(err.kind).toBe('aborted');
  });

  it('maps an error event inside the stream to kind http', async () => {
    fake.enqueue({
      raw:
        'event: message_start\ndata: {"type":"message_start","message":{"id":"m","model":"x","usage":{"input_tokens":1,"output_tokens":1}}}\n\n' +
        'event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}\n\n',
    });
    const err = await failure(
      createProvider(config()).complete({ messages: [{ role: 'user', content: 'x' }], tools: [] }),
    );
    expect(err.kind).toBe('http');
    expect(err.message).toBe('anthropic: error in stream');
    expect(err.logText).toContain('Overloaded');
  });

  it('rejects a stream that ends before message_stop', async () => {
    fake.enqueue({
      raw:
        'event: message_start\ndata: {"type":"message_start","message":{"id":"m","model":"x","usage":{"input_tokens":1,"output_tokens":1}}}\n\n' +
        'event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}\n\n' +
        'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"cut"}}\n\n',
    });
    const err = await failure(
      createProvider(config()).complete({ messages: [{ role: 'user', content: 'x' }], tools: [] }),
    );
    expect(err.kind).toBe('invalid_response');
  });

  it('maps invalid JSON in the stream to invalid_response', async () => {
    fake.enqueue({ raw: 'event: message_start\ndata: {"type":"message_start",\n\n' });
    const err = await failure(
      createProvider(config()).complete({ messages: [{ role: 'user', content: 'x' }], tools: [] }),
    );
    expect(err.kind).toBe('invalid_response');
  });
});
