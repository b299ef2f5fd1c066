/**
 * The webhook channel over real sockets (spec: Webhook channel; DECISIONS §6,
 * §7): an in-process gateway whose API and webhook servers listen on
 * ephemeral loopback ports, driven with `fetch`; one test spawns the built
 * server to replay a keyed request after a crash.
 */
import { request as httpRequest } from 'node:http';
import { createServer, type Server } from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { killAllNow } from '../../bench/processes.js';
import { signStandardWebhook, signXSignature } from '../../src/channels/webhook/webhook.signature.js';
import { useCleanups } from '../helpers/cleanups.js';
import { deferred } from '../helpers/deferred.js';
import { chatRequests, echoReply, type FakeOpenAI } from '../helpers/fake-openai.js';
import { adminHeaders, apiHeaders, deepMerge, useHarness, type Harness } from '../helpers/harness.js';
import { e2eHome, killNow, pollUntil, removeE2EHomes, startGateway, stopGateway, within } from './helpers.js';

const SECRET = 's3cret';

/** Built processes and their homes go after each test (after the hook below has closed the gateway). */
afterEach(() => {
  killAllNow();
  removeE2EHomes();
});
// Each test opens its gateway with `startHook`; model calls a test does not script get the echo `fake: <text>`.
const rig = useHarness({ fake: { always: echoReply }, autoOpen: false });
/** Other things to close after each test, before the gateway. */
const cleanup = useCleanups();

interface Hook {
  t: Harness;
  /** Base URL of the API server. */
  api: string;
  /** `http://127.0.0.1:PORT/webhook` of the listening channel. */
  url(): string;
}

/** A gateway with the webhook channel on 127.0.0.1:0 (secret `s3cret`, auth open), `overrides` merged in. */
async function startHook(overrides: Record<string, unknown> = {}, fake?: FakeOpenAI): Promise<Hook> {
  const base: Record<string, unknown> = {
    gateway: { auth: { mode: 'open' }, max_body_bytes: 8192 },
    channels: { webhook: { enabled: true, host: '127.0.0.1', port: 0, secret: SECRET } },
    ...(fake ? { provider: { timeout_seconds: 30 } } : {}),
  };
  const t = await rig.open({ config: deepMerge(base, overrides), ...(fake ? {} : { fake: undefined }) });
  const api = await t.gateway.listen();
  return {
    t,
    api,
    url() {
      const address = t.internals.webhook?.address;
      if (!address) throw new Error('webhook channel is not listening');
      return `${address}/webhook`;
    },
  };
}

/** The fake OpenAI server of this test (started by the hook; closed and checked after the test). */
async function fakeProvider(): Promise<FakeOpenAI> {
  return rig.fake;
}

interface Answer {
  status: number;
  headers: Headers;
  body: Record<string, unknown>;
}

type Signing = 'prefixed' | 'bare' | 'none' | { standard: { id: string; timestamp: number } };

/** POSTs `body` (an object is sent as JSON text) to the webhook, signed as asked (default `sha256=<hex>`). */
async function send(
  url: string,
  body: unknown,
  options: { sign?: Signing; secret?: string; headers?: Record<string, string> } = {},
): Promise<Answer> {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  const secret = options.secret ?? SECRET;
  const sign = options.sign ?? 'prefixed';
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (sign === 'prefixed') headers['x-signature'] = signXSignature(secret, text);
  else if (sign === 'bare') headers['x-signature'] = signXSignature(secret, text).slice('sha256='.length);
  else if (sign !== 'none') {
    const { id, timestamp } = sign.standard;
    headers['webhook-id'] = id;
    headers['webhook-timestamp'] = String(timestamp);
    headers['webhook-signature'] = signStandardWebhook(secret, id, timestamp, text);
  }
  const res = await fetch(url, {
    method: 'POST',
    headers: { ...headers, ...options.headers },
    body: text,
    signal: AbortSignal.timeout(15_000),
  });
  const raw = await res.text();
  return { status: res.status, headers: res.headers, body: (raw ? JSON.parse(raw) : {}) as Record<string, unknown> };
}

