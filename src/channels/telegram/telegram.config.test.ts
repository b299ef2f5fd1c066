import { describe, expect, it } from 'vitest';
import { applyEnvironment } from '../../config/config.load.js';
import { REDACTED, redactConfig, SECRET_PATHS } from '../../config/config.redact.js';
import { defaultConfig, validateConfig } from '../../config/config.schema.js';

/** `channels.telegram` exactly as DECISIONS §16, its environment default and its secrets. */
describe('channels.telegram config', () => {
  it('defaults: off, polling, no secrets, groups off', () => {
    expect(defaultConfig().channels.telegram).toEqual({
      enabled: false,
      bot_token: null,
      mode: 'polling',
      webhook_secret: null,
      api_root: null,
      groups: false,
    });
  });

  it('TELEGRAM_BOT_TOKEN enables the channel when the file has no telegram block', () => {
    const raw: Record<string, unknown> = {};
    applyEnvironment(raw, { TELEGRAM_BOT_TOKEN: '1:abc' });
    const result = validateConfig(raw);
    expect(result.ok && result.config.channels.telegram).toMatchObject({ enabled: true, bot_token: '1:abc' });
  });

  it('a telegram block in the file keeps its enabled; the variable only fills an unset token', () => {
    const raw: Record<string, unknown> = { channels: { telegram: { enabled: false, groups: true } } };
    applyEnvironment(raw, { TELEGRAM_BOT_TOKEN: '1:abc' });
    const result = validateConfig(raw);
    expect(result.ok && result.config.channels.telegram).toMatchObject({
      enabled: false,
      bot_token: '1:abc',
      groups: true,
    });
    const own: Record<string, unknown> = { channels: { telegram: { bot_token: '2:file' } } };
    applyEnvironment(own, { TELEGRAM_BOT_TOKEN: '1:abc' });
    expect((own.channels as { telegram: { bot_token: string } }).telegram.bot_token).toBe('2:file');
  });

  it('refuses unknown keys and modes', () => {
    expect(validateConfig({ channels: { telegram: { mode: 'push' } } }).ok).toBe(false);
    expect(validateConfig({ channels: { telegram: { token: 'x' } } }).ok).toBe(false);
    expect(validateConfig({ channels: { telegram: { api_root: 'not a url' } } }).ok).toBe(false);
  });

  it('redacts the bot token and the webhook secret', () => {
    expect(SECRET_PATHS).toEqual(
      expect.arrayContaining(['channels.telegram.bot_token', 'channels.telegram.webhook_secret']),
    );
    const config = defaultConfig();
    config.channels.telegram.bot_token = '1:abc';
    config.channels.telegram.webhook_secret = 'hook';
    const redacted = redactConfig(config);
    expect(redacted.channels.telegram.bot_token).toBe(REDACTED);
    expect(redacted.channels.telegram.webhook_secret).toBe(REDACTED);
  });
});
