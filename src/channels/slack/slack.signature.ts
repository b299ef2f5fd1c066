import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * Slack's request signing (Events API over HTTP): `X-Slack-Signature:
 * v0=<hex>` is HMAC-SHA256 with the signing secret over
 * `v0:{X-Slack-Request-Timestamp}:{raw body}`. Pure: no I/O, the clock is
 * passed in. Reasons never carry the secret or a signature.
 */

export const SLACK_SIGNATURE_HEADER = 'x-slack-signature';
export const SLACK_TIMESTAMP_HEADER = 'x-slack-request-timestamp';
/** How far (either way) the request timestamp may be from the clock: Slack's five minutes. */
export const SLACK_TOLERANCE_SECONDS = 300;

const SIGNATURE = /^v0=([0-9a-f]{64})$/;
const UNIX_SECONDS = /^\d{1,15}$/;

/** Request headers as Node gives them (lower-case names). */
export type SlackHeaders = Record<string, string | string[] | undefined>;

/** The outcome of a check: ok, or the reason it failed (for the log). */
export type SlackVerdict = { ok: true } | { ok: false; reason: string };

function single(value: string | string[] | undefined): string | null {
  return typeof value === 'string' ? value : null;
}

/**
 * The checks that need no body: both headers present and well formed, the
 * timestamp within {@link SLACK_TOLERANCE_SECONDS} of `nowMs`. A request
 * failing them is refused before its body is read.
 */
export function checkSlackHeaders(headers: SlackHeaders, nowMs: number): SlackVerdict {
  const signature = single(headers[SLACK_SIGNATURE_HEADER]);
  const timestamp = single(headers[SLACK_TIMESTAMP_HEADER]);
  if (signature === null || timestamp === null) return { ok: false, reason: 'missing signature' };
  if (!SIGNATURE.test(signature)) return { ok: false, reason: 'malformed signature' };
  if (!UNIX_SECONDS.test(timestamp)) return { ok: false, reason: 'malformed timestamp' };
  if (Math.abs(nowMs / 1000 - Number(timestamp)) > SLACK_TOLERANCE_SECONDS) {
    return { ok: false, reason: 'stale timestamp' };
  }
  return { ok: true };
}

/** `v0=<hex>` of a body signed at `timestamp` (unix seconds) with `secret`. */
export function signSlackRequest(secret: string, timestamp: string | number, body: Buffer | string): string {
  const hmac = createHmac('sha256', secret);
  hmac.update(`v0:${timestamp}:`);
  hmac.update(body);
  return `v0=${hmac.digest('hex')}`;
}

/**
 * Verifies a request over its raw bytes, before anything parses them: the
 * header checks, then the HMAC compared in constant time. A null or empty
 * secret refuses every request.
 */
export function verifySlackRequest(input: {
  secret: string | null;
  headers: SlackHeaders;
  body: Buffer;
  nowMs: number;
}): SlackVerdict {
  if (!input.secret) return { ok: false, reason: 'no signing secret configured' };
  const headers = checkSlackHeaders(input.headers, input.nowMs);
  if (!headers.ok) return headers;
  const given = SIGNATURE.exec(single(input.headers[SLACK_SIGNATURE_HEADER])!)![1]!;
  const timestamp = single(input.headers[SLACK_TIMESTAMP_HEADER])!;
  const expected = signSlackRequest(input.secret, timestamp, input.body).slice(3);
  // Both are 64 hex digits (the pattern above), so the buffers have equal lengths.
  if (!timingSafeEqual(Buffer.from(given, 'hex'), Buffer.from(expected, 'hex'))) {
    return { ok: false, reason: 'wrong signature' };
  }
  return { ok: true };
}
