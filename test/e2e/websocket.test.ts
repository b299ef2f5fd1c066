/**
 * The WebSocket channel over real sockets (DECISIONS §4, §6, §8): an
 * in-process gateway listening on an ephemeral loopback port, driven with
 * `ws` clients (and `fetch` for the HTTP side of cross-transport retries).
 */
import { describe, expect, it, vi } from 'vitest';
import { WebSocket } from 'ws';
import type { Gateway, GatewayInternals } from '../../src/gateway.js';
import type { AgentTool } from '../../src/runtime/tools.js';
import { useCleanups } from '../helpers/cleanups.js';
import { chatRequests, echoReply, type FakeOpenAI } from '../helpers/fake-openai.js';
import { ADMIN_TOKEN, API_TOKEN, useHarness } from '../helpers/harness.js';
/** Bound of every wait on a frame or a close, so a broken server fails the test instead of hanging it. */
const FRAME_TIMEOUT_MS = 5_000;

/** One server frame, loosely typed (tests inspect it). */
type Frame = Record<string, unknown> & { type: string };

// Each test opens its gateway with `start`; the fake answers only what the test scripts.
const rig = useHarness({ fake: true, autoOpen: false });
/** Clients to close after each test, before the hook above shuts the gateway down. */
const cleanup = useCleanups();

interface Running {
  gateway: Gateway;
  /** The gateway's internals (channels, message path, bus, audit log). */
  internals: GatewayInternals;
  /** `http://127.0.0.1:PORT` */
  url: string;
  /** `ws://127.0.0.1:PORT` */
  ws: string;
}

/** A listening gateway (api + admin tokens, roomy rate limits), on the fake provider when `fake` is given. */
async function start(
  options: { overrides?: Record<string, unknown>; fake?: FakeOpenAI; tools?: AgentTool[] } = {},
): Promise<Running> {
  const harness = await rig.open({
    config: { ...(options.fake ? { provider: { timeout_seconds: 10 } } : {}), ...options.overrides },
    ...(options.fake ? {} : { fake: undefined }),
    ...(options.tools ? { tools: options.tools } : {}),
  });
  const url = await harness.gateway.listen();
  return { gateway: harness.gateway, internals: harness.internals, url, ws: url.replace(/^http/, 'ws') };
}

/** The fake OpenAI server of this test (started by the hook; closed and checked after the test). */
async function fakeProvider(): Promise<FakeOpenAI> {
  return rig.fake;
}

/**
 * A test client: frames are queued as they arrive and taken in order with
 * `next()`; `closed` resolves with the close code and reason.
 */
class Client {
  private readonly frames: Frame[] = [];
  private readonly takers: Array<(frame: Frame) => void> = [];
  readonly closed: Promise<{ code: number; reason: string }>;

  constructor(readonly socket: WebSocket) {
    socket.on('message', (data: Buffer) => {
      const frame = JSON.parse(data.toString('utf8')) as Frame;
      const taker = this.takers.shift();
      if (taker) taker(frame);
      else this.frames.push(frame);
    });
    this.closed = new Promise((resolve) => {
      socket.once('close', (code: number, reason: Buffer) => resolve({ code, reason: reason.toString('utf8') }));
    });
  }

  /** Sends a frame (objects as JSON, strings as they are). */
  send(frame: unknown): void {
    this.socket.send(typeof frame === 'string' ? frame : JSON.stringify(frame));
  }

  /** The next frame, in arrival order. */
  next(): Promise<Frame> {
    const queued = this.frames.shift();
    if (queued) return Promise.resolve(queued);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        const index = this.takers.indexOf(take);
        if (index !== -1) this.takers.splice(index, 1);
        reject(new Error('no frame within the timeout'));
      }, FRAME_TIMEOUT_MS);
      const take = (frame: Frame): void => {
        clearTimeout(timer);
        resolve(frame);
      };
      this.takers.push(take);
    });
  }

  /** Frames up to and including the first one `last` accepts. */
  async until(last: (frame: Frame) => boolean): Promise<Frame[]> {
    const out: Frame[] = [];
    for (;;) {
      const frame = await this.next();
      out.push(frame);
      if (last(frame)) return out;
    }
  }

  /** Sends a frame and answers the next one. */
  async ask(frame: unknown): Promise<Frame> {
    this.send(frame);
    return this.next();
  }

  /** Resolves with the close code, bounded. */
  async closeCode(): Promise<number> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error('socket not closed within the timeout')), FRAME_TIMEOUT_MS);
    });
    try {
      return (await Promise.race([this.closed, timeout])).code;
    } finally {
      clearTimeout(timer);
    }
  }
}

