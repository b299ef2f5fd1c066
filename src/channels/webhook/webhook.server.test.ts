import { afterEach, describe, expect, it } from 'vitest';
import { errors, IdempotencyConflictError } from '../../http/errors.js';
import {
  contentFingerprint,
  deriveEventId,
  fingerprint,
  resolveKey,
  scopeId,
  webhookScope,
} from '../../idempotency/index.js';
import { ManualClock } from '../../lib/clock.js';
import { createLogger } from '../../logs/index.js';
import type { IdentityCheck } from '../../security/identity.js';
import { StoreUnavailableError } from '../../store/index.js';
import type { Inbound, Submitted, TurnRecord } from '../../turns/index.js';
import { PendingTurns, QUEUE_FULL_RETRY_AFTER_SECONDS } from './webhook.pending.js';
import { buildWebhookServer, type WebhookServer } from './webhook.server.js';
import { signStandardWebhook, signXSignature } from './webhook.signature.js';

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

/** What the identity check is asked for one message. */
type IdentityQuestion = Parameters<IdentityCheck>[0];

interface Harness {
  app: WebhookServer;
  clock: ManualClock;
  pending: PendingTurns;
  /** Every message the server handed to the message path. */
  submitted: Inbound[];
  /** The messages that passed the identity check and the admission (`max_pending`), in order. */
  admitted: Inbound[];
  /** What the identity check was asked, in order. */
  identities: IdentityQuestion[];
  logs: string[];
  accepted: () => number;
}

let current: Harness | null = null;
afterEach(async () => {
  await current?.app.close();
  current = null;
});

/** The webhook scope's stored string of a message (what the message path keys it by). */
const scopeOf = (inbound: Inbound): string => scopeId(webhookScope(inbound.userId, inbound.chatId));

/** The key the message path resolves for a message (spec rules 1–2, the `webhook-id` fallback), or undefined. */
const keyOf = (inbound: Inbound): string | undefined =>
  inbound.idempotency ? resolveKey(inbound.idempotency) : undefined;

/** The event id a keyed message derives (what its admission is asked with), or null without a key. */
function derivedEventIdOf(inbound: Inbound): string | null {
  const key = keyOf(inbound);
  return key === undefined ? null : deriveEventId(scopeOf(inbound), key);
}

/** A new message, acknowledged or waited for as the request asks. */
const acceptNew = async (inbound: Inbound): Promise<Submitted> => ({
  eventId: 'evt_1',
  sessionKey: inbound.sessionKey,
  replay: false,
  answer: inbound.wait ? 'result' : 'ack',
});

/**
 * The webhook server over a fake message path. Its `submit` runs the steps
 * the real one runs before the ledger — the identity check, the key rules,
 * the admission (`max_pending`: a slot held by a new turn, given back by a
 * replay or a failure) — then answers as `script.submit` says; `waitFor`
 * answers as `script.wait` says.
 */
