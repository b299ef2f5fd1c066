import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * Signature verification of the webhook channel (spec: Webhook channel rules
 * 1–2; DECISIONS §7). Two schemes, both over the raw request bytes and both
 * compared in constant time:
 *
 * - `X-Signature: sha256=<hex>` (or bare `<hex>`): HMAC-SHA256(secret, body).
 * - Standard Webhooks: `webhook-id`, `webhook-timestamp` (unix seconds) and
 *   `webhook-signature: v1,<base64> [v1,<base64> …]` — HMAC-SHA256 over
 *   `${id}.${timestamp}.${body}`; a secret `whsec_<base64>` is that key,
 *   any other secret its UTF-8 bytes; a timestamp more than
 *   {@link TIMESTAMP_TOLERANCE_SECONDS} away from the clock is refused.
 *
 * Pure: no I/O, the clock is passed in. Failure reasons are for the log and
 * the 401 message; they never contain the secret or a signature.
 */

/** Standard Webhooks: how far (either way) `webhook-timestamp` may be from the clock. */
export const TIMESTAMP_TOLERANCE_SECONDS = 300;

/** Prefix of a Standard Webhooks secret whose key is the base64 after it. */
const WHSEC_PREFIX = 'whsec_';
/** HMAC-SHA256 digest length in bytes. */
const DIGEST_BYTES = 32;
const HEX_DIGEST = /^[0-9a-fA-F]{64}$/;
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;
const UNIX_SECONDS = /^\d{1,15}$/;

/** Request headers as Node/Fastify give them (lower-case names). */
export type SignatureHeaders = Record<string, string | string[] | undefined>;

/** Which scheme authenticated a request (`none`: no secret configured, nothing checked). */
export type SignatureScheme = 'x-signature' | 'standard-webhooks' | 'none';

/** The outcome of {@link verifyWebhookSignature}. */
export type SignatureVerdict =
  | {
      ok: true;
      scheme: SignatureScheme;
      /**
       * The Standard Webhooks message id when that scheme was used (verified
       * with a secret, or merely present without one): the idempotency key of
       * last resort (DECISIONS §7).
       */
      webhookId: string | null;
    }
  | { ok: false; reason: string };

/** Input of {@link verifyWebhookSignature}. */
export interface VerifyInput {
  /** The configured secret; null or empty means verification is skipped (spec rule 2). */
  secret: string | null;
  /** The raw request body, exactly as received. */
  body: Buffer;
  headers: SignatureHeaders;
  /** Now, in epoch milliseconds (for the Standard Webhooks timestamp window). */
  nowMs: number;
}

function single(headers: SignatureHeaders, name: string): string | undefined {
  const value = headers[name];
  if (Array.isArray(value)) return value.length === 1 ? value[0] : undefined;
  return value;
}

/** Constant-time equality of a candidate digest with the expected one (equal lengths only reach the compare). */
function digestEquals(expected: Buffer, candidate: Buffer): boolean {
  if (candidate.length !== expected.length) return false;
  return timingSafeEqual(expected, candidate);
}

/** HMAC-SHA256 of `parts` (concatenated) under `key`. */
function hmac(key: Buffer, ...parts: Array<Buffer | string>): Buffer {
  const mac = createHmac('sha256', key);
  for (const part of parts) mac.update(part);
  return mac.digest();
}

/**
 * The key bytes of a secret for Standard Webhooks: `whsec_<base64>` is the
 * decoded base64, anything else its UTF-8 bytes.
 */
export function standardWebhooksKey(secret: string): Buffer {
  if (secret.startsWith(WHSEC_PREFIX)) {
    const encoded = secret.slice(WHSEC_PREFIX.length);
    if (BASE64.test(encoded)) {
      const key = Buffer.from(encoded, 'base64');
      if (key.length > 0) return key;
    }
  }
  return Buffer.from(secret, 'utf8');
}

/** Checks `X-Signature: sha256=<hex>` (or bare hex, any case) against HMAC-SHA256(secret, body). */
function verifyXSignature(secret: string, body: Buffer, header: string): boolean {
  const trimmed = header.trim();
  const hex = trimmed.toLowerCase().startsWith('sha256=') ? trimmed.slice('sha256='.length) : trimmed;
  if (!HEX_DIGEST.test(hex)) return false;
  const expected = hmac(Buffer.from(secret, 'utf8'), body);
  return digestEquals(expected, Buffer.from(hex, 'hex'));
}

