/**
 * Protocol-level rejections of the API server over real sockets (issue 10,
 * ADR 0013): what Node's HTTP parser refuses before Fastify sees a request
 * still gets the envelope and an X-Request-Id, and an early answer to an
 * upload the server will not read is delivered before the connection closes.
 */
import { describe, expect, it } from 'vitest';
import { useHarness } from '../helpers/harness.js';
import { rawExchange, type RawAnswer } from '../helpers/raw-http.js';

function envelope(answer: RawAnswer) {
  expect(answer.headers['content-type']).toMatch(/^application\/json/);
  const error = (JSON.parse(answer.body) as { error: Record<string, unknown> }).error;
  expect(error.request_id).toBe(answer.headers['x-request-id']);
  expect(String(error.request_id)).toMatch(/^req_[0-9a-f]{32}$/);
  expect(error).toHaveProperty('details');
  return error;
}

describe('API server: protocol errors', () => {
  const t = useHarness({ scope: 'all', config: { gateway: { max_body_bytes: 64 * 1024 } } });
  const port = async (): Promise<number> => Number(new URL(await t.gateway.listen()).port);
  let listening: Promise<number> | undefined;
  const portOnce = () => (listening ??= port());

  it.each([
    [
      'a malformed header line',
      'GET /api/v1/health HTTP/1.1\r\nHost: localhost\r\nBad Header Line\r\n\r\n',
      'malformed HTTP request',
    ],
    [
      'a malformed request line',
      'GET /api/v1/health HTTP/9.9 extra\r\nHost: localhost\r\n\r\n',
      'malformed HTTP request',
    ],
    [
      'oversized headers (431 in HTTP terms)',
      `GET /api/v1/health HTTP/1.1\r\nHost: localhost\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`,
      'request headers too large',
    ],
    ['no Host header', 'GET /api/v1/health HTTP/1.1\r\n\r\n', 'missing Host header'],
  ])('answers %s with 400 BAD_REQUEST in the envelope', async (_label, head, message) => {
    const answer = await rawExchange(await portOnce(), head, { timeoutMs: 3_000 });
    expect(answer.status, answer.raw.slice(0, 300)).toBe(400);
    expect(envelope(answer)).toMatchObject({ code: 'BAD_REQUEST', message });
  });

  it('gives the oversized-header refusal its limit in the details', async () => {
    const head = `GET /api/v1/health HTTP/1.1\r\nHost: localhost\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`;
    const answer = await rawExchange(await portOnce(), head, { timeoutMs: 3_000 });
    expect(envelope(answer).details).toEqual({ max_header_bytes: expect.any(Number) });
  });

  it('still serves HTTP/1.0 without Host', async () => {
    const answer = await rawExchange(await portOnce(), 'GET /api/v1/health HTTP/1.0\r\n\r\n', { timeoutMs: 3_000 });
    expect(answer.status).toBe(200);
  });

  it('answers a chunked upload over max_body_bytes with 413, and the client can write it all', async () => {
    const answer = await rawExchange(
      await portOnce(),
      'POST /api/v1/message HTTP/1.1\r\nHost: localhost\r\nX-API-Token: test-api-token-0123456789\r\n' +
        'Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n',
      { upload: { chunkBytes: 64 * 1024, totalBytes: 4 * 1024 * 1024 } },
    );
    expect(answer.error, answer.raw.slice(0, 200)).toBeNull();
    expect(answer.status).toBe(413);
    expect(answer.headers.connection).toBe('close');
    expect(envelope(answer).code).toBe('PAYLOAD_TOO_LARGE');
  });

  it('answers an unauthenticated upload with 401 without reading it all, then closes', async () => {
    const answer = await rawExchange(
      await portOnce(),
      'POST /api/v1/message HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n',
      { upload: { chunkBytes: 64 * 1024, totalBytes: 4 * 1024 * 1024 } },
    );
    expect(answer.error, answer.raw.slice(0, 200)).toBeNull();
    expect(answer.status).toBe(401);
    expect(answer.headers.connection).toBe('close');
    expect(envelope(answer).code).toBe('UNAUTHORIZED');
  });
});