async function harness(
  script: {
    submit?: (inbound: Inbound) => Promise<Submitted>;
    wait?: () => Promise<TurnRecord | null>;
    checkIdentity?: IdentityCheck;
    maxPending?: number;
    draining?: boolean;
  } = {},
): Promise<Harness> {
  const submitted: Inbound[] = [];
  const admitted: Inbound[] = [];
  const identities: IdentityQuestion[] = [];
  const logs: string[] = [];
  let accepted = 0;
  const clock = new ManualClock();
  const pending = new PendingTurns({
    limit: script.maxPending ?? 10,
    watch: () => new Promise(() => undefined),
    onWatchError: () => undefined,
  });
  const checkIdentity: IdentityCheck = script.checkIdentity ?? (async () => undefined);
  const answer = script.submit ?? acceptNew;
  const app = buildWebhookServer({
    path: '/hook',
    secret: SECRET,
    maxBodyBytes: 1024,
    waitTimeoutMs: 1000,
    clock,
    logger: createLogger({ level: 'debug', stdout: { write: (line) => void logs.push(line) } }),
    messages: {
      submit: async (inbound) => {
        submitted.push(inbound);
        if (inbound.identity !== 'skip') {
          const question: IdentityQuestion = {
            platform: inbound.platform,
            userId: inbound.userId,
            loopbackTrusted: inbound.identity.loopbackTrusted,
            ip: inbound.identity.ip,
          };
          identities.push(question);
          await checkIdentity(question);
        }
        const slot = inbound.admission?.admit(derivedEventIdOf(inbound));
        try {
          admitted.push(inbound);
          const result = await answer(inbound);
          if (result.replay) slot?.release();
          else slot?.hold(result.eventId);
          return result;
        } catch (err) {
          slot?.release();
          throw err;
        }
      },
      waitFor: script.wait ?? (async () => turn({})),
    },
    loopbackTrusted: () => false,
    pending,
    onAccepted: () => void accepted++,
    isDraining: () => script.draining ?? false,
  });
  await app.ready();
  current = { app, clock, pending, submitted, admitted, identities, logs, accepted: () => accepted };
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
    expect(input).toEqual({
      sessionKey: 'gateway:webhook:c1',
      text: 'hello',
      platform: 'webhook',
      userId: 'u1',
      chatId: 'c1',
      channel: 'webhook',
      source: 'webhook',
      principal: null,
      identity: { ip: expect.any(String), loopbackTrusted: false },
      idempotency: { scope: 'webhook', headers: expect.any(Object), field: 'k1', fallback: null },
      trace: expect.any(Object), // the request's headers: traceparent, tracestate (DECISIONS §21)
      wait: false,
      admission: expect.any(Object),
    });
    // What the message path derives from it: the key, the sender + chat scope, the webhook fingerprint.
    expect(keyOf(input)).toBe('k1');
    expect(scopeOf(input)).toBe('webhook|["u1","c1"]');
    expect(contentFingerprint(input.idempotency!.scope, input)).toBe(
      fingerprint({ sender_id: 'u1', chat_id: 'c1', text: 'hello' }),
    );
    expect(h.accepted()).toBe(1);
  });

  it('keeps the fingerprint independent of wait and of where the key travelled', async () => {
    const h = await harness();
    await post(h.app, { ...message, idempotency_key: 'k1' });
    await post(h.app, { ...message, wait: true }, { 'x-idempotency-key': 'k1' });
    const [body, header] = h.submitted;
    expect(body!.idempotency).toMatchObject({ scope: 'webhook', field: 'k1' });
    expect(header!.idempotency).toMatchObject({ scope: 'webhook', headers: { 'x-idempotency-key': 'k1' } });
    expect(header!.idempotency!.field).toBeUndefined();
    expect([body!.wait, header!.wait]).toEqual([false, true]);
    expect([keyOf(body!), keyOf(header!)]).toEqual(['k1', 'k1']);
    expect(scopeOf(header!)).toBe(scopeOf(body!));
    const printOf = (inbound: Inbound) => contentFingerprint(inbound.idempotency!.scope, inbound);
    expect(printOf(header!)).toBe(printOf(body!));
    await post(h.app, { ...message, text: 'changed', idempotency_key: 'k1' });
    expect(printOf(h.submitted[2]!)).not.toBe(printOf(body!));
  });

  it('scopes keys unambiguously by sender and chat', async () => {
    const h = await harness();
    await post(h.app, { sender_id: 'a|b', chat_id: 'c', text: 'x', idempotency_key: 'k' });
    await post(h.app, { sender_id: 'a', chat_id: 'b|c', text: 'x', idempotency_key: 'k' });
    const [first, second] = h.submitted;
    expect([first!.userId, first!.chatId]).toEqual(['a|b', 'c']);
    expect([second!.userId, second!.chatId]).toEqual(['a', 'b|c']);
    expect(scopeOf(first!)).not.toBe(scopeOf(second!));
    expect(derivedEventIdOf(first!)).not.toBe(derivedEventIdOf(second!));
  });

  it('hands over the Standard Webhooks webhook-id as the key of last resort', async () => {
    const h = await harness();
    const standard = (body: Record<string, unknown>) => {
      const payload = JSON.stringify(body);
      const seconds = Math.floor(h.clock.now() / 1000);
      return h.app.inject({
        method: 'POST',
        url: '/hook',
        headers: {
          'content-type': 'application/json',
          'webhook-id': 'msg_1',
          'webhook-timestamp': String(seconds),
          'webhook-signature': signStandardWebhook(SECRET, 'msg_1', seconds, payload),
        },
        payload,
      });
    };
    expect((await standard(message)).statusCode).toBe(202);
    expect((await standard({ ...message, idempotency_key: 'k1' })).statusCode).toBe(202);
    const [fallback, explicit] = h.submitted;
    expect(fallback!.idempotency).toMatchObject({
      scope: 'webhook',
      fallback: { value: 'msg_1', where: 'webhook-id' },
    });
    expect(keyOf(fallback!)).toBe('msg_1');
    expect(keyOf(explicit!)).toBe('k1');
    // Signed with X-Signature only: no webhook-id is handed over, the message carries no key.
    await post(h.app, message, { 'webhook-id': 'msg_2' });
    expect(h.submitted[2]!.idempotency!.fallback).toBeNull();
    expect(keyOf(h.submitted[2]!)).toBeUndefined();
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

  it('passes the message path ApiErrors through (e.g. 503 queue full)', async () => {
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
      // The message path answers a retry of a waited original with its result (spec rules 5–6).
      submit: async (inbound) => ({
        eventId: 'evt_orig',
        sessionKey: inbound.sessionKey,
        replay: true,
        answer: 'result',
      }),
      wait: async () => {
        waited++;
        return turn({ eventId: 'evt_orig', response: 'original' });
      },
    });
    const res = await post(h.app, { ...message, idempotency_key: 'k' });
    expect(h.submitted[0]!.wait).toBe(false);
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
    expect(QUEUE_FULL_RETRY_AFTER_SECONDS).toBe(5);
    expect(res.json()).toMatchObject({
      error: { code: 'RATE_LIMITED', details: { max_pending: 1, retry_after_seconds: 5 } },
    });
    expect(h.submitted).toHaveLength(2);
    expect(h.admitted).toHaveLength(1);
    expect(h.pending.inUse).toBe(1);
  });

  it('lets a retry of a turn still pending through a full queue (a replay adds nothing)', async () => {
    const originals = new Map<string, string>();
    const h = await harness({
      maxPending: 1,
      // Keyed messages as the message path answers them: the derived event id, a replay for a known key.
      submit: async (inbound) => {
        const eventId = derivedEventIdOf(inbound)!;
        const replay = originals.has(eventId);
        originals.set(eventId, eventId);
        return { eventId, sessionKey: inbound.sessionKey, replay, answer: 'ack' };
      },
    });
    const first = await post(h.app, { ...message, idempotency_key: 'k1' });
    expect(first.statusCode).toBe(202);
    const retry = await post(h.app, { ...message, idempotency_key: 'k1' });
    expect(retry.statusCode).toBe(202);
    expect(retry.json()).toEqual(first.json());
    expect(h.accepted()).toBe(1);
    expect(h.pending.inUse).toBe(1);
    const other = await post(h.app, { ...message, idempotency_key: 'k2' });
    expect(other.statusCode).toBe(429);
    expect(h.admitted).toHaveLength(2);
  });

  it('answers 403 from the identity check before a slot is taken or anything is accepted', async () => {
    const h = await harness({
      checkIdentity: async ({ platform, userId }) => {
        throw errors.forbidden(`user ${platform}:${userId} is not authorised`);
      },
    });
    const res = await post(h.app, message);
    expect(res.statusCode).toBe(403);
    expect(res.json()).toMatchObject({ error: { code: 'FORBIDDEN', message: 'user webhook:u1 is not authorised' } });
    expect(h.identities).toEqual([{ platform: 'webhook', userId: 'u1', loopbackTrusted: false, ip: '127.0.0.1' }]);
    expect(h.admitted).toHaveLength(0);
    expect(h.pending.inUse).toBe(0);
  });

  it('checks the signature before parsing: an unsigned invalid body is 401, a signed one 400', async () => {
    const h = await harness();
    const unsigned = await h.app.inject({ method: 'POST', url: '/hook', payload: '{nope' });
    expect(unsigned.statusCode).toBe(401);
    const signed = await post(h.app, '{nope');
    expect(signed.statusCode).toBe(400);
    expect(signed.json()).toMatchObject({ error: { code: 'BAD_REQUEST', message: 'invalid JSON body' } });
    expect(h.submitted).toHaveLength(0);
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