/** POSTs a signed JSON body with a chosen Host header (fetch does not let a caller set Host). */
function postWithHost(url: string, body: unknown, host: string): Promise<{ status: number; body: unknown }> {
  const text = JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      url,
      {
        method: 'POST',
        headers: { host, 'content-type': 'application/json', 'x-signature': signXSignature(SECRET, text) },
        timeout: 15_000,
      },
      (res) => {
        const parts: Buffer[] = [];
        res.on('data', (part: Buffer) => parts.push(part));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, body: JSON.parse(Buffer.concat(parts).toString()) }),
        );
      },
    );
    req.on('error', reject);
    req.end(text);
  });
}

/** A JSON request to the API server. */
async function api(base: string, method: string, path: string, headers: Record<string, string>): Promise<Answer> {
  const res = await fetch(`${base}${path}`, { method, headers, signal: AbortSignal.timeout(15_000) });
  return { status: res.status, headers: res.headers, body: (await res.json()) as Record<string, unknown> };
}

/** Turns of a webhook chat's session, as the ledger lists them. */
async function sessionTurns(hook: Hook, chatId: string): Promise<Array<Record<string, unknown>>> {
  const key = encodeURIComponent(`gateway:webhook:${chatId}`);
  const res = await api(hook.api, 'GET', `/api/v1/sessions/${key}/turns`, adminHeaders);
  return res.status === 404 ? [] : (res.body.items as Array<Record<string, unknown>>);
}

/** The channel's row in GET /api/v1/channels. */
async function channelRow(hook: Hook): Promise<Record<string, unknown>> {
  const res = await api(hook.api, 'GET', '/api/v1/channels', apiHeaders);
  expect(res.status).toBe(200);
  const row = (res.body.items as Array<Record<string, unknown>>).find((c) => c.name === 'webhook');
  if (!row) throw new Error('webhook channel missing from GET /channels');
  return row;
}

const nowSeconds = () => Math.floor(Date.now() / 1000);

