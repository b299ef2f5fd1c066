import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, parseArgs } from './config.load.js';
import { REDACTED, redactConfig, SECRET_PATHS, secretValues } from './config.redact.js';
import { defaultConfig, validateConfig } from './config.schema.js';

function dirWith(yaml?: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-config-'));
  if (yaml !== undefined) writeFileSync(join(dir, 'gatehouse.yaml'), yaml);
  return dir;
}

function issuesOf(fn: () => unknown): string[] {
  try {
    fn();
  } catch (err) {
    if (err instanceof ConfigError) return err.issues.map((i) => i.path);
    throw err;
  }
  throw new Error('expected a ConfigError');
}

describe('defaults', () => {
  it('match DECISIONS §1', () => {
    const c = defaultConfig();
    expect(c.gateway).toMatchObject({ host: '127.0.0.1', port: 58123, api_prefix: '/api/v1', max_body_bytes: 1048576 });
    expect(c.gateway.auth).toEqual({
      mode: 'pairing',
      allowed_users: [],
      admin_users: [],
      api_tokens: [],
      admin_tokens: [],
      token_header: 'X-API-Token',
      allowed_origins: [],
      allowed_hosts: [],
      principals: [],
      pairing_ttl_seconds: 300,
      loopback_trust: true,
    });
    expect(c).toMatchObject({ agents: {}, default_agent: null, bindings: [] });
    expect(c.security).toEqual({
      profile: 'standard',
      rate_limits: { read: 120, write: 30, analytics: 10, lifecycle: 5 },
    });
    expect(c.storage).toEqual({ driver: 'sqlite', url: null });
    expect(c.provider).toMatchObject({ type: 'echo', timeout_seconds: 120, pricing: {} });
    expect(c.agent).toEqual({
      system_prompt: null,
      max_tool_iterations: 8,
      max_concurrent_turns: 16,
      max_queued_turns: 10_000,
      approval_required: [],
    });
    expect(c.channels.webhook).toEqual({
      enabled: false,
      host: '0.0.0.0',
      port: 8080,
      path: '/webhook',
      secret: null,
      max_pending: 1000,
      wait_timeout_seconds: 120,
    });
    expect(c.tasks.max_concurrent).toBe(2);
    expect(c.logs).toEqual({ level: 'info', buffer_entries: 10000 });
    expect(c.data_dir).toBe('./data');
  });
});

