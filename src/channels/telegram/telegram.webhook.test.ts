import { describe, expect, it } from 'vitest';
import {
  handleTelegramWebhook,
  secretMatches,
  telegramWebhookPath,
  TELEGRAM_SECRET_HEADER,
} from './telegram.webhook.js';

const update = JSON.stringify({ update_id: 9, message: { message_id: 1, date: 0, chat: { id: 1, type: 'private' } } });

describe('telegram webhook', () => {
  it('serves /telegram/<bot id>: never the secret part of the token', () => {
    expect(telegramWebhookPath('123456:ABC-secret')).toBe('/telegram/123456');
    expect(telegramWebhookPath('123456:ABC-secret')).not.toContain('ABC');
  });

  it('compares the secret header in constant time and refuses other shapes', () => {
    expect(secretMatches('s3cret', 's3cret')).toBe(true);
    expect(secretMatches('s3cre', 's3cret')).toBe(false);
    expect(secretMatches(undefined, 's3cret')).toBe(false);
    expect(secretMatches(['s3cret', 's3cret'], 's3cret')).toBe(false);
  });

  it('checks the secret before parsing: a bad secret with a malformed body is 401, never 400', async () => {
    let delivered = 0;
    const deliver = async () => void delivered++;
    const wrong = await handleTelegramWebhook(
      { headers: { [TELEGRAM_SECRET_HEADER]: 'nope' }, body: '{not json' },
      { secret: 's3cret', deliver },
    );
    expect(wrong.status).toBe(401);
    const malformed = await handleTelegramWebhook(
      { headers: { [TELEGRAM_SECRET_HEADER]: 's3cret' }, body: '{not json' },
      { secret: 's3cret', deliver },
    );
    expect(malformed.status).toBe(400);
    expect(delivered).toBe(0);
  });

  it('answers 200 once the update is accepted, 503 when it could not be (Telegram retries)', async () => {
    const ok = await handleTelegramWebhook(
      { headers: { [TELEGRAM_SECRET_HEADER]: 's3cret' }, body: Buffer.from(update) },
      { secret: 's3cret', deliver: async () => undefined },
    );
    expect(ok).toEqual({ status: 200, body: { ok: true } });
    const down = await handleTelegramWebhook(
      { headers: { [TELEGRAM_SECRET_HEADER]: 's3cret' }, body: update },
      {
        secret: 's3cret',
        deliver: async () => {
          throw new Error('store down');
        },
      },
    );
    expect(down.status).toBe(503);
    const stopped = await handleTelegramWebhook(
      { headers: { [TELEGRAM_SECRET_HEADER]: 's3cret' }, body: update },
      { secret: 's3cret', deliver: null },
    );
    expect(stopped.status).toBe(503);
  });

  it('refuses every delivery when no secret is configured', async () => {
    const res = await handleTelegramWebhook(
      { headers: { [TELEGRAM_SECRET_HEADER]: '' }, body: update },
      { secret: null, deliver: async () => undefined },
    );
    expect(res.status).toBe(401);
  });
});