describe('webhook channel: messages', () => {
  it('acknowledges 202 with a correlation_id, and answers 200 with the reply when asked to wait', async () => {
    const hook = await startHook();
    const ack = await send(hook.url(), { sender_id: 'u1', chat_id: 'c1', text: 'hello' });
    expect(ack.status).toBe(202);
    expect(ack.body).toEqual({ status: 'accepted', correlation_id: expect.stringMatching(/^evt_/) });
    expect(ack.headers.get('x-request-id')).toMatch(/^req_/);

    const waited = await send(hook.url(), { sender_id: 'u1', chat_id: 'c1', text: 'are you there?', wait: true });
    expect(waited.status).toBe(200);
    expect(waited.body).toEqual({ correlation_id: expect.stringMatching(/^evt_/), response: 'echo: are you there?' });
    expect(waited.body.correlation_id).not.toBe(ack.body.correlation_id);
    expect(waited.headers.get('content-type')).toMatch(/^application\/json/);
  });

  it("takes `agent` for a new session (404 unknown); its sessions are the webhook channel's, seen by admins only", async () => {
    const hook = await startHook({ agents: { main: {}, support: {} } });
    const ok = await send(hook.url(), { sender_id: 'u1', chat_id: 'ag', text: 'hi', agent: 'support', wait: true });
    expect(ok.status).toBe(200);
    const key = encodeURIComponent('gateway:webhook:ag');
    const session = await api(hook.api, 'GET', `/api/v1/sessions/${key}`, adminHeaders);
    expect(session.body).toMatchObject({ agent: 'support' });
    expect((await api(hook.api, 'GET', `/api/v1/sessions/${key}`, apiHeaders)).status).toBe(404);
    const unknown = await send(hook.url(), { sender_id: 'u1', chat_id: 'ag2', text: 'hi', agent: 'ghost' });
    expect(unknown.status).toBe(404);
    const bad = await send(hook.url(), { sender_id: 'u1', chat_id: 'ag3', text: 'hi', agent: 7 });
    expect(bad.status).toBe(400);
  });

  it('accepts the aliases user_id and message', async () => {
    const hook = await startHook();
    const res = await send(hook.url(), { user_id: 'u2', chat_id: 'c2', message: 'via aliases', wait: true });
    expect(res.status).toBe(200);
    expect(res.body.response).toBe('echo: via aliases');
    const turns = await sessionTurns(hook, 'c2');
    expect(turns).toHaveLength(1);
  });

  it('rejects a missing text, wrong types, invalid JSON and a non-object with 400', async () => {
    const hook = await startHook();
    const missing = await send(hook.url(), { sender_id: 'u', chat_id: 'c' });
    expect(missing.status).toBe(400);
    expect(missing.body).toEqual({
      error: {
        code: 'BAD_REQUEST',
        message: 'invalid body',
        details: [{ path: 'body.text', message: expect.any(String) }],
        request_id: missing.headers.get('x-request-id'),
      },
    });
    const wrongTypes = await send(hook.url(), { sender_id: 5, chat_id: 'c', text: 't', wait: 'yes' });
    expect(wrongTypes.status).toBe(400);
    expect((wrongTypes.body.error as { details: Array<{ path: string }> }).details.map((d) => d.path)).toEqual([
      'body.sender_id',
      'body.wait',
    ]);
    const invalid = await send(hook.url(), '{"sender_id": "u", ');
    expect(invalid.status).toBe(400);
    expect(invalid.body).toMatchObject({ error: { code: 'BAD_REQUEST', message: 'invalid JSON body' } });
    const array = await send(hook.url(), '[1,2]');
    expect(array.status).toBe(400);
    expect(await sessionTurns(hook, 'c')).toHaveLength(0);
  });

  it('answers 413 for a body over max_body_bytes', async () => {
    const hook = await startHook();
    const res = await send(hook.url(), { sender_id: 'u', chat_id: 'c', text: 'x'.repeat(10_000) });
    expect(res.status).toBe(413);
    expect(res.body).toMatchObject({ error: { code: 'PAYLOAD_TOO_LARGE' } });
    expect(res.headers.get('x-request-id')).toMatch(/^req_/);
  });

  it('serves GET {path}/health, 404 envelopes for unknown routes, and echoes X-Request-Id', async () => {
    const hook = await startHook();
    const health = await fetch(`${hook.url()}/health`);
    expect(health.status).toBe(200);
    expect(await health.json()).toEqual({ status: 'ok' });

    const unknown = await fetch(`${hook.url()}-nope`, { headers: { 'x-request-id': 'trace-me-123' } });
    expect(unknown.status).toBe(404);
    expect(unknown.headers.get('x-request-id')).toBe('trace-me-123');
    expect(await unknown.json()).toMatchObject({ error: { code: 'NOT_FOUND', request_id: 'trace-me-123' } });

    const echoed = await send(
      hook.url(),
      { sender_id: 'u', chat_id: 'c', text: 't' },
      {
        headers: { 'x-request-id': 'client-req-42' },
      },
    );
    expect(echoed.status).toBe(202);
    expect(echoed.headers.get('x-request-id')).toBe('client-req-42');
  });
});