describe('loading order: defaults ← file ← environment ← flags', () => {
  it('reads ./gatehouse.yaml from the working directory', () => {
    const cwd = dirWith('gateway:\n  port: 4000\n');
    const { config, configPath } = loadConfig({ argv: [], env: {}, cwd });
    expect(config.gateway.port).toBe(4000);
    expect(configPath).toBe(join(cwd, 'gatehouse.yaml'));
    expect(config.data_dir).toBe(join(cwd, 'data'));
  });

  it('lets the environment beat the file and flags beat both', () => {
    const cwd = dirWith('gateway:\n  port: 4000\n  host: 127.0.0.1\n');
    const env = { GATEHOUSE_PORT: '5000', GATEHOUSE_HOST: '127.0.0.2', GATEHOUSE_DATA_DIR: '/tmp/gh-env' };
    expect(loadConfig({ argv: [], env, cwd }).config.gateway.port).toBe(5000);
    const flagged = loadConfig({ argv: ['--port', '6000', '--data-dir=/tmp/gh-flag'], env, cwd }).config;
    expect(flagged.gateway.port).toBe(6000);
    expect(flagged.gateway.host).toBe('127.0.0.2');
    expect(flagged.data_dir).toBe('/tmp/gh-flag');
  });

  it('takes --config over GATEHOUSE_CONFIG', () => {
    const a = dirWith('gateway:\n  port: 1111\n');
    const b = dirWith('gateway:\n  port: 2222\n');
    const env = { GATEHOUSE_CONFIG: join(a, 'gatehouse.yaml') };
    expect(loadConfig({ argv: [], env, cwd: tmpdir() }).config.gateway.port).toBe(1111);
    expect(loadConfig({ argv: ['--config', join(b, 'gatehouse.yaml')], env, cwd: tmpdir() }).config.gateway.port).toBe(
      2222,
    );
  });

  it('fills provider keys and storage from the environment only where the file is silent', () => {
    const cwd = dirWith('provider:\n  type: openai\n  model: gpt-test\n');
    const env = {
      OPENAI_API_KEY: 'sk-env',
      OPENAI_BASE_URL: 'http://127.0.0.1:9/v1',
      DATABASE_URL: 'postgres://u@h/db',
    };
    const { config } = loadConfig({ argv: [], env, cwd });
    expect(config.provider).toMatchObject({ api_key: 'sk-env', base_url: 'http://127.0.0.1:9/v1' });
    expect(config.storage).toEqual({ driver: 'postgres', url: 'postgres://u@h/db' });
    const explicit = dirWith('provider:\n  type: openai\n  api_key: sk-file\nstorage:\n  driver: sqlite\n');
    const second = loadConfig({ argv: [], env, cwd: explicit }).config;
    expect(second.provider.api_key).toBe('sk-file');
    expect(second.storage.driver).toBe('sqlite');
  });

  it('selects the provider from the environment only when the file has no provider block, and says why', () => {
    const openai = loadConfig({
      argv: [],
      env: { OPENAI_API_KEY: 'sk-env', OPENAI_BASE_URL: 'http://127.0.0.1:9/v1', ANTHROPIC_API_KEY: 'sk-ant' },
      cwd: dirWith(),
    });
    expect(openai.config.provider).toMatchObject({
      type: 'openai',
      api_key: 'sk-env',
      base_url: 'http://127.0.0.1:9/v1',
    });
    expect(openai).toMatchObject({ providerSource: 'environment', providerVariable: 'OPENAI_API_KEY' });
    expect(openai.fileObject).toEqual({}); // nothing of the environment reaches what a write back would save

    const anthropic = loadConfig({ argv: [], env: { ANTHROPIC_API_KEY: 'sk-ant' }, cwd: dirWith('gateway: {}\n') });
    expect(anthropic.config.provider).toMatchObject({ type: 'anthropic', api_key: 'sk-ant' });
    expect(anthropic).toMatchObject({ providerSource: 'environment', providerVariable: 'ANTHROPIC_API_KEY' });

    const none = loadConfig({ argv: [], env: {}, cwd: dirWith() });
    expect(none.config.provider.type).toBe('echo');
    expect(none).toMatchObject({ providerSource: 'default', providerVariable: null });
  });

  it('never switches a provider block of the file from the environment', () => {
    const env = { OPENAI_API_KEY: 'sk-env', ANTHROPIC_API_KEY: 'sk-ant' };
    const echo = loadConfig({ argv: [], env, cwd: dirWith('provider:\n  type: echo\n') });
    expect(echo.config.provider).toMatchObject({ type: 'echo', api_key: null });
    expect(echo.providerSource).toBe('file');
    const anthropic = loadConfig({ argv: [], env, cwd: dirWith('provider:\n  type: anthropic\n') });
    expect(anthropic.config.provider).toMatchObject({ type: 'anthropic', api_key: 'sk-ant' });
    expect(anthropic.providerSource).toBe('file');
    // A block without a type keeps the default type: the environment fills keys, it never picks the type.
    const untyped = loadConfig({ argv: [], env, cwd: dirWith('provider:\n  timeout_seconds: 30\n') });
    expect(untyped.config.provider).toMatchObject({ type: 'echo', api_key: null, timeout_seconds: 30 });
    expect(untyped.providerSource).toBe('default');
  });
});