/** Opens a client; closed (or cut off) after the test. */
async function connect(url: string, headers: Record<string, string> = {}): Promise<Client> {
  const socket = new WebSocket(url, { headers });
  const client = new Client(socket);
  cleanup(async () => {
    if (socket.readyState === WebSocket.CLOSED) return;
    socket.terminate();
    await client.closed;
  });
  await new Promise<void>((resolve, reject) => {
    socket.once('open', () => resolve());
    socket.once('error', reject);
  });
  return client;
}

/** Opens a client authenticated with `token` in the header; returns it after `auth_ok`. */
async function connectAuthed(
  running: Running,
  token = API_TOKEN,
  query = '',
): Promise<{ client: Client; authOk: Frame }> {
  const client = await connect(`${running.ws}/api/v1/ws${query}`, { 'x-api-token': token });
  const authOk = await client.next();
  expect(authOk).toEqual({ type: 'auth_ok', role: token === ADMIN_TOKEN ? 'admin' : 'api' });
  return { client, authOk };
}

/** Attempts an upgrade the server should refuse; answers the HTTP status and JSON body. */
async function refusedUpgrade(
  url: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: Record<string, unknown> }> {
  const socket = new WebSocket(url, { headers });
  return new Promise((resolve, reject) => {
    socket.once('open', () => {
      socket.terminate();
      reject(new Error('the upgrade was accepted'));
    });
    socket.once('error', () => undefined);
    socket.once('unexpected-response', (_req, res) => {
      const parts: Buffer[] = [];
      res.on('data', (part: Buffer) => parts.push(part));
      res.on('end', () => {
        const text = Buffer.concat(parts).toString('utf8');
        resolve({ status: res.statusCode ?? 0, body: (text ? JSON.parse(text) : {}) as Record<string, unknown> });
        socket.terminate();
      });
    });
  });
}

/** One JSON HTTP request against the gateway. */
async function http(
  running: Running,
  method: string,
  path: string,
  options: { token?: string; body?: unknown; headers?: Record<string, string> } = {},
): Promise<{ status: number; body: Record<string, unknown> }> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.token) headers['x-api-token'] = options.token;
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(`${running.url}${path}`, {
    method,
    headers,
    ...(options.body !== undefined ? { body: JSON.stringify(options.body) } : {}),
    signal: AbortSignal.timeout(FRAME_TIMEOUT_MS),
  });
  const text = await res.text();
  return { status: res.status, body: (text ? JSON.parse(text) : {}) as Record<string, unknown> };
}

const isEnd = (frame: Frame): boolean => frame.type === 'final' || frame.type === 'error';

