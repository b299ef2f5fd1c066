import { afterEach, describe, expect, it } from 'vitest';
import { errors, IdempotencyConflictError } from '../../http/errors.js';
import { ManualClock } from '../../lib/clock.js';
import { createLogger } from '../../logs/logger.js';
import { StoreUnavailableError } from '../../store/errors.js';
import type { SubmitInput, SubmitResult } from '../../turns/intake.js';
import type { TurnRecord } from '../../turns/turns.repo.js';
import type { IdentityCheck } from '../identity-check.js';
import { PendingTurns } from './webhook.pending.js';
import { buildWebhookServer, webhookScope, type WebhookServer } from './webhook.server.js';
import { signXSignature } from './webhook.signature.js';

const SECRET = 'unit-secret';

function turn(overrides: Partial<TurnRecord>): TurnRecord {
  return {
    seq: 1,
    eventId: 'evt_1',
    sessionKey: 'gateway:webhook:c1',
    status: 'completed',
    currentTool: null,
    response: 'done',
    terminationReason: null,
    contextEpoch: 0,
    acceptedAt: '2026-11-21T10:00:00.000Z',
    startedAt: null,
    finishedAt: null,
    updatedAt: '2026-11-21T10:00:00.000Z',
    payload: null,
    result: null,
    pending: null,
    owner: null,
    ...overrides,
  };
}

interface Harness {
  app: WebhookServer;
  submitted: SubmitInput[];
  logs: string[];
  accepted: () => number;
}

let current: Harness | null = null;
afterEach(async () => {
  await current?.app.close();
  current = null;
});

/** The webhook server over fakes: `submit` and `wait` answer as scripted; `submit` records its input. */
async function harness(
  script: {
    submit?: (input: SubmitInput) => Promise<SubmitResult>;
    wait?: () => Promise<TurnRecord | null>;
    checkIdentity?: IdentityCheck;
    maxPending?: number;
    draining?: boolean;
  } = {},
): Promise<Harness> {
  const submitted: SubmitInput[] = [];
  const logs: string[] = [];
  let accepted = 0;
  const maxPending = script.maxPending ?? 10;
  const app = buildWebhookServer({
    path: '/hook',
    secret: SECRET,
    maxBodyBytes: 1024,
    waitTimeoutMs: 1000,
    clock: new ManualClock(),
    logger: createLogger({ level: 'debug', stdout: { write: (line) => void logs.push(line) } }),
    intake: {
      submit: async (input) => {
        submitted.push(input);
        return script.submit ? script.submit(input) : { replay: false, eventId: 'evt_1', sessionKey: input.sessionKey };
      },
    },
    waiters: { wait: script.wait ?? (async () => turn({})) },
    checkIdentity: script.checkIdentity ?? (async () => undefined),
    loopbackTrusted: () => false,
    pending: new PendingTurns({
      limit: maxPending,
      watch: () => new Promise(() => undefined),
      onWatchError: () => undefined,
    }),
    maxPending,
    onAccepted: () => void accepted++,
    isDraining: () => script.draining ?? false,
  });
  await app.ready();
  current = { app, submitted, logs, accepted: () => accepted };
  return current;
}

function post(app: WebhookServer, body: unknown, headers: Record<string, string> = {}) {
  const payload = typeof body === 'string' ? body : JSON.stringify(body);
  return app.inject({
    method: 'POST',
    url: '/hook',
    headers: { 'content-type': 'application/json', 'x-signature': signXSignature(SECRET, payload), ...headers },
    payload,
  });
}

const message = { sender_id: 'u1', chat_id: 'c1', text: 'hello' };