/** Checks the Standard Webhooks headers; returns null when valid, else the reason. */
function verifyStandard(
  secret: string,
  body: Buffer,
  id: string,
  timestamp: string | undefined,
  signatures: string | undefined,
  nowMs: number,
): string | null {
  if (timestamp === undefined || signatures === undefined) return 'incomplete Standard Webhooks headers';
  if (!UNIX_SECONDS.test(timestamp.trim())) return 'invalid webhook-timestamp';
  const seconds = Number(timestamp.trim());
  if (Math.abs(nowMs / 1000 - seconds) > TIMESTAMP_TOLERANCE_SECONDS) return 'webhook-timestamp outside the tolerance';
  const expected = hmac(standardWebhooksKey(secret), `${id}.${timestamp.trim()}.`, body);
  let valid = false;
  // Any valid `v1` entry passes; every entry is compared so timing does not reveal which one matched.
  for (const entry of signatures.split(' ')) {
    const comma = entry.indexOf(',');
    if (comma === -1 || entry.slice(0, comma) !== 'v1') continue;
    const encoded = entry.slice(comma + 1);
    if (!BASE64.test(encoded)) continue;
    const candidate = Buffer.from(encoded, 'base64');
    if (candidate.length === DIGEST_BYTES && digestEquals(expected, candidate)) valid = true;
  }
  return valid ? null : 'no valid webhook-signature';
}

/** Whether a request uses the Standard Webhooks headers: a non-empty `webhook-id` and a `webhook-signature`. */
function standardHeaders(headers: SignatureHeaders): { id: string; signature: string } | null {
  const id = single(headers, 'webhook-id');
  const signature = single(headers, 'webhook-signature');
  return id !== undefined && id !== '' && signature !== undefined ? { id, signature } : null;
}

/**
 * True when a secret is set and the request carries no signature at all
 * (neither `X-Signature` nor the Standard Webhooks headers): what
 * {@link verifyWebhookSignature} refuses as "missing signature", decided
 * from the headers alone, before the body is read (ADR 0013).
 */
export function missingSignature(secret: string | null, headers: SignatureHeaders): boolean {
  if (secret === null || secret === '') return false;
  return single(headers, 'x-signature') === undefined && standardHeaders(headers) === null;
}

/**
 * Verifies a webhook request's signature over its raw bytes, before anything
 * parses them. Without a secret every request passes (scheme `none`). With a
 * secret, `X-Signature` and the Standard Webhooks headers are checked when
 * present and any valid one passes; a missing or mismatching signature
 * fails (401 upstream).
 */
export function verifyWebhookSignature(input: VerifyInput): SignatureVerdict {
  const { secret, body, headers, nowMs } = input;
  const standard = standardHeaders(headers);

  if (secret === null || secret === '') {
    return { ok: true, scheme: 'none', webhookId: standard?.id ?? null };
  }

  // Either scheme may authenticate the request: any present, valid signature passes.
  const reasons: string[] = [];
  const xSignature = single(headers, 'x-signature');
  if (xSignature !== undefined) {
    if (verifyXSignature(secret, body, xSignature)) return { ok: true, scheme: 'x-signature', webhookId: null };
    reasons.push('invalid X-Signature');
  }
  if (standard) {
    const problem = verifyStandard(
      secret,
      body,
      standard.id,
      single(headers, 'webhook-timestamp'),
      standard.signature,
      nowMs,
    );
    if (problem === null) return { ok: true, scheme: 'standard-webhooks', webhookId: standard.id };
    reasons.push(problem);
  }
  if (reasons.length > 0) return { ok: false, reason: reasons.join('; ') };
  return { ok: false, reason: 'missing signature' };
}

/** `sha256=<hex>` of HMAC-SHA256(secret, body): what a sender puts in `X-Signature` (tests, clients). */
export function signXSignature(secret: string, body: Buffer | string): string {
  return `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
}

/** The Standard Webhooks `v1,<base64>` signature of a message (tests, clients). */
export function signStandardWebhook(
  secret: string,
  id: string,
  timestampSeconds: number,
  body: Buffer | string,
): string {
  const digest = hmac(standardWebhooksKey(secret), `${id}.${timestampSeconds}.`, body);
  return `v1,${digest.toString('base64')}`;
}