describe('websocket: authentication', () => {
  it('accepts a token in the header with its full role', async () => {
    const running = await start();
    const { client } = await connectAuthed(running, ADMIN_TOKEN);
    expect(await client.ask({ type: 'ping' })).toEqual({ type: 'pong' });
    expect(running.internals.websocket.clientCount()).toBe(1);
  });

  it('accepts Authorization: Bearer and serves the /ws alias', async () => {
    const running = await start();
    const client = await connect(`${running.ws}/ws`, { authorization: `Bearer ${API_TOKEN}` });
    expect(await client.next()).toEqual({ type: 'auth_ok', role: 'api' });
  });

  it('?token= grants api rights at most, even for an admin token', async () => {
    const running = await start();
    const client = await connect(`${running.ws}/api/v1/ws?token=${ADMIN_TOKEN}`);
    expect(await client.next()).toEqual({ type: 'auth_ok', role: 'api' });
    const refused = await client.ask({ type: 'subscribe', topics: ['logs'] });
    expect(refused).toMatchObject({ type: 'error', error: { code: 'FORBIDDEN' } });
  });

  it('accepts a first {type: "auth"} frame with the full role', async () => {
    const running = await start();
    const client = await connect(`${running.ws}/api/v1/ws`);
    expect(await client.ask({ type: 'auth', token: ADMIN_TOKEN })).toEqual({ type: 'auth_ok', role: 'admin' });
    expect(await client.ask({ type: 'ping' })).toEqual({ type: 'pong' });
  });

  it('a bad token gets an UNAUTHORIZED error frame and close 4401, audited by fingerprint', async () => {
    const running = await start();
    const byFrame = await connect(`${running.ws}/api/v1/ws`);
    expect(await byFrame.ask({ type: 'auth', token: 'wrong-token' })).toMatchObject({
      type: 'error',
      error: { code: 'UNAUTHORIZED' },
    });
    expect(await byFrame.closeCode()).toBe(4401);

    const byHeader = await connect(`${running.ws}/api/v1/ws`, { 'x-api-token': 'wrong-token' });
    expect(await byHeader.next()).toMatchObject({ type: 'error', error: { code: 'UNAUTHORIZED' } });
    expect(await byHeader.closeCode()).toBe(4401);

    await running.internals.audit.flush();
    const { readFileSync } = await import('node:fs');
    const { auditLogPath } = await import('../../src/security/audit.js');
    const text = readFileSync(auditLogPath(running.gateway.config.data_dir), 'utf8');
    expect(text).not.toContain('wrong-token');
    const failures = text
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .filter((entry) => entry.event === 'auth_failure');
    expect(failures.length).toBeGreaterThanOrEqual(2);
    expect(failures[0]).toMatchObject({ user: expect.stringMatching(/^tok_[0-9a-f]{8}$/), path: '/api/v1/ws' });
  });

  it('a frame other than auth before authenticating is refused with 4401', async () => {
    const running = await start();
    const client = await connect(`${running.ws}/api/v1/ws`);
    expect(await client.ask({ type: 'ping' })).toMatchObject({ type: 'error', error: { code: 'UNAUTHORIZED' } });
    expect(await client.closeCode()).toBe(4401);
  });

  it('closes with 4401 when no auth arrives before the deadline', async () => {
    const running = await start();
    running.internals.websocket.tune({ authTimeoutMs: 50 });
    const client = await connect(`${running.ws}/api/v1/ws`);
    expect(await client.next()).toMatchObject({ type: 'error', error: { code: 'UNAUTHORIZED' } });
    expect(await client.closeCode()).toBe(4401);
    expect(running.internals.websocket.clientCount()).toBe(0);
  });

  it('profile minimal: auth_ok with role admin at once, no token needed', async () => {
    const running = await start({ overrides: { security: { profile: 'minimal' } } });
    const client = await connect(`${running.ws}/api/v1/ws`);
    expect(await client.next()).toEqual({ type: 'auth_ok', role: 'admin' });
  });

  it('refuses an identity the auth mode does not allow: FORBIDDEN and close 4403', async () => {
    const running = await start({
      overrides: { gateway: { auth: { mode: 'allowlist', allowed_users: ['ws:alice'], loopback_trust: false } } },
    });
    const refused = await connect(`${running.ws}/api/v1/ws?user_id=mallory`, { 'x-api-token': API_TOKEN });
    expect(await refused.next()).toMatchObject({ type: 'error', error: { code: 'FORBIDDEN' } });
    expect(await refused.closeCode()).toBe(4403);

    const allowed = await connect(`${running.ws}/api/v1/ws`);
    expect(await allowed.ask({ type: 'auth', token: API_TOKEN, user_id: 'alice' })).toEqual({
      type: 'auth_ok',
      role: 'api',
    });
  });
});

describe('websocket: browser rules on the upgrade', () => {
  it('refuses a cross-site Origin with 403 before upgrading; the own origin is fine', async () => {
    const running = await start();
    const refused = await refusedUpgrade(`${running.ws}/api/v1/ws`, {
      origin: 'https://evil.example',
      'x-api-token': API_TOKEN,
    });
    expect(refused.status).toBe(403);
    expect(refused.body).toMatchObject({ error: { code: 'FORBIDDEN', message: 'cross-site request forbidden' } });

    const own = await connect(`${running.ws}/api/v1/ws`, { origin: running.url, 'x-api-token': API_TOKEN });
    expect(await own.next()).toEqual({ type: 'auth_ok', role: 'api' });
  });

  it('keeps the Origin rule in the minimal profile (a WebSocket has no CORS to protect it)', async () => {
    const running = await start({ overrides: { security: { profile: 'minimal' } } });
    const refused = await refusedUpgrade(`${running.ws}/ws`, { origin: 'https://evil.example' });
    expect(refused.status).toBe(403);
    const own = await connect(`${running.ws}/ws`, { origin: running.url });
    expect(await own.next()).toEqual({ type: 'auth_ok', role: 'admin' });
  });

  it('answers a plain GET (no upgrade) with 400 in the error envelope', async () => {
    const running = await start();
    const res = await http(running, 'GET', '/api/v1/ws', { token: API_TOKEN });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ error: { code: 'BAD_REQUEST', message: 'WebSocket upgrade required' } });
  });

  it('checks the Host under profile extended', async () => {
    const running = await start({ overrides: { security: { profile: 'extended' } } });
    const refused = await refusedUpgrade(`${running.ws}/api/v1/ws`, { host: 'evil.example', 'x-api-token': API_TOKEN });
    expect(refused.status).toBe(403);
    expect(refused.body).toMatchObject({ error: { message: 'cross-site request forbidden' } });
  });
});

