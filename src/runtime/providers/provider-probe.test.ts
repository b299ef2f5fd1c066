import { createServer as createHttpServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { createServer } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeOpenAI, type FakeOpenAI } from '../../../test/helpers/fake-openai.js';
import { createProvider, ProviderError, type ProviderConfig } from './provider.js';
import { createModelsProbe } from './provider-probe.js';

const KEY = 'sk-test-SECRETKEY-0123456789abcdef';

function config(overrides: Partial<ProviderConfig>): ProviderConfig {
  return {
    type: 'openai',
    base_url: null,
    api_key: KEY,
    model: 'gpt-4o-mini',
    timeout_seconds: 5,
    pricing: {},
    ...overrides,
  };
}

/** A loopback port with nothing listening on it. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
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

/** A server answering every request with the next scripted status and body, recording path and headers. */
interface Scripted {
  url: string;
  seen: Array<{ path: string; headers: IncomingHttpHeaders }>;
  answer: { status: number; body: unknown };
  server: Server;
}

async function scriptedServer(): Promise<Scripted> {
  const state = { seen: [], answer: { status: 200, body: { data: [] } } } as unknown as Scripted;
  state.server = createHttpServer((req, res) => {
    state.seen.push({ path: req.url ?? '', headers: req.headers });
    res.writeHead(state.answer.status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(state.answer.body));
  });
  await new Promise<void>((resolve) => state.server.listen(0, '127.0.0.1', resolve));
  state.url = `http://127.0.0.1:${(state.server.address() as { port: number }).port}`;
  return state;
}

let fake: FakeOpenAI;
let scripted: Scripted;

beforeAll(async () => {
  fake = await startFakeOpenAI();
  scripted = await scriptedServer();
});
afterAll(async () => {
  await fake.close();
  await new Promise<void>((resolve) => scripted.server.close(() => resolve()));
});

describe('the models probe', () => {
  it('echo has none; the echo provider is always reachable', async () => {
    expect(createModelsProbe(config({ type: 'echo' }))).toBeNull();
    await expect(createProvider(config({ type: 'echo' })).probe!(new AbortController().signal)).resolves.toBe(
      undefined,
    );
  });

  it('openai: GET {base_url}/models with the key as Bearer; no model call, no SDK needed', async () => {
    const provider = createProvider(config({ base_url: fake.url }));
    await provider.probe!(new AbortController().signal);
    expect(fake.requests.map((r) => `${r.method} ${r.path}`)).toEqual(['GET /v1/models']);
    expect(fake.requests[0]!.headers.authorization).toBe(`Bearer ${KEY}`);
  });

  it('anthropic: GET {base_url}/v1/models?limit=1 with x-api-key and anthropic-version', async () => {
    scripted.answer = { status: 200, body: { data: [] } };
    scripted.seen.length = 0;
    await createModelsProbe(config({ type: 'anthropic', base_url: `${scripted.url}/` }))!(new AbortController().signal);
    expect(scripted.seen).toHaveLength(1);
    expect(scripted.seen[0]!.path).toBe('/v1/models?limit=1');
    expect(scripted.seen[0]!.headers['x-api-key']).toBe(KEY);
    expect(scripted.seen[0]!.headers['anthropic-version']).toBe('2023-06-01');
    expect(scripted.seen[0]!.headers.authorization).toBeUndefined();
  });

  it('a closed port rejects as a network failure naming ECONNREFUSED', async () => {
    const port = await closedPort();
    const err = await failure(
      createModelsProbe(config({ base_url: `http://127.0.0.1:${port}/v1` }))!(new AbortController().signal),
    );
    expect(err.kind).toBe('network');
    expect(err.code).toBe('ECONNREFUSED');
    expect(err.reason).toBe('ECONNREFUSED');
    expect(err.message).toBe('openai: cannot reach the server (ECONNREFUSED)');
  });

  it('401 names the status and the server message, with the key redacted', async () => {
    scripted.answer = { status: 401, body: { error: { message: `Incorrect API key provided: ${KEY}.` } } };
    const err = await failure(createModelsProbe(config({ base_url: scripted.url }))!(new AbortController().signal));
    expect(err.kind).toBe('http');
    expect(err.status).toBe(401);
    expect(err.reason).toBe('HTTP 401');
    expect(err.message).toBe('openai: HTTP 401');
    expect(err.logText).toMatch(/^openai: HTTP 401: Incorrect API key provided/);
    expect(err.logText).not.toContain(KEY);
    expect(err.logText).not.toContain('SECRETKEY');
  });

  it('5xx fails; 404 (no models list offered) counts as reachable', async () => {
    scripted.answer = { status: 503, body: 'overloaded' };
    expect(
      (await failure(createModelsProbe(config({ base_url: scripted.url }))!(new AbortController().signal))).logText,
    ).toBe('openai: HTTP 503: overloaded');
    scripted.answer = { status: 404, body: { error: { message: 'not found' } } };
    await createModelsProbe(config({ base_url: scripted.url }))!(new AbortController().signal);
  });

  it('an aborted probe rejects with kind aborted', async () => {
    const controller = new AbortController();
    controller.abort();
    const err = await failure(createModelsProbe(config({ base_url: fake.url }))!(controller.signal));
    expect(err.kind).toBe('aborted');
  });
});

describe('ProviderError.reason', () => {
  it('is the cause in a word, never server text', () => {
    expect(new ProviderError('x', 'network', undefined, 'ENOTFOUND').reason).toBe('ENOTFOUND');
    expect(new ProviderError('x', 'network').reason).toBe('network error');
    expect(new ProviderError('x: HTTP 429: slow down', 'http', 429).reason).toBe('HTTP 429');
    expect(new ProviderError('x', 'timeout').reason).toBe('timeout');
    expect(new ProviderError('x', 'invalid_response').reason).toBe('invalid response');
  });
});
