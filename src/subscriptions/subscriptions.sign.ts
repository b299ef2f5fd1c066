import { createHmac, randomBytes } from 'node:crypto';

/** The prefix of a Standard Webhooks secret. */
export const SECRET_PREFIX = 'whsec_';

/** A new secret: `whsec_` and 32 random bytes in base64. */
export function newSecret(): string {
  return `${SECRET_PREFIX}${randomBytes(32).toString('base64')}`;
}

/** The key bytes of a secret (its base64 part), or null when it is not a usable `whsec_…` secret. */
export function secretKey(secret: string): Buffer | null {
  if (!secret.startsWith(SECRET_PREFIX)) return null;
  const encoded = secret.slice(SECRET_PREFIX.length);
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(encoded) || encoded.length % 4 !== 0) return null;
  const key = Buffer.from(encoded, 'base64');
  return key.length >= 24 && key.length <= 64 ? key : null;
}

/**
 * The Standard Webhooks headers of one attempt: `webhook-id` (the delivery id, the same on every retry),
 * `webhook-timestamp` (seconds) and `webhook-signature` (`v1,` and the base64 HMAC-SHA256 of
 * `id.timestamp.body` keyed by the secret's base64 part).
 */
export function signedHeaders(input: { id: string; timestampMs: number; body: string; secret: string }): {
  'webhook-id': string;
  'webhook-timestamp': string;
  'webhook-signature': string;
} {
  const key = secretKey(input.secret);
  if (!key) throw new Error('the subscription secret is not a whsec_ secret');
  const timestamp = String(Math.floor(input.timestampMs / 1000));
  const signature = createHmac('sha256', key).update(`${input.id}.${timestamp}.${input.body}`).digest('base64');
  return { 'webhook-id': input.id, 'webhook-timestamp': timestamp, 'webhook-signature': `v1,${signature}` };
}