describe('websocket: chat', () => {
  it('streams accepted, the deltas in order, then final', async () => {
    const fake = await fakeProvider();
    fake.enqueue({ content: 'one two three four five', chunks: 5 });
    const running = await start({ fake });
    const { client } = await connectAuthed(running);
    client.send({ type: 'message', text: 'hello', ref: 'r1' });
    const frames = await client.until(isEnd);
    const accepted = frames[0]!;
    expect(accepted).toMatchObject({ type: 'accepted', ref: 'r1', session_key: expect.stringMatching(/^gateway:ws:/) });
    const eventId = accepted.event_id as string;
    const deltas = frames.filter((f) => f.type === 'delta');
    expect(deltas.length).toBe(5);
    expect(deltas.every((f) => f.event_id === eventId)).toBe(true);
    expect(deltas.map((f) => f.content).join('')).toBe('one two three four five');
    expect(frames.map((f) => f.type)).toEqual(['accepted', ...deltas.map(() => 'delta'), 'final']);
    expect(frames.at(-1)).toMatchObject({
      type: 'final',
      event_id: eventId,
      status: 'completed',
      message: { role: 'assistant', content: 'one two three four five', event_id: eventId },
    });
  });

  it('uses the handshake identity for the session key, and a gateway: session_key when given', async () => {
    const running = await start();
    const { client } = await connectAuthed(running, API_TOKEN, '?platform=web&user_id=u1&chat_id=c9');
    client.send({ type: 'message', text: 'hi' });
    const frames = await client.until(isEnd);
    expect(frames[0]).toMatchObject({ type: 'accepted', session_key: 'gateway:web:c9' });
    expect(frames.at(-1)).toMatchObject({ type: 'final', status: 'completed', message: { content: 'echo: hi' } });

    client.send({ type: 'message', text: 'there', session_key: 'gateway:api:custom' });
    const custom = await client.until(isEnd);
    expect(custom[0]).toMatchObject({ type: 'accepted', session_key: 'gateway:api:custom' });
  });

  it("takes `agent` for a new session, answers an unknown one with an error frame, and keys a principal's sessions", async () => {
    const alice = 'alice-token-0123456789abcdef';
    const running = await start({
      overrides: {
        agents: { main: {}, support: {} },
        gateway: { auth: { principals: [{ id: 'alice', tokens: [alice] }] } },
      },
    });
    const { client } = await connectAuthed(running, API_TOKEN, '?platform=web&user_id=u1&chat_id=ag');
    client.send({ type: 'message', text: 'hi', agent: 'support' });
    const frames = await client.until(isEnd);
    expect(frames[0]).toMatchObject({ type: 'accepted', session_key: 'gateway:web:ag' });
    const session = await http(running, 'GET', `/api/v1/sessions/${encodeURIComponent('gateway:web:ag')}`, {
      token: ADMIN_TOKEN,
    });
    expect(session.body).toMatchObject({ agent: 'support' });
    client.send({ type: 'message', text: 'hi', agent: 'ghost', session_key: 'gateway:web:other', ref: 'g' });
    expect(await client.next()).toMatchObject({ type: 'error', ref: 'g', error: { code: 'NOT_FOUND' } });

    const mine = await connect(`${running.ws}/api/v1/ws?platform=web&user_id=u1&chat_id=ag`, { 'x-api-token': alice });
    expect(await mine.next()).toMatchObject({ type: 'auth_ok', role: 'api' });
    mine.send({ type: 'message', text: 'mine' });
    const own = await mine.until(isEnd);
    expect(own[0]).toMatchObject({ type: 'accepted', session_key: 'gateway:web@alice:ag' });
  });

  it('sends tool_call and tool_result frames of an agent tool', async () => {
    const fake = await fakeProvider();
    const lookup: AgentTool = {
      spec: {
        name: 'lookup',
        description: 'looks a value up',
        parameters: { type: 'object', properties: { value: { type: 'string' } } },
      },
      run: async (args) => ({ found: `value of ${String(args.value)}` }),
    };
    fake.enqueue(
      { tool_calls: [{ id: 'call_1', name: 'lookup', arguments: { value: 'x' } }] },
      { content: 'x is found', chunks: 2 },
    );
    const running = await start({ fake, tools: [lookup] });
    const { client } = await connectAuthed(running);
    client.send({ type: 'message', text: 'look up x' });
    const frames = await client.until(isEnd);
    expect(frames.map((f) => f.type)).toEqual(['accepted', 'tool_call', 'tool_result', 'delta', 'delta', 'final']);
    const eventId = frames[0]!.event_id;
    expect(frames[1]).toEqual({
      type: 'tool_call',
      event_id: eventId,
      seq: expect.any(Number),
      id: 'call_1',
      name: 'lookup',
      arguments: '{"value":"x"}',
    });
    expect(frames[2]).toEqual({
      type: 'tool_result',
      event_id: eventId,
      seq: expect.any(Number),
      id: 'call_1',
      name: 'lookup',
      result: { found: 'value of x' },
    });
    expect(frames[5]).toMatchObject({ status: 'completed', message: { content: 'x is found' } });
  });

  it('answers a provider failure with an UPSTREAM_ERROR error frame carrying ref and event_id', async () => {
    const fake = await fakeProvider();
    fake.enqueue({ status: 400, body: { error: { message: 'bad', type: 'invalid_request_error' } } });
    const running = await start({ fake });
    const { client } = await connectAuthed(running);
    client.send({ type: 'message', text: 'fail please', ref: 7 });
    const frames = await client.until(isEnd);
    expect(frames.at(-1)).toMatchObject({
      type: 'error',
      ref: 7,
      event_id: frames[0]!.event_id,
      error: { code: 'UPSTREAM_ERROR' },
    });
  });

  it('rejects malformed frames with BAD_REQUEST and keeps the connection', async () => {
    const running = await start();
    const { client } = await connectAuthed(running);
    for (const bad of ['not json', '[1,2]', JSON.stringify({ type: 'dance' }), JSON.stringify({ type: 'message' })]) {
      expect(await client.ask(bad)).toMatchObject({ type: 'error', error: { code: 'BAD_REQUEST' } });
    }
    expect(await client.ask({ type: 'message', text: 'x', session_key: 'other:1', ref: 'k' })).toMatchObject({
      type: 'error',
      ref: 'k',
      error: { code: 'BAD_REQUEST' },
    });
    expect(await client.ask({ type: 'message', text: 'x', idempotency_key: '   ' })).toMatchObject({
      type: 'error',
      error: { code: 'BAD_REQUEST' },
    });
    expect(await client.ask({ type: 'message', text: 'x', idempotency_key: 'a'.repeat(201) })).toMatchObject({
      type: 'error',
      error: { code: 'BAD_REQUEST' },
    });
    expect(await client.ask({ type: 'ping' })).toEqual({ type: 'pong' });
  });

  it('counts message frames against the write rate group: RATE_LIMITED', async () => {
    const running = await start({
      overrides: { security: { rate_limits: { read: 1000, write: 1, analytics: 10, lifecycle: 5 } } },
    });
    const { client } = await connectAuthed(running);
    client.send({ type: 'message', text: 'first' });
    await client.until(isEnd);
    // Windows are fixed minutes (DECISIONS): when the first two messages straddle a window's edge the second
    // is taken, and then the third, in the same window as the second, is the one refused.
    let ref = 2;
    let answer = await client.ask({ type: 'message', text: 'second', ref });
    if (answer.type === 'accepted') {
      await client.until(isEnd);
      answer = await client.ask({ type: 'message', text: 'third', ref: ++ref });
    }
    expect(answer).toMatchObject({ type: 'error', ref, error: { code: 'RATE_LIMITED' } });
  });
});

