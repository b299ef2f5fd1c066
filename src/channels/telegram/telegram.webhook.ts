import { createHash, timingSafeEqual } from 'node:crypto';
import { parseJsonBounded } from '../../lib/json.js';

/** The header Telegram sends with every webhook delivery when `setWebhook` was given a `secret_token`. */
export const TELEGRAM_SECRET_HEADER = 'x-telegram-bot-api-secret-token';

/**
 * The webhook path of a bot on the webhook server's port: `/telegram/<bot id>`
 * (the id is the public part of the token before `:`; the secret part never
 * appears in a URL). Register it with `setWebhook` and the same secret.
 */
export function telegramWebhookPath(botToken: string): string {
  const id = /^(\d+):/.exec(botToken)?.[1] ?? 'bot';
  return `/telegram/${id}`;
}

/** Constant-time comparison of the secret header with the configured secret (digests: equal lengths). */
export function secretMatches(given: string | string[] | undefined, secret: string): boolean {
  if (typeof given !== 'string') return false;
  const a = createHash('sha256').update(given).digest();
  const b = createHash('sha256').update(secret).digest();
  return timingSafeEqual(a, b);
}

/** An answer of the webhook handler, framework-free. */
export interface WebhookAnswer {
  status: number;
  body: { ok: boolean; error?: string };
}

/**
 * Handles one webhook delivery (framework-free, mounted by the webhook
 * server): the secret header first (constant-time, before the body is
 * parsed: 401), then bounded JSON (400), then `deliver` — which resolves once
 * the update is durably decided (200) and rejects when it could not be
 * decided now (503: Telegram delivers it again).
 */
export async function handleTelegramWebhook(
  request: { headers: Record<string, string | string[] | undefined>; body: Buffer | string },
  options: { secret: string | null; deliver: ((update: unknown) => Promise<void>) | null },
): Promise<WebhookAnswer> {
  if (!options.secret || !secretMatches(request.headers[TELEGRAM_SECRET_HEADER], options.secret)) {
    return { status: 401, body: { ok: false, error: 'bad secret token' } };
  }
  const text = typeof request.body === 'string' ? request.body : request.body.toString('utf8');
  const parsed = parseJsonBounded(text);
  if (!parsed.ok || typeof parsed.value !== 'object' || parsed.value === null) {
    return { status: 400, body: { ok: false, error: 'body must be one Telegram update (JSON object)' } };
  }
  if (!options.deliver) return { status: 503, body: { ok: false, error: 'channel not running' } };
  try {
    await options.deliver(parsed.value);
    return { status: 200, body: { ok: true } };
  } catch {
    return { status: 503, body: { ok: false, error: 'not accepted now; deliver again' } };
  }
}