describe('webhook channel: signatures', () => {
  it('accepts sha256=<hex> and bare hex; refuses a missing or wrong signature with 401', async () => {
    const hook = await startHook();
    const body = { sender_id: 'u', chat_id: 'sig', text: 'signed' };
    expect((await send(hook.url(), body)).status).toBe(202);
    expect((await send(hook.url(), body, { sign: 'bare' })).status).toBe(202);

    const missing = await send(hook.url(), body, { sign: 'none' });
    expect(missing.status).toBe(401);
    expect(missing.body).toMatchObject({
      error: { code: 'UNAUTHORIZED', request_id: missing.headers.get('x-request-id') },
    });
    const wrong = await send(hook.url(), body, { secret: 'not-the-secret' });
    expect(wrong.status).toBe(401);
    // A signature of other bytes (the body re-serialised) does not pass either.
    const other = await send(hook.url(), JSON.stringify(body, null, 2), {
      headers: { 'x-signature': signXSignature(SECRET, JSON.stringify(body)) },
    });
    expect(other.status).toBe(401);
    expect(await sessionTurns(hook, 'sig')).toHaveLength(2);
  });

  it('checks the signature before parsing: invalid JSON is 401 unsigned, 400 signed', async () => {
    const hook = await startHook();
    expect((await send(hook.url(), '{oops', { sign: 'none' })).status).toBe(401);
    expect((await send(hook.url(), '{oops')).status).toBe(400);
  });

  it('accepts Standard Webhooks headers, uses webhook-id as the idempotency key, refuses a stale timestamp', async () => {
    const hook = await startHook();
    const body = { sender_id: 'sw', chat_id: 'std', text: 'standard' };
    const sign: Signing = { standard: { id: 'msg_2p1', timestamp: nowSeconds() } };
    const first = await send(hook.url(), body, { sign });
    expect(first.status).toBe(202);
    const redelivery = await send(hook.url(), body, { sign: { standard: { id: 'msg_2p1', timestamp: nowSeconds() } } });
    expect(redelivery.status).toBe(202);
    expect(redelivery.body.correlation_id).toBe(first.body.correlation_id);
    expect(await sessionTurns(hook, 'std')).toHaveLength(1);

    const stale = await send(hook.url(), body, {
      sign: { standard: { id: 'msg_old', timestamp: nowSeconds() - 400 } },
    });
    expect(stale.status).toBe(401);
    const future = await send(hook.url(), body, {
      sign: { standard: { id: 'msg_new', timestamp: nowSeconds() + 400 } },
    });
    expect(future.status).toBe(401);
    const whsec = `whsec_${Buffer.from('another key').toString('base64')}`;
    const wrongKey = await send(hook.url(), body, {
      secret: whsec,
      sign: { standard: { id: 'm', timestamp: nowSeconds() } },
    });
    expect(wrongKey.status).toBe(401);
  });

  it('skips verification when no secret is configured', async () => {
    const hook = await startHook({ channels: { webhook: { secret: null } } });
    const res = await send(hook.url(), { sender_id: 'u', chat_id: 'open', text: 'unsigned' }, { sign: 'none' });
    expect(res.status).toBe(202);
  });
});