describe('websocket: idempotent retries across transports', () => {
  const identity = { platform: 'ws', user_id: 'u1', chat_id: 'c1' };
  const query = '?user_id=u1&chat_id=c1';

  it('replays over WS a key first used over HTTP: same event_id, the final result, one provider call', async () => {
    const fake = await fakeProvider();
    fake.enqueue(echoReply);
    const running = await start({ fake });
    const original = await http(running, 'POST', '/api/v1/message', {
      token: API_TOKEN,
      headers: { 'idempotency-key': 'k-http-first' },
      body: { ...identity, text: 'hello', wait: true },
    });
    expect(original.status).toBe(200);
    const { client } = await connectAuthed(running, API_TOKEN, query);
    client.send({ type: 'message', text: 'hello', idempotency_key: 'k-http-first', ref: 'retry' });
    const frames = await client.until(isEnd);
    expect(frames[0]).toEqual({
      type: 'accepted',
      ref: 'retry',
      event_id: original.body.event_id,
      session_key: 'gateway:ws:c1',
    });
    expect(frames.at(-1)).toMatchObject({
      type: 'final',
      event_id: original.body.event_id,
      status: 'completed',
      message: { content: 'fake: hello' },
    });
    expect(chatRequests(fake)).toHaveLength(1);
  });

  it('replays over HTTP a key first used over WS', async () => {
    const fake = await fakeProvider();
    fake.enqueue(echoReply);
    const running = await start({ fake });
    const { client } = await connectAuthed(running, API_TOKEN, query);
    client.send({ type: 'message', text: 'hello', idempotency_key: 'k-ws-first' });
    const frames = await client.until(isEnd);
    const retry = await http(running, 'POST', '/api/v1/message', {
      token: API_TOKEN,
      headers: { 'idempotency-key': 'k-ws-first' },
      body: { ...identity, text: 'hello' },
    });
    expect(retry.status).toBe(200);
    expect(retry.body).toMatchObject({ event_id: frames[0]!.event_id, status: 'completed', response: 'fake: hello' });
    expect(chatRequests(fake)).toHaveLength(1);
  });

  it('answers changed content under a used key with a CONFLICT error frame', async () => {
    const running = await start();
    const { client } = await connectAuthed(running, API_TOKEN, query);
    client.send({ type: 'message', text: 'original', idempotency_key: 'k-conflict' });
    await client.until(isEnd);
    expect(
      await client.ask({ type: 'message', text: 'changed', idempotency_key: 'k-conflict', ref: 'c' }),
    ).toMatchObject({ type: 'error', ref: 'c', error: { code: 'CONFLICT' } });
    const http409 = await http(running, 'POST', '/api/v1/message', {
      token: API_TOKEN,
      headers: { 'idempotency-key': 'k-conflict' },
      body: { ...identity, text: 'changed again' },
    });
    expect(http409.status).toBe(409);
  });
});