describe('errors: every offending path at once, start-up refused', () => {
  it('lists unknown keys and wrong types by dotted path', () => {
    const cwd = dirWith(
      'gateway:\n  bogus_key: 1\n  port: "80"\n  auth:\n    mode: everyone\nsecurity:\n  rate_limits:\n    read: true\nextra: 1\n',
    );
    expect(issuesOf(() => loadConfig({ argv: [], env: {}, cwd })).sort()).toEqual([
      'extra',
      'gateway.auth.mode',
      'gateway.bogus_key',
      'gateway.port',
      'security.rate_limits.read',
    ]);
  });

  it('an unknown key that is near a known one says which (did you mean …?)', () => {
    const cwd = dirWith(
      'gatway:\n  port: 1\ngateway:\n  prot: 2\n  auth:\n    mdoe: open\nlimits:\n  overload:\n    memory_watermark: 3\nzzz: 1\n',
    );
    let messages: string[] = [];
    try {
      loadConfig({ argv: [], env: {}, cwd });
    } catch (err) {
      messages = (err as ConfigError).issues.map((i) => `${i.path}: ${i.message}`).sort();
    }
    expect(messages).toEqual([
      'gateway.auth.mdoe: unknown key (did you mean mode?)',
      'gateway.prot: unknown key (did you mean port?)',
      'gatway: unknown key (did you mean gateway?)',
      'limits.overload.memory_watermark: unknown key (did you mean memory_watermark_mb?)',
      'zzz: unknown key',
    ]);
  });

  it('reports a bad value from the environment at its config path', () => {
    expect(issuesOf(() => loadConfig({ argv: [], env: { GATEHOUSE_PORT: 'eighty' }, cwd: dirWith() }))).toEqual([
      'gateway.port',
    ]);
    expect(issuesOf(() => loadConfig({ argv: ['--port', '70000'], env: {}, cwd: dirWith() }))).toEqual([
      'gateway.port',
    ]);
  });

  it('refuses unknown flags, a missing --config file and YAML that is not a mapping', () => {
    expect(() => parseArgs(['--bogus'])).toThrow(ConfigError);
    expect(() => parseArgs(['--port'])).toThrow(ConfigError);
    expect(issuesOf(() => loadConfig({ argv: ['--config', '/nonexistent/x.yaml'], env: {}, cwd: tmpdir() }))).toEqual([
      '(file)',
    ]);
    expect(issuesOf(() => loadConfig({ argv: [], env: {}, cwd: dirWith('- a\n- b\n') }))).toEqual(['(root)']);
    expect(issuesOf(() => loadConfig({ argv: [], env: {}, cwd: dirWith('gateway: [\n') }))).toEqual(['(file)']);
  });

  it('treats an empty file as all defaults', () => {
    expect(loadConfig({ argv: [], env: {}, cwd: dirWith('') }).config.gateway.port).toBe(58123);
  });

  it('warns about wildcard-only allowed_hosts', () => {
    const cwd = dirWith("gateway:\n  auth:\n    allowed_hosts: ['0.0.0.0', '::', '']\n");
    expect(loadConfig({ argv: [], env: {}, cwd }).warnings.join()).toContain('allowed_hosts');
  });
});

describe('redaction', () => {
  it('knows every secret key from the schema', () => {
    expect([...SECRET_PATHS].sort()).toEqual([
      'agents.*.provider.api_key',
      'bus.url',
      'channels.slack.app_token',
      'channels.slack.bot_token',
      'channels.slack.signing_secret',
      'channels.telegram.bot_token',
      'channels.telegram.webhook_secret',
      'channels.webhook.secret',
      'embeddings.api_key',
      'gateway.auth.admin_tokens',
      'gateway.auth.api_tokens',
      'gateway.auth.principals.*.tokens',
      'mcp.servers.*.env.*',
      'mcp.servers.*.headers.*',
      'provider.api_key',
      'storage.url',
    ]);
  });

  it('replaces every secret with *** and leaves the original intact', () => {
    const result = validateConfig({
      gateway: { auth: { api_tokens: ['tok-a', 'tok-b'], admin_tokens: ['tok-c'] } },
      provider: { api_key: 'sk-1' },
      channels: { webhook: { secret: 'whsec_x' } },
      storage: { driver: 'postgres', url: 'postgres://u:pw@h/db' },
    });
    if (!result.ok) throw new Error('invalid');
    const redacted = redactConfig(result.config);
    const text = JSON.stringify(redacted);
    for (const secret of secretValues(result.config)) expect(text).not.toContain(secret);
    expect(redacted.gateway.auth.api_tokens).toEqual([REDACTED, REDACTED]);
    expect(redacted.provider.api_key).toBe(REDACTED);
    expect(redacted.embeddings.api_key).toBeNull();
    expect(result.config.provider.api_key).toBe('sk-1');
  });
});