describe('webhook channel: idempotency', () => {
  it('replays the original answer and correlation_id with no second turn or provider call; 409 on changed text', async () => {
    const fake = await fakeProvider();
    const hook = await startHook({}, fake);
    const body = { sender_id: 'u1', chat_id: 'idem', text: 'once', wait: true, idempotency_key: 'key-1' };
    const first = await send(hook.url(), body);
    expect(first.status).toBe(200);
    expect(first.body).toEqual({ correlation_id: expect.stringMatching(/^evt_/), response: 'fake: once' });

    // Same key in a header instead of the body, without wait: the original (waited) result is replayed.
    const { idempotency_key: _key, wait: _wait, ...plain } = body;
    const replay = await send(hook.url(), plain, { headers: { 'idempotency-key': 'key-1' } });
    expect(replay.status).toBe(200);
    expect(replay.body).toEqual(first.body);
    expect(chatRequests(fake)).toHaveLength(1);
    expect(await sessionTurns(hook, 'idem')).toHaveLength(1);

    const changed = await send(hook.url(), { ...body, text: 'twice' });
    expect(changed.status).toBe(409);
    expect(changed.body).toEqual({ error: expect.any(String) });
    expect(chatRequests(fake)).toHaveLength(1);

    // The same key from another chat is another scope: a new message.
    const otherChat = await send(hook.url(), { ...body, chat_id: 'idem-2' });
    expect(otherChat.status).toBe(200);
    expect(otherChat.body.correlation_id).not.toBe(first.body.correlation_id);
  });

  it('replays a 202 acknowledgement, and a waiting retry of it waits for the same event', async () => {
    const hook = await startHook();
    const body = { sender_id: 'u1', chat_id: 'ack', text: 'ack me', idempotency_key: 'key-ack' };
    const first = await send(hook.url(), body);
    expect(first.status).toBe(202);
    const again = await send(hook.url(), body);
    expect(again.status).toBe(202);
    expect(again.body).toEqual(first.body);
    const waited = await send(hook.url(), { ...body, wait: true });
    expect(waited.status).toBe(200);
    expect(waited.body).toEqual({ correlation_id: first.body.correlation_id, response: 'echo: ack me' });
    expect(await sessionTurns(hook, 'ack')).toHaveLength(1);
  });

  it('refuses a body key that differs from the header key, and an invalid key, with 400', async () => {
    const hook = await startHook();
    const body = { sender_id: 'u1', chat_id: 'keys', text: 'hi', idempotency_key: 'body-key' };
    const conflict = await send(hook.url(), body, { headers: { 'idempotency-key': 'header-key' } });
    expect(conflict.status).toBe(400);
    expect(conflict.body).toMatchObject({ error: { code: 'BAD_REQUEST' } });
    const xConflict = await send(
      hook.url(),
      { ...body, idempotency_key: undefined },
      {
        headers: { 'idempotency-key': 'a', 'x-idempotency-key': 'b' },
      },
    );
    expect(xConflict.status).toBe(400);
    const blank = await send(hook.url(), { ...body, idempotency_key: '   ' });
    expect(blank.status).toBe(400);
    const agreeing = await send(hook.url(), body, { headers: { 'x-idempotency-key': 'body-key' } });
    expect(agreeing.status).toBe(202);
    expect(await sessionTurns(hook, 'keys')).toHaveLength(1);
  });
});

