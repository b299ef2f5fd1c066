/**
 * The webhook server against hostile input over real sockets (issue 10,
 * ADR 0013): bounded JSON, a missing signature refused from the headers,
 * oversized and chunked uploads always answered, protocol errors in the
 * envelope. The message path is a fake that must never be reached.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { rawExchange } from '../../../test/helpers/raw-http.js';
import { ManualClock } from '../../lib/clock.js';
import { createLogger } from '../../logs/index.js';
import { PendingTurns } from './webhook.pending.js';
import { buildWebhookServer, type WebhookServer } from './webhook.server.js';
import { signXSignature } from './webhook.signature.js';

const SECRET = 'limits-secret';
const MAX_BODY = 64 * 1024;

let app: WebhookServer;
let port: number;
let submitted: number;

async function start(secret: string | null): Promise<void> {
  submitted = 0;
  app = buildWebhookServer({
    path: '/hook',
    secret,
    maxBodyBytes: MAX_BODY,
    waitTimeoutMs: 1_000,
    clock: new ManualClock(Date.UTC(2026, 10, 21)),
    logger: createLogger({ level: 'error', stdout: { write: () => undefined } }),
    messages: {
      submit: async (inbound) => {
        submitted++;
        return { eventId: 'evt_1', sessionKey: inbound.sessionKey, replay: false, answer: 'ack' };
      },
      waitFor: async () => null,
    },
    loopbackTrusted: () => false,
    pending: new PendingTurns({ limit: 10, watch: () => new Promise(() => undefined), onWatchError: () => undefined }),
    onAccepted: () => undefined,
    isDraining: () => false,
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  port = (app.server.address() as { port: number }).port;
}

afterEach(async () => {
  await app.close();
});

/** The envelope of an answer, checked for shape and request id. */
function envelope(answer: { status: number | null; headers: Record<string, string>; body: string }) {
  const error = (
    JSON.parse(answer.body) as { error: { code: string; message: string; details: unknown; request_id: string } }
  ).error;
  expect(error.request_id).toBe(answer.headers['x-request-id']);
  expect(error.request_id).toMatch(/\S/);
  expect(error).toHaveProperty('details');
  return error;
}

describe('webhook server: hostile input', () => {
  describe('with a secret', () => {
    beforeEach(() => start(SECRET));

    const signed = (payload: string) => ({
      method: 'POST' as const,
      url: '/hook',
      headers: { 'content-type': 'application/json', 'x-signature': signXSignature(SECRET, payload) },
      payload,
    });

    it('refuses a signed body nested deeper than the bound with 400, before validation', async () => {
      const payload = `{"sender_id":"u","chat_id":"c","text":"x","extra":${'['.repeat(5_000)}${']'.repeat(5_000)}}`;
      const res = await app.inject(signed(payload));
      expect(res.statusCode).toBe(400);
      expect(res.json()).toMatchObject({
        error: { code: 'BAD_REQUEST', message: 'JSON is nested deeper than 64 levels', details: { max_depth: 64 } },
      });
      expect(submitted).toBe(0);
    });

    it('refuses a signed body with a __proto__ key with 400', async () => {
      const payload = '{"sender_id":"u","chat_id":"c","text":"x","__proto__":{"wait":true}}';
      const res = await app.inject(signed(payload));
      expect(res.statusCode).toBe(400);
      expect(res.json()).toMatchObject({ error: { code: 'BAD_REQUEST', details: { key: '__proto__' } } });
      expect(submitted).toBe(0);
    });

    it('refuses a request without a signature header from its headers alone: 401 before the body is sent', async () => {
      // The client announces a body it never sends: only an answer from the headers can arrive.
      const answer = await rawExchange(
        port,
        'POST /hook HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 50000\r\n\r\n',
        { timeoutMs: 3_000 },
      );
      expect(answer.status, answer.raw.slice(0, 200)).toBe(401);
      expect(envelope(answer)).toMatchObject({ code: 'UNAUTHORIZED', message: 'missing or invalid webhook signature' });
      expect(submitted).toBe(0);
    });

    it('answers a chunked unsigned upload far over the cap with 401, and the client can write it all', async () => {
      const answer = await rawExchange(
        port,
        'POST /hook HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n',
        { upload: { chunkBytes: 64 * 1024, totalBytes: 4 * 1024 * 1024 } },
      );
      expect(answer.error, answer.raw.slice(0, 200)).toBeNull();
      expect(answer.status).toBe(401);
      expect(answer.headers.connection).toBe('close');
      envelope(answer);
    });

    it('answers a chunked signed upload over the cap with 413, and the client can write it all', async () => {
      const answer = await rawExchange(
        port,
        'POST /hook HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n' +
          `X-Signature: ${signXSignature(SECRET, 'x')}\r\nTransfer-Encoding: chunked\r\n\r\n`,
        { upload: { chunkBytes: 64 * 1024, totalBytes: 4 * 1024 * 1024 } },
      );
      expect(answer.error, answer.raw.slice(0, 200)).toBeNull();
      expect(answer.status).toBe(413);
      expect(envelope(answer)).toMatchObject({ code: 'PAYLOAD_TOO_LARGE', details: { max_bytes: MAX_BODY } });
      expect(answer.headers.connection).toBe('close');
    });
  });

  describe('without a secret', () => {
    beforeEach(() => start(null));

    it('answers a chunked upload over the cap with 413, and the client can write it all', async () => {
      const answer = await rawExchange(
        port,
        'POST /hook HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n',
        { upload: { chunkBytes: 64 * 1024, totalBytes: 4 * 1024 * 1024 } },
      );
      expect(answer.error, answer.raw.slice(0, 200)).toBeNull();
      expect(answer.status).toBe(413);
      expect(envelope(answer).code).toBe('PAYLOAD_TOO_LARGE');
    });

    it.each([
      [
        'a malformed header line',
        'POST /hook HTTP/1.1\r\nHost: 127.0.0.1\r\nBad Header Line\r\n\r\n',
        'malformed HTTP request',
      ],
      [
        'oversized headers',
        `GET /hook/health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`,
        'request headers too large',
      ],
      ['no Host header', 'GET /hook/health HTTP/1.1\r\n\r\n', 'missing Host header'],
    ])('answers %s with 400 in the envelope, with X-Request-Id', async (_label, head, message) => {
      const answer = await rawExchange(port, head, { timeoutMs: 3_000 });
      expect(answer.status, answer.raw.slice(0, 300)).toBe(400);
      expect(answer.headers['content-type']).toMatch(/^application\/json/);
      expect(envelope(answer)).toMatchObject({ code: 'BAD_REQUEST', message });
    });

    it('still serves HTTP/1.0 without Host', async () => {
      const answer = await rawExchange(port, 'GET /hook/health HTTP/1.0\r\n\r\n', { timeoutMs: 3_000 });
      expect(answer.status).toBe(200);
      expect(JSON.parse(answer.body)).toEqual({ status: 'ok' });
    });
  });
});