describe('webhook server (in process, fakes)', () => {
  it('submits the payload, scope, fingerprint and session key the decisions fix', async () => {
    const h = await harness();
    const res = await post(h.app, { ...message, idempotency_key: 'k1', wait: false });
    expect(res.statusCode).toBe(202);
    expect(res.json()).toEqual({ status: 'accepted', correlation_id: 'evt_1' });
    expect(h.submitted).toHaveLength(1);
    const input = h.submitted[0]!;
    expect(input.sessionKey).toBe('gateway:webhook:c1');
    expect(input.payload).toEqual({
      text: 'hello',
      platform: 'webhook',
      user_id: 'u1',
      chat_id: 'c1',
      channel: 'webhook',
      source: 'webhook',
    });
    expect(input.idempotency).toMatchObject({ scope: webhookScope('u1', 'c1'), key: 'k1', wait: false });
    expect(h.accepted()).toBe(1);
  });

  it('keeps the fingerprint independent of wait and of where the key travelled', async () => {
    const h = await harness();
    await post(h.app, { ...message, idempotency_key: 'k1' });
    await post(h.app, { ...message, wait: true }, { 'x-idempotency-key': 'k1' });
    expect(h.submitted[0]!.idempotency!.fingerprint).toBe(h.submitted[1]!.idempotency!.fingerprint);
    await post(h.app, { ...message, text: 'changed', idempotency_key: 'k1' });
    expect(h.submitted[2]!.idempotency!.fingerprint).not.toBe(h.submitted[0]!.idempotency!.fingerprint);
  });

  it('scopes keys unambiguously by sender and chat', () => {
    expect(webhookScope('a|b', 'c')).not.toBe(webhookScope('a', 'b|c'));
  });

  it('answers a store outage 503 in the envelope', async () => {
    const h = await harness({ submit: () => Promise.reject(new StoreUnavailableError('db locked')) });
    const res = await post(h.app, message);
    expect(res.statusCode).toBe(503);
    expect(res.json()).toMatchObject({ error: { code: 'UNAVAILABLE', request_id: res.headers['x-request-id'] } });
  });

  it('answers an unexpected error with a generic 500 and logs the cause', async () => {
    const h = await harness({ submit: () => Promise.reject(new Error('secret internals: /var/db')) });
    const res = await post(h.app, message);
    expect(res.statusCode).toBe(500);
    expect(res.json()).toEqual({
      error: {
        code: 'INTERNAL_ERROR',
        message: 'internal error',
        details: {},
        request_id: res.headers['x-request-id'],
      },
    });
    expect(res.body).not.toContain('internals');
    expect(h.logs.join('\n')).toContain('secret internals');
  });

  it('answers a conflict 409 with the bare {"error"} body', async () => {
    const h = await harness({ submit: () => Promise.reject(new IdempotencyConflictError()) });
    const res = await post(h.app, { ...message, idempotency_key: 'k' });
    expect(res.statusCode).toBe(409);
    expect(res.json()).toEqual({ error: 'idempotency key reused with different content' });
  });

  it('passes intake ApiErrors through (e.g. 503 queue full)', async () => {
    const h = await harness({ submit: () => Promise.reject(errors.unavailable('too many messages queued')) });
    const res = await post(h.app, message);
    expect(res.statusCode).toBe(503);
    expect(res.json()).toMatchObject({ error: { message: 'too many messages queued' } });
  });

  it('maps a failed turn to 502 UPSTREAM_ERROR (provider) or 500 (anything else)', async () => {
    const upstream = turn({
      status: 'failed',
      result: { error: { code: 'UPSTREAM_ERROR', message: 'model provider failed: 500' } },
    });
    let h = await harness({ wait: async () => upstream });
    let res = await post(h.app, { ...message, wait: true });
    expect(res.statusCode).toBe(502);
    expect(res.json()).toMatchObject({ error: { code: 'UPSTREAM_ERROR', details: { correlation_id: 'evt_1' } } });
    await h.app.close();

    const internal = turn({
      status: 'failed',
      result: { error: { code: 'INTERNAL_ERROR', message: 'internal error' } },
    });
    h = await harness({ wait: async () => internal });
    res = await post(h.app, { ...message, wait: true });
    expect(res.statusCode).toBe(500);
    expect(res.json()).toMatchObject({ error: { code: 'INTERNAL_ERROR', details: { correlation_id: 'evt_1' } } });
  });

  it('answers a waited request 200 {correlation_id, response}, and 504 with the correlation id on timeout', async () => {
    let h = await harness({ wait: async () => turn({ status: 'incomplete', response: 'partial' }) });
    let res = await post(h.app, { ...message, wait: true });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ correlation_id: 'evt_1', response: 'partial' });
    await h.app.close();

    h = await harness({ wait: async () => null });
    res = await post(h.app, { ...message, wait: true });
    expect(res.statusCode).toBe(504);
    expect(res.json()).toMatchObject({ error: { code: 'TIMEOUT', details: { correlation_id: 'evt_1' } } });
  });

  it('makes a replay of a waited original wait, and does not count a replay as accepted', async () => {
    let waited = 0;
    const h = await harness({
      submit: async (input) => ({
        replay: true,
        eventId: 'evt_orig',
        sessionKey: input.sessionKey,
        originalWait: true,
      }),
      wait: async () => {
        waited++;
        return turn({ eventId: 'evt_orig', response: 'original' });
      },
    });
    const res = await post(h.app, { ...message, idempotency_key: 'k' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ correlation_id: 'evt_orig', response: 'original' });
    expect(waited).toBe(1);
    expect(h.accepted()).toBe(0);
  });

  it('refuses at max_pending with 429 and Retry-After, before intake', async () => {
    const h = await harness({ maxPending: 1 });
    expect((await post(h.app, message)).statusCode).toBe(202);
    const res = await post(h.app, message);
    expect(res.statusCode).toBe(429);
    expect(res.headers['retry-after']).toBe('5');
    expect(res.json()).toMatchObject({ error: { code: 'RATE_LIMITED', details: { max_pending: 1 } } });
    expect(h.submitted).toHaveLength(1);
  });

  it('answers 403 from the identity check before anything is submitted', async () => {
    const h = await harness({
      checkIdentity: async ({ platform, userId }) => {
        throw errors.forbidden(`user ${platform}:${userId} is not authorised`);
      },
    });
    const res = await post(h.app, message);
    expect(res.statusCode).toBe(403);
    expect(res.json()).toMatchObject({ error: { code: 'FORBIDDEN', message: 'user webhook:u1 is not authorised' } });
    expect(h.submitted).toHaveLength(0);
  });

  it('checks the signature before parsing: an unsigned invalid body is 401, a signed one 400', async () => {
    const h = await harness();
    const unsigned = await h.app.inject({ method: 'POST', url: '/hook', payload: '{nope' });
    expect(unsigned.statusCode).toBe(401);
    const signed = await post(h.app, '{nope');
    expect(signed.statusCode).toBe(400);
    expect(signed.json()).toMatchObject({ error: { code: 'BAD_REQUEST', message: 'invalid JSON body' } });
  });

  it('answers 503 while the gateway drains, health included', async () => {
    const h = await harness({ draining: true });
    const res = await post(h.app, message);
    expect(res.statusCode).toBe(503);
    expect(res.json()).toMatchObject({ error: { code: 'UNAVAILABLE', message: 'gateway is shutting down' } });
    expect(h.submitted).toHaveLength(0);
    expect((await h.app.inject({ method: 'GET', url: '/hook/health' })).statusCode).toBe(503);
  });

  it('never logs the secret or the signature', async () => {
    const h = await harness();
    const signature = signXSignature('wrong', JSON.stringify(message));
    const res = await post(h.app, message, { 'x-signature': signature });
    expect(res.statusCode).toBe(401);
    const logged = h.logs.join('\n');
    expect(logged).toContain('webhook signature rejected');
    expect(logged).not.toContain(SECRET);
    expect(logged).not.toContain(signature.slice('sha256='.length));
  });

  it('sets X-Request-Id on every answer, echoing a valid client id', async () => {
    const h = await harness();
    const echoed = await post(h.app, message, { 'x-request-id': 'client-id-1' });
    expect(echoed.headers['x-request-id']).toBe('client-id-1');
    const notFound = await h.app.inject({ method: 'GET', url: '/elsewhere' });
    expect(notFound.statusCode).toBe(404);
    expect(notFound.headers['x-request-id']).toMatch(/^req_/);
    expect(notFound.json()).toMatchObject({
      error: { code: 'NOT_FOUND', request_id: notFound.headers['x-request-id'] },
    });
    const tooLarge = await post(h.app, { ...message, text: 'x'.repeat(2000) });
    expect(tooLarge.statusCode).toBe(413);
    expect(tooLarge.headers['x-request-id']).toMatch(/^req_/);
    expect(tooLarge.json()).toMatchObject({ error: { code: 'PAYLOAD_TOO_LARGE' } });
    const health = await h.app.inject({ method: 'GET', url: '/hook/health' });
    expect(health.json()).toEqual({ status: 'ok' });
    expect(health.headers['x-request-id']).toMatch(/^req_/);
  });
});