describe('webhook channel: waiting and the pending queue', () => {
  it('answers 504 with the correlation_id when the reply is late; a retry with the key gets the late reply', async () => {
    const fake = await fakeProvider();
    // The model answers only after the first wait has given up (its 1 s bound is a timer of the gateway).
    const answer = deferred();
    fake.enqueue({ after: answer.promise, then: { content: 'late answer' } });
    const hook = await startHook({ channels: { webhook: { wait_timeout_seconds: 1 } } }, fake);
    const body = { sender_id: 'u1', chat_id: 'slow', text: 'take your time', wait: true, idempotency_key: 'slow-1' };
    const timedOut = await send(hook.url(), body);
    expect(timedOut.status).toBe(504);
    expect(timedOut.body).toMatchObject({
      error: { code: 'TIMEOUT', details: { correlation_id: expect.stringMatching(/^evt_/) } },
    });
    const correlationId = (timedOut.body.error as { details: { correlation_id: string } }).details.correlation_id;

    // The retry waits for the turn still running; then the model answers.
    const { gauges } = hook.t.internals.messages;
    const waitingBefore = gauges.waiters();
    const pending = send(hook.url(), body);
    await vi.waitFor(() => expect(gauges.waiters()).toBe(waitingBefore + 1), { timeout: 5_000, interval: 5 });
    answer.resolve();
    const retry = await pending;
    expect(retry.status).toBe(200);
    expect(retry.body).toEqual({ correlation_id: correlationId, response: 'late answer' });
    expect(chatRequests(fake)).toHaveLength(1);
  });

  it('answers 502 UPSTREAM_ERROR when the provider fails a waited turn', async () => {
    const fake = await fakeProvider();
    fake.always({ status: 400, body: { error: { message: 'bad request', type: 'invalid_request_error' } } });
    const hook = await startHook({}, fake);
    const res = await send(hook.url(), { sender_id: 'u1', chat_id: 'fail', text: 'break', wait: true });
    expect(res.status).toBe(502);
    expect(res.body).toMatchObject({
      error: { code: 'UPSTREAM_ERROR', details: { correlation_id: expect.stringMatching(/^evt_/) } },
    });
  });

  it('frees a pending slot the moment its turn reaches an outcome: max_pending fresh slow requests are then all accepted', async () => {
    const fake = await fakeProvider();
    const hook = await startHook({ channels: { webhook: { max_pending: 2 } } }, fake);
    fake.enqueue(echoReply); // the instant turn
    fake.always({ hang: true }); // every later one

    // What the pending count says at the very moment each outcome event is published (the channel listens first).
    const webhook = hook.t.internals.webhook!;
    const pendingAtOutcome = new Map<string, number>();
    const untap = hook.t.internals.messages.tap((event) => {
      if (event.type === 'done') pendingAtOutcome.set(event.eventId, webhook.pending());
    });
    cleanup(untap);

    for (let round = 0; round < 5; round++) {
      // A waited request is answered when the turn's outcome event wakes it: the slot is free by then.
      const instant = await send(hook.url(), {
        sender_id: 'u1',
        chat_id: `instant-${round}`,
        text: 'quick',
        wait: true,
      });
      expect(instant.status).toBe(200);
      expect(pendingAtOutcome.get(String(instant.body.correlation_id))).toBe(0);
      const slow = await Promise.all(
        [1, 2].map((n) => send(hook.url(), { sender_id: 'u1', chat_id: `slow-${round}-${n}`, text: 'slow' })),
      );
      expect(slow.map((r) => r.status)).toEqual([202, 202]);
      const refused = await send(hook.url(), { sender_id: 'u1', chat_id: `over-${round}`, text: 'one more' });
      expect(refused.status).toBe(429);
      // Free the two slow slots for the next round: interrupt them once they are running.
      for (const r of slow) {
        const id = String(r.body.correlation_id);
        await pollUntil('the slow turn to run', async () =>
          hook.t.internals.messages.interrupt(id, 'test') ? true : undefined,
        );
      }
      await pollUntil('the slow turns to leave the count', async () =>
        hook.t.internals.webhook!.pending() === 0 ? true : undefined,
      );
      fake.enqueue(echoReply);
    }
  });

  it('refuses new messages with 429 at max_pending, replays a pending one, and frees the slot at its outcome', async () => {
    const fake = await fakeProvider();
    const hook = await startHook({ channels: { webhook: { max_pending: 1 } } }, fake);
    const webhook = hook.t.internals.webhook!;

    // A turn that reaches its outcome frees its slot.
    const done = await send(hook.url(), { sender_id: 'u1', chat_id: 'q0', text: 'quick', wait: true });
    expect(done.status).toBe(200);
    await pollUntil('the finished turn to leave the pending count', async () =>
      webhook.pending() === 0 ? true : undefined,
    );

    fake.always({ hang: true });
    const body = { sender_id: 'u1', chat_id: 'q1', text: 'hang on', idempotency_key: 'pending-1' };
    const first = await send(hook.url(), body);
    expect(first.status).toBe(202);
    expect(webhook.pending()).toBe(1);

    const refused = await send(hook.url(), { sender_id: 'u2', chat_id: 'q2', text: 'me too' });
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('5');
    expect(refused.body).toMatchObject({ error: { code: 'RATE_LIMITED' } });

    // A retry of the pending message is not a new one: replayed, not refused, not counted.
    const retry = await send(hook.url(), body);
    expect(retry.status).toBe(202);
    expect(retry.body.correlation_id).toBe(first.body.correlation_id);
    expect(webhook.pending()).toBe(1);
    expect(await sessionTurns(hook, 'q2')).toHaveLength(0);
    // The pending turn is inside its (hanging) provider call.
    await pollUntil('the hanging provider call', async () => (chatRequests(fake).length === 2 ? true : undefined));
  });
});