describe('websocket: interrupt', () => {
  it('interrupts a running turn: final status interrupted, ledger interrupted', async () => {
    const fake = await fakeProvider();
    fake.enqueue({ hang: true });
    const running = await start({ fake });
    const { client } = await connectAuthed(running);
    expect(await client.ask({ type: 'subscribe', topics: ['turns'] })).toEqual({
      type: 'subscribed',
      topics: ['turns'],
    });
    client.send({ type: 'message', text: 'take your time' });
    const accepted = await client.next();
    expect(accepted.type).toBe('accepted');
    const eventId = accepted.event_id as string;
    // The live feed tells when the turn runs.
    await client.until(
      (f) =>
        f.type === 'event' &&
        f.event === 'status' &&
        (f.data as Record<string, unknown>).event_id === eventId &&
        (f.data as Record<string, unknown>).status === 'running',
    );
    client.send({ type: 'interrupt', event_id: eventId });
    const frames = await client.until((f) => f.type === 'final' || (f.type === 'error' && f.event_id === eventId));
    expect(frames.at(-1)).toMatchObject({ type: 'final', event_id: eventId, status: 'interrupted' });
    const turn = await http(running, 'GET', `/api/v1/turns/${eventId}`, { token: ADMIN_TOKEN });
    expect(turn.body).toMatchObject({ status: 'interrupted', termination_reason: 'interrupted' });
  });

  it('an unknown or finished turn is NOT_FOUND', async () => {
    const running = await start();
    const { client } = await connectAuthed(running, ADMIN_TOKEN);
    expect(await client.ask({ type: 'interrupt', event_id: 'evt_nope' })).toMatchObject({
      type: 'error',
      event_id: 'evt_nope',
      error: { code: 'NOT_FOUND' },
    });
  });
});

