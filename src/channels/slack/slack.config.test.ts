import { describe, expect, it } from 'vitest';
import { applyEnvironment } from '../../config/config.load.js';
import { REDACTED, redactConfig, SECRET_PATHS } from '../../config/config.redact.js';
import { defaultConfig, validateConfig } from '../../config/config.schema.js';

const env = { SLACK_BOT_TOKEN: 'xoxb-1', SLACK_SIGNING_SECRET: 'sig-1', SLACK_APP_TOKEN: 'xapp-1' };

/** `channels.slack` exactly as DECISIONS §16, its environment default and its secrets. */
describe('channels.slack config', () => {
  it('defaults: off, no secrets, /slack/events, groups off', () => {
    expect(defaultConfig().channels.slack).toEqual({
      enabled: false,
      bot_token: null,
      signing_secret: null,
      app_token: null,
      events_path: '/slack/events',
      api_url: null,
      groups: false,
    });
  });

  it('SLACK_BOT_TOKEN and SLACK_SIGNING_SECRET enable the channel when the file has no slack block', () => {
    const raw: Record<string, unknown> = {};
    applyEnvironment(raw, env);
    const result = validateConfig(raw);
    expect(result.ok && result.config.channels.slack).toMatchObject({
      enabled: true,
      bot_token: 'xoxb-1',
      signing_secret: 'sig-1',
      app_token: 'xapp-1',
    });
    // One of the two alone does not.
    const half: Record<string, unknown> = {};
    applyEnvironment(half, { SLACK_BOT_TOKEN: 'xoxb-1' });
    const halfResult = validateConfig(half);
    expect(halfResult.ok && halfResult.config.channels.slack.enabled).toBe(false);
  });

  it('a slack block in the file keeps its values; the variables only fill unset secrets', () => {
    const raw: Record<string, unknown> = {
      channels: { slack: { enabled: false, signing_secret: 'file', groups: true } },
    };
    applyEnvironment(raw, env);
    const result = validateConfig(raw);
    expect(result.ok && result.config.channels.slack).toMatchObject({
      enabled: false,
      bot_token: 'xoxb-1',
      signing_secret: 'file',
      app_token: 'xapp-1',
      groups: true,
    });
  });

  it('refuses unknown keys, a relative path and a non-URL api_url', () => {
    expect(validateConfig({ channels: { slack: { token: 'x' } } }).ok).toBe(false);
    expect(validateConfig({ channels: { slack: { events_path: 'slack/events' } } }).ok).toBe(false);
    expect(validateConfig({ channels: { slack: { api_url: 'not a url' } } }).ok).toBe(false);
  });

  it('redacts the bot token, the signing secret and the app token', () => {
    expect(SECRET_PATHS).toEqual(
      expect.arrayContaining(['channels.slack.bot_token', 'channels.slack.signing_secret', 'channels.slack.app_token']),
    );
    const config = defaultConfig();
    config.channels.slack = { ...config.channels.slack, bot_token: 'xoxb-1', signing_secret: 's', app_token: 'xapp-1' };
    const redacted = redactConfig(config) as { channels: { slack: Record<string, unknown> } };
    expect(redacted.channels.slack).toMatchObject({
      bot_token: REDACTED,
      signing_secret: REDACTED,
      app_token: REDACTED,
    });
  });
});