describe('webhook channel: identity by auth mode', () => {
  it('refuses a sender that pairing mode does not know when loopback trust is off, and admits listed ones', async () => {
    const hook = await startHook({
      gateway: { auth: { mode: 'pairing', allowed_users: ['webhook:alice'], loopback_trust: false } },
    });
    const refused = await send(hook.url(), { sender_id: 'mallory', chat_id: 'p', text: 'let me in' });
    expect(refused.status).toBe(403);
    expect(refused.body).toMatchObject({
      error: { code: 'FORBIDDEN', message: expect.stringContaining('webhook:mallory') },
    });
    const admitted = await send(hook.url(), { sender_id: 'alice', chat_id: 'p', text: 'hello' });
    expect(admitted.status).toBe(202);
    expect(await sessionTurns(hook, 'p')).toHaveLength(1);
  });

  it('exempts a loopback peer with an accepted Host when loopback trust is on', async () => {
    const hook = await startHook({ gateway: { auth: { mode: 'pairing', allowed_users: [] } } });
    const res = await send(hook.url(), { sender_id: 'stranger', chat_id: 'lo', text: 'local' });
    expect(res.status).toBe(202);
    // A Host the rules reject loses the exemption, even from 127.0.0.1 (spec: Loopback exemption).
    const badHost = await postWithHost(
      hook.url(),
      { sender_id: 'stranger', chat_id: 'lo', text: 'local' },
      'evil.example',
    );
    expect(badHost.status).toBe(403);
    expect(badHost.body).toMatchObject({ error: { code: 'FORBIDDEN' } });
    const goodHost = await postWithHost(
      hook.url(),
      { sender_id: 'stranger', chat_id: 'lo', text: 'again' },
      'localhost',
    );
    expect(goodHost.status).toBe(202);
  });
});