describe('websocket: live feed', () => {
  it('subscribe to turns receives the events of a turn submitted over HTTP', async () => {
    const running = await start();
    const { client } = await connectAuthed(running);
    expect(await client.ask({ type: 'subscribe', topics: ['turns', 'turns'] })).toEqual({
      type: 'subscribed',
      topics: ['turns'],
    });
    const answer = await http(running, 'POST', '/api/v1/message', {
      token: API_TOKEN,
      body: { platform: 'api', user_id: 'u', chat_id: 'c', text: 'over http', wait: true },
    });
    expect(answer.status).toBe(200);
    const frames = await client.until((f) => f.type === 'event' && f.event === 'done');
    for (const frame of frames) {
      expect(frame).toMatchObject({ type: 'event', topic: 'turns', data: { event_id: answer.body.event_id } });
    }
    expect(frames.some((f) => f.event === 'delta')).toBe(true);

    expect(await client.ask({ type: 'unsubscribe', topics: ['turns'] })).toEqual({
      type: 'unsubscribed',
      topics: ['turns'],
    });
  });

  it("a principal's live feed never carries another principal's turns (DECISIONS §18)", async () => {
    const tokens = { alice: 'alice-token-0123456789abcdef', bob: 'bob-token-0123456789abcdef' };
    const running = await start({
      overrides: {
        gateway: {
          auth: {
            principals: [
              { id: 'alice', tokens: [tokens.alice] },
              { id: 'bob', tokens: [tokens.bob] },
            ],
          },
        },
      },
    });
    const alice = await connectAuthed(running, tokens.alice, '?platform=web&user_id=a&chat_id=a');
    const bob = await connectAuthed(running, tokens.bob, '?platform=web&user_id=b&chat_id=b');
    for (const { client } of [alice, bob]) {
      expect(await client.ask({ type: 'subscribe', topics: ['turns', 'sessions'] })).toMatchObject({
        type: 'subscribed',
      });
    }
    alice.client.send({ type: 'message', text: 'secret of alice' });
    const aliceFrames = await alice.client.until((f) => f.type === 'event' && f.event === 'done');
    const aliceEvent = (aliceFrames.find((f) => f.type === 'accepted') as unknown as { event_id: string }).event_id;
    expect(
      aliceFrames.some((f) => f.type === 'event' && (f.data as { event_id?: string }).event_id === aliceEvent),
    ).toBe(true);

    bob.client.send({ type: 'message', text: 'hello from bob' });
    const bobFrames = await bob.client.until((f) => f.type === 'event' && f.event === 'done');
    const bobEvent = (bobFrames.find((f) => f.type === 'accepted') as unknown as { event_id: string }).event_id;
    expect(bobFrames.some((f) => f.type === 'event' && (f.data as { event_id?: string }).event_id === bobEvent)).toBe(
      true,
    );
    expect(JSON.stringify(bobFrames)).not.toContain(aliceEvent);
    expect(JSON.stringify(bobFrames)).not.toContain('secret of alice');
  });

  it('logs needs the admin role; unknown topics are BAD_REQUEST', async () => {
    const running = await start();
    const api = await connectAuthed(running, API_TOKEN);
    expect(await api.client.ask({ type: 'subscribe', topics: ['logs'] })).toMatchObject({
      type: 'error',
      error: { code: 'FORBIDDEN' },
    });
    expect(await api.client.ask({ type: 'subscribe', topics: ['turns', 'gossip'] })).toMatchObject({
      type: 'error',
      error: { code: 'BAD_REQUEST' },
    });
    const admin = await connectAuthed(running, ADMIN_TOKEN);
    expect(await admin.client.ask({ type: 'subscribe', topics: ['logs', 'channels'] })).toEqual({
      type: 'subscribed',
      topics: ['logs', 'channels'],
    });
  });

  it('ping answers pong', async () => {
    const running = await start();
    const { client } = await connectAuthed(running);
    expect(await client.ask({ type: 'ping' })).toEqual({ type: 'pong' });
  });
});

describe('websocket: channel state', () => {
  it('health ws_clients counts open authenticated connections', async () => {
    const running = await start();
    const health = async () => (await http(running, 'GET', '/api/v1/health')).body.ws_clients;
    expect(await health()).toBe(0);
    const a = await connectAuthed(running);
    await connectAuthed(running, ADMIN_TOKEN);
    await connect(`${running.ws}/api/v1/ws`); // not authenticated: not counted
    expect(await health()).toBe(2);
    a.client.socket.close();
    await a.client.closed;
    await vi.waitFor(async () => expect(await health()).toBe(1), { timeout: FRAME_TIMEOUT_MS, interval: 20 });
  });

  it('GET /channels shows websocket with messages_today', async () => {
    const running = await start();
    const { client } = await connectAuthed(running);
    client.send({ type: 'message', text: 'count me' });
    await client.until(isEnd);
    const channels = await http(running, 'GET', '/api/v1/channels', { token: API_TOKEN });
    const row = (channels.body.items as Array<Record<string, unknown>>).find((c) => c.name === 'websocket');
    expect(row).toMatchObject({ name: 'websocket', enabled: true, connected: true, messages_today: 1 });
    expect(row?.last_message_at).toEqual(expect.any(String));
  });

  it('disable closes clients (1001) and refuses upgrades with 503; enable accepts again', async () => {
    const running = await start();
    const { client } = await connectAuthed(running);
    const disabled = await http(running, 'POST', '/api/v1/channels/websocket/disable', { token: ADMIN_TOKEN });
    expect(disabled.status).toBe(200);
    expect(disabled.body).toMatchObject({ name: 'websocket', enabled: false, connected: false });
    expect(await client.closeCode()).toBe(1001);
    expect(running.internals.websocket.clientCount()).toBe(0);

    const refused = await refusedUpgrade(`${running.ws}/api/v1/ws`, { 'x-api-token': API_TOKEN });
    expect(refused.status).toBe(503);
    expect(refused.body).toMatchObject({ error: { code: 'UNAVAILABLE' } });

    const enabled = await http(running, 'POST', '/api/v1/channels/websocket/enable', { token: ADMIN_TOKEN });
    expect(enabled.body).toMatchObject({ enabled: true, connected: true });
    await connectAuthed(running);
  });
});