describe('webhook channel: lifecycle', () => {
  it('is listed with messages_today, connected in health, and disable/enable stop and restart it', async () => {
    const fake = await fakeProvider();
    const hook = await startHook({}, fake);
    const before = await channelRow(hook);
    expect(before).toMatchObject({ name: 'webhook', enabled: true, connected: true, messages_today: 0, error: null });

    const keyed = { sender_id: 'u', chat_id: 'count', text: 'one', idempotency_key: 'count-1' };
    expect((await send(hook.url(), keyed)).status).toBe(202);
    expect((await send(hook.url(), keyed)).status).toBe(202); // a replay is not a new message
    expect((await send(hook.url(), { sender_id: 'u', chat_id: 'count', text: 'two' })).status).toBe(202);
    const counted = await channelRow(hook);
    expect(counted.messages_today).toBe(2);
    expect(counted.last_message_at).toEqual(expect.any(String));

    const health = await api(hook.api, 'GET', '/api/v1/health', {});
    expect(health.body).toMatchObject({ status: 'healthy', active_channels: { webhook: 'connected' } });

    const oldUrl = hook.url();
    const disabled = await api(hook.api, 'POST', '/api/v1/channels/webhook/disable', adminHeaders);
    expect(disabled.status).toBe(200);
    expect(disabled.body).toMatchObject({ name: 'webhook', enabled: false, connected: false });
    expect(hook.t.internals.webhook!.address).toBeNull();
    const refused = await fetch(oldUrl, { method: 'POST', body: '{}' }).then(
      () => null,
      (err: unknown) => err as { cause?: { code?: string } },
    );
    expect(refused?.cause?.code).toBe('ECONNREFUSED');
    const disabledHealth = await api(hook.api, 'GET', '/api/v1/health', {});
    expect(disabledHealth.body).toMatchObject({ active_channels: { webhook: 'disabled' } });

    const enabled = await api(hook.api, 'POST', '/api/v1/channels/webhook/enable', adminHeaders);
    expect(enabled.status).toBe(200);
    expect(enabled.body).toMatchObject({ enabled: true, connected: true, error: null });
    const again = await send(hook.url(), { sender_id: 'u', chat_id: 'count', text: 'three', wait: true });
    expect(again.status).toBe(200);
    expect(again.body.response).toBe('fake: three');
    expect((await channelRow(hook)).messages_today).toBe(3);
  });

  it('stop closes waiting connections too, and stop is idempotent', async () => {
    const fake = await fakeProvider();
    fake.always({ hang: true });
    const hook = await startHook({}, fake);
    const webhook = hook.t.internals.webhook!;
    const waiting = send(hook.url(), { sender_id: 'u', chat_id: 'w', text: 'wait forever', wait: true }).then(
      () => 'answered',
      () => 'closed',
    );
    await pollUntil('the turn to be inside its hanging provider call', async () =>
      webhook.pending() === 1 && chatRequests(fake).length === 1 ? true : undefined,
    );
    await within(Promise.all([webhook.stop(), webhook.stop()]), 5_000, 'webhook stop');
    expect(await within(waiting, 5_000, 'waiting request to end')).toBe('closed');
    expect(webhook.connected()).toBe(false);
    expect(webhook.pending()).toBe(0);
  });

  it('reports an error and degraded health when its port is taken, while the API keeps working', async () => {
    const blocker: Server = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    cleanup(() => new Promise<void>((resolve) => blocker.close(() => resolve())));
    const port = (blocker.address() as { port: number }).port;

    const fake = await fakeProvider();
    const hook = await startHook({ channels: { webhook: { port } } }, fake);
    expect(hook.t.internals.webhook!.connected()).toBe(false);
    const row = await channelRow(hook);
    expect(row).toMatchObject({ enabled: true, connected: false, error: expect.stringContaining('EADDRINUSE') });
    const health = await api(hook.api, 'GET', '/api/v1/health', {});
    expect(health.status).toBe(200);
    expect(health.body).toMatchObject({ status: 'degraded', active_channels: { webhook: 'error' } });
    const sessions = await api(hook.api, 'GET', '/api/v1/sessions', apiHeaders);
    expect(sessions.status).toBe(200);
  });
});

describe('webhook channel: the built server', () => {
  it('replays a keyed request after a crash and restart (records are durable)', async () => {
    const fake = await fakeProvider();
    const home = e2eHome(fake, {
      gateway: { port: 0, auth: { mode: 'open', api_tokens: ['e2e-api'], admin_tokens: ['e2e-admin'] } },
      channels: { webhook: { enabled: true, host: '127.0.0.1', port: 0, secret: SECRET } },
      logs: { level: 'info' },
    });
    const webhookUrl = async (gw: { stdout: string[] }): Promise<string> =>
      pollUntil('the webhook listening line', async () => {
        for (const line of gw.stdout) {
          const entry = JSON.parse(line) as { message?: string; address?: string };
          if (entry.message === 'webhook channel listening' && entry.address) return `${entry.address}/webhook`;
        }
        return undefined;
      });

    const first = await startGateway(home);
    const body = { sender_id: 'u1', chat_id: 'durable', text: 'remember me', wait: true, idempotency_key: 'crash-1' };
    const original = await send(await webhookUrl(first.gw), body);
    expect(original.status).toBe(200);
    expect(original.body.response).toBe('fake: remember me');
    const killed = killNow(first);

    const second = await startGateway(home);
    expect(await killed).toBe('SIGKILL');
    const replay = await send(await webhookUrl(second.gw), body);
    expect(replay.status).toBe(200);
    expect(replay.body).toEqual(original.body);
    expect(chatRequests(fake)).toHaveLength(1);
    expect(second.gw.stdout.join('\n')).not.toContain(SECRET);
    await stopGateway(second, 'SIGTERM');
  });
});