describe('websocket: bounds', () => {
  it('closes a client that never reads once its outbound buffer passes the cap (1013)', async () => {
    // Big replies (the echo of a ~1 MB text, on the turns feed too) over a lowered buffer cap.
    const running = await start({ overrides: { gateway: { max_body_bytes: 4 * 1024 * 1024 } } });
    const cap = 256 * 1024;
    running.internals.websocket.tune({ maxBufferedBytes: cap });
    const { client } = await connectAuthed(running);
    expect(await client.ask({ type: 'subscribe', topics: ['turns'] })).toMatchObject({ type: 'subscribed' });
    const [server] = [...running.gateway.app.websocketServer.clients];
    expect(server).toBeDefined();
    client.socket.pause(); // reads nothing from now on
    const words = 'lorem ipsum dolor sit amet '.repeat(40_000);
    for (let i = 0; i < 8; i++) client.send({ type: 'message', text: `${i} ${words}` });

    await vi.waitFor(() => expect(running.internals.websocket.clientCount()).toBe(0), {
      timeout: 15_000,
      interval: 20,
    });
    expect(server!.readyState).toBe(WebSocket.CLOSING);
    // At most the cap plus the frame that crossed it (~1 MB) is held, and nothing is added afterwards.
    const held = server!.bufferedAmount;
    expect(held).toBeGreaterThan(cap);
    expect(held).toBeLessThan(cap + 1.5 * 1024 * 1024);
    // Every subscription of the closed client is gone; the turns it sent run on without it.
    expect(running.internals.bus.hasListeners('turns')).toBe(false);
    const { gauges, listenerCount } = running.internals.messages;
    await vi.waitFor(() => expect(gauges.queued() + gauges.running() + listenerCount()).toBe(0), {
      timeout: 15_000,
      interval: 20,
    });
    expect(server!.bufferedAmount).toBe(held);

    client.socket.resume();
    expect(await client.closeCode()).toBe(1013);
  });

  it('cuts off a peer that stops answering protocol pings', async () => {
    const running = await start();
    // The heartbeat interval takes effect when the channel starts.
    await running.internals.channels.disable('websocket');
    running.internals.websocket.tune({ heartbeatMs: 100 });
    await running.internals.channels.enable('websocket');
    const socket = new WebSocket(`${running.ws}/api/v1/ws`, { headers: { 'x-api-token': API_TOKEN }, autoPong: false });
    const client = new Client(socket);
    cleanup(async () => {
      socket.terminate();
      await client.closed;
    });
    expect(await client.next()).toEqual({ type: 'auth_ok', role: 'api' });
    expect(await client.closeCode()).toBe(1006);
    await vi.waitFor(() => expect(running.internals.websocket.clientCount()).toBe(0), {
      timeout: FRAME_TIMEOUT_MS,
      interval: 20,
    });
  });

  it('caps frames at gateway.max_body_bytes (close 1009)', async () => {
    const running = await start({ overrides: { gateway: { max_body_bytes: 1024 } } });
    const { client } = await connectAuthed(running);
    client.send({ type: 'message', text: 'x'.repeat(2048) });
    expect(await client.closeCode()).toBe(1009);
  });

  it('caps the turns one connection follows at once: RATE_LIMITED', async () => {
    const fake = await fakeProvider();
    fake.always({ hang: true });
    const running = await start({ fake });
    running.internals.websocket.tune({ maxTurnsPerConnection: 2 });
    const { client } = await connectAuthed(running);
    client.send({ type: 'message', text: 'a', session_key: 'gateway:ws:s1' });
    expect(await client.next()).toMatchObject({ type: 'accepted' });
    client.send({ type: 'message', text: 'b', session_key: 'gateway:ws:s2' });
    expect(await client.next()).toMatchObject({ type: 'accepted' });
    expect(await client.ask({ type: 'message', text: 'c', ref: 'third' })).toMatchObject({
      type: 'error',
      ref: 'third',
      error: { code: 'RATE_LIMITED' },
    });
    // Both turns are running (so shutdown interrupts them rather than waiting for them).
    await vi.waitFor(() => expect(running.internals.messages.runningTurns()).toHaveLength(2), {
      timeout: FRAME_TIMEOUT_MS,
      interval: 20,
    });
  });
});
