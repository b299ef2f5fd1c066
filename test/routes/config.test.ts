/**
 * Configuration API over app.inject (DECISIONS §4, §9): GET /config,
 * POST /config/validate, PUT and PATCH /config, with a real configuration
 * file in a temp dir. Every response body (and the log) is checked for
 * leaked secrets.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { LightMyRequestResponse } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig, readConfigFile } from '../../src/config/config.load.js';
import { REDACTED } from '../../src/config/config.redact.js';
import { type Config, validateConfig } from '../../src/config/config.schema.js';
import type { Gateway } from '../../src/gateway.js';
import { createProvider, type ModelProvider } from '../../src/runtime/providers/index.js';
import type { SettingsService } from '../../src/settings/settings.service.js';
import { startFakeOpenAI } from '../helpers/fake-openai.js';
import { ADMIN_TOKEN, API_TOKEN, apiHeaders, useHarness } from '../helpers/harness.js';

const PG_PASSWORD = 'pg-pass-s3cret-9f2';
const SECRETS = {
  storageUrl: `postgres://gate:${PG_PASSWORD}@db.internal:5432/gatehouse`,
  busUrl: 'redis://:bus-s3cret-77a@redis.internal:6379',
  providerKey: 'sk-provider-s3cret-41c',
  embeddingsKey: 'emb-s3cret-0d5',
  webhookSecret: 'whsec-s3cret-c0ffee',
};
/** Every secret string, and the password inside the storage URL on its own. */
const SECRET_VALUES = [API_TOKEN, ADMIN_TOKEN, PG_PASSWORD, ...Object.values(SECRETS)];

function userFile(dataDir: string): string {
  return `# Gatehouse test configuration
data_dir: ${dataDir}
gateway:
  port: 0
  auth:
    api_tokens: [${API_TOKEN}]
    admin_tokens: [${ADMIN_TOKEN}]
storage:
  url: ${SECRETS.storageUrl} # sqlite ignores it
bus:
  url: ${SECRETS.busUrl}
provider:
  api_key: ${SECRETS.providerKey}
embeddings:
  api_key: ${SECRETS.embeddingsKey}
channels:
  webhook:
    secret: ${SECRETS.webhookSecret}
agent:
  max_tool_iterations: 4 # keep turns short
logs:
  level: info
`;
}

interface Env {
  dir: string;
  /** The configuration file, or null for a gateway started without one. */
  file: string | null;
  gateway: Gateway;
  settings: SettingsService;
  logs: string[];
  inject(
    method: 'GET' | 'POST' | 'PUT' | 'PATCH',
    url: string,
    payload?: unknown,
    token?: string,
  ): Promise<LightMyRequestResponse>;
  close(): Promise<void>;
}

// Runs after the hook below has shut the gateway down (after-hooks run last-registered first).
const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});
// The configuration comes from a real file (or none), loaded as `main.ts` loads it, with its own rate limits.
const rig = useHarness({ autoOpen: false });

async function start(
  options: { withFile?: boolean; dir?: string; provider?: ModelProvider; clock?: number } = {},
): Promise<Env> {
  const dir = options.dir ?? mkdtempSync(join(tmpdir(), 'gatehouse-config-api-'));
  if (!dirs.includes(dir)) dirs.push(dir);
  const dataDir = join(dir, 'data');
  let argv: string[];
  let file: string | null = null;
  if (options.withFile === false) {
    argv = ['--data-dir', dataDir];
  } else {
    file = join(dir, 'gatehouse.yaml');
    if (!existsSync(file)) writeFileSync(file, userFile(dataDir));
    argv = ['--config', file];
  }
  const loaded = loadConfig({ argv, env: {}, cwd: dir });
  // A file-less start still needs tokens: supplied in the config object, as an embedding would.
  const config =
    file === null
      ? validConfig({
          ...loaded.config,
          gateway: {
            ...loaded.config.gateway,
            port: 0,
            auth: { ...loaded.config.gateway.auth, api_tokens: [API_TOKEN], admin_tokens: [ADMIN_TOKEN] },
          },
        })
      : loaded.config;
  const harness = await rig.open({
    loaded: { config, configPath: loaded.configPath, fileObject: loaded.fileObject },
    ...(options.provider ? { provider: options.provider } : {}),
    ...(options.clock !== undefined ? { clock: options.clock } : {}),
  });
  const { gateway, logs } = harness;
  return {
    dir,
    file,
    gateway,
    settings: harness.internals.settings,
    logs,
    inject: (method, url, payload, token = ADMIN_TOKEN) =>
      gateway.app.inject({
        method,
        url,
        headers:
          payload === undefined
            ? { 'x-api-token': token }
            : { 'x-api-token': token, 'content-type': 'application/json' },
        ...(payload === undefined ? {} : { payload: JSON.stringify(payload) }),
      }),
    close: () => harness.close(),
  };
}

/** Every string in a JSON value, keys included. */
function allStrings(value: unknown, out: string[] = []): string[] {
  if (typeof value === 'string') out.push(value);
  else if (Array.isArray(value)) for (const v of value) allStrings(v, out);
  else if (value && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) {
      out.push(k);
      allStrings(v, out);
    }
  }
  return out;
}

/** Asserts that no secret appears anywhere in a response: the raw text and every string of the JSON. */
function expectNoSecrets(res: LightMyRequestResponse): void {
  for (const secret of SECRET_VALUES) expect(res.body).not.toContain(secret);
  const strings = allStrings(res.json());
  for (const s of strings) for (const secret of SECRET_VALUES) expect(s).not.toContain(secret);
}

function validConfig(raw: unknown): Config {
  const result = validateConfig(raw);
  if (!result.ok) throw new Error(`bad test config: ${JSON.stringify(result.errors)}`);
  return result.config;
}

function fileBytes(env: Env): Buffer {
  return readFileSync(env.file!);
}

describe('GET /config', () => {
  it('answers the merged active configuration with every secret as "***"', async () => {
    const env = await start();
    const res = await env.inject('GET', '/api/v1/config', undefined, API_TOKEN);
    expect(res.statusCode).toBe(200);
    expectNoSecrets(res);
    const body = res.json();
    expect(body.gateway.auth.api_tokens).toEqual([REDACTED]);
    expect(body.gateway.auth.admin_tokens).toEqual([REDACTED]);
    expect(body.storage.url).toBe(REDACTED);
    expect(body.bus.url).toBe(REDACTED);
    expect(body.provider.api_key).toBe(REDACTED);
    expect(body.embeddings.api_key).toBe(REDACTED);
    expect(body.channels.webhook.secret).toBe(REDACTED);
    // merged: user values and defaults together
    expect(body.agent).toMatchObject({ max_tool_iterations: 4, max_concurrent_turns: 16 });
    expect(body.data_dir).toBe(join(env.dir, 'data'));
    expect((await env.inject('GET', '/api/config', undefined, API_TOKEN)).json()).toEqual(body);
  });

  it('needs a token', async () => {
    const env = await start();
    const res = await env.gateway.app.inject({ method: 'GET', url: '/api/v1/config' });
    expect(res.statusCode).toBe(401);
  });
});

describe('POST /config/validate', () => {
  it('accepts a valid partial (api token) and changes nothing', async () => {
    const env = await start();
    const res = await env.inject('POST', '/api/v1/config/validate', { logs: { level: 'debug' } }, API_TOKEN);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ valid: true, errors: [] });
    expect(env.settings.current().logs.level).toBe('info');
  });

  it('lists wrong types and unknown keys at dotted paths, without echoing values', async () => {
    const env = await start();
    const res = await env.inject('POST', '/api/v1/config/validate', {
      gateway: { port: 'eighty', bogus_key: true },
      provider: { api_key: 12345, model: 'x' },
      agent: { max_tool_iterations: 0 },
    });
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body.valid).toBe(false);
    expect(body.errors.map((e: { path: string }) => e.path).sort()).toEqual([
      'agent.max_tool_iterations',
      'gateway.bogus_key',
      'gateway.port',
      'provider.api_key',
    ]);
    for (const e of body.errors) expect(typeof e.message).toBe('string');
    expect(res.body).not.toContain('eighty');
    expectNoSecrets(res);
  });

  it('calls a change under gateway.auth invalid (restart required); identical values are not a change', async () => {
    const env = await start();
    const res = await env.inject('POST', '/api/v1/config/validate', { gateway: { auth: { mode: 'open' } } });
    expect(res.json()).toEqual({
      valid: false,
      errors: [{ path: 'gateway.auth.mode', message: expect.stringMatching(/restart/) }],
    });
    const same = await env.inject('POST', '/api/v1/config/validate', {
      gateway: { auth: { mode: 'pairing', api_tokens: [REDACTED], admin_tokens: [ADMIN_TOKEN] } },
    });
    expect(same.json()).toEqual({ valid: true, errors: [] });
    const newToken = await env.inject('POST', '/api/v1/config/validate', {
      gateway: { auth: { api_tokens: ['another-token-0000'] } },
    });
    expect(newToken.json().errors).toEqual([{ path: 'gateway.auth.api_tokens', message: expect.any(String) }]);
    expectNoSecrets(newToken);
  });

  it('accepts what GET returned, secrets "***" included', async () => {
    const env = await start();
    const current = (await env.inject('GET', '/api/v1/config')).json();
    const res = await env.inject('POST', '/api/v1/config/validate', current);
    expect(res.json()).toEqual({ valid: true, errors: [] });
  });

  it('answers 400 for a body that is not a JSON object', async () => {
    const env = await start();
    for (const payload of [[1, 2], 'text', 42, null]) {
      const res = await env.inject('POST', '/api/v1/config/validate', payload);
      expect(res.statusCode).toBe(400);
      expect(res.json().error).toMatchObject({ code: 'BAD_REQUEST', details: [{ path: 'body' }] });
    }
    const none = await env.gateway.app.inject({ method: 'POST', url: '/api/v1/config/validate', headers: apiHeaders });
    expect(none.statusCode).toBe(400);
  });
});

/** Which keys a PUT/PATCH applied now and which need a restart (response headers). */
function changeOf(res: { headers: Record<string, string | string[] | number | undefined> }): {
  applied: string[];
  restart_required: string[];
} {
  const list = (name: string): string[] => {
    const value = res.headers[name];
    return typeof value === 'string' && value !== '' ? value.split(',') : [];
  };
  return { applied: list('x-config-applied'), restart_required: list('x-config-restart-required') };
}

describe('PUT /config', () => {
  it('saves the change into the user file and applies live keys', async () => {
    const env = await start();
    const res = await env.inject('PUT', '/api/v1/config', {
      logs: { level: 'debug' },
      agent: { system_prompt: 'You are terse.', approval_required: ['shell'] },
    });
    expect(res.statusCode).toBe(200);
    expectNoSecrets(res);
    const body = res.json();
    expect(changeOf(res).applied).toEqual(['agent.approval_required', 'agent.system_prompt', 'logs.level']);
    expect(changeOf(res).restart_required).toEqual([]);
    // The body is the configuration itself (update → the object), redacted.
    expect(body.logs.level).toBe('debug');
    expect(body.provider.api_key).toBe(REDACTED);
    expect((await env.inject('GET', '/api/v1/config')).json().agent.system_prompt).toBe('You are terse.');

    const raw = readConfigFile(env.file!);
    expect(raw.logs).toEqual({ level: 'debug' });
    expect(raw.agent).toEqual({
      max_tool_iterations: 4,
      system_prompt: 'You are terse.',
      approval_required: ['shell'],
    });
    expect(raw.provider).toEqual({ api_key: SECRETS.providerKey }); // untouched user value, unredacted on disk
    expect(Object.keys(raw).sort()).toEqual(
      ['agent', 'bus', 'channels', 'data_dir', 'embeddings', 'gateway', 'logs', 'provider', 'storage'].sort(),
    ); // defaults are not dumped into the file
    const text = readFileSync(env.file!, 'utf8');
    expect(text).toContain('# Gatehouse test configuration');
    expect(text).toContain('# keep turns short');
    expect(text).not.toContain('max_concurrent_turns');
    expect(statSync(env.file!).mode & 0o777).toBe(0o600);
    const reloaded = loadConfig({ argv: ['--config', env.file!], env: {}, cwd: env.dir });
    expect(reloaded.config.agent).toMatchObject({ system_prompt: 'You are terse.', max_tool_iterations: 4 });
    for (const line of env.logs) for (const secret of SECRET_VALUES) expect(line).not.toContain(secret);
  });

  it('null resets a key to its default and removes it from the file', async () => {
    const env = await start();
    const res = await env.inject('PUT', '/api/v1/config', { agent: { max_tool_iterations: null } });
    expect(res.statusCode).toBe(200);
    expect(changeOf(res).applied).toEqual(['agent.max_tool_iterations']);
    expect(res.json().agent.max_tool_iterations).toBe(8);
    expect(readConfigFile(env.file!).agent).toEqual({});
    expect(loadConfig({ argv: ['--config', env.file!], env: {}, cwd: env.dir }).config.agent.max_tool_iterations).toBe(
      8,
    );
  });

  it('a refused change answers 400 with every path and leaves the file byte-identical', async () => {
    const env = await start();
    const before = fileBytes(env);
    const res = await env.inject('PUT', '/api/v1/config', {
      logs: { level: 'debug', bogus: 1 },
      provider: { api_key: 7 },
      tasks: { max_concurrent: -1 },
    });
    expect(res.statusCode).toBe(400);
    expectNoSecrets(res);
    expect(res.json().error.code).toBe('BAD_REQUEST');
    expect(
      res
        .json()
        .error.details.map((d: { path: string }) => d.path)
        .sort(),
    ).toEqual(['logs.bogus', 'provider.api_key', 'tasks.max_concurrent']);
    expect(fileBytes(env).equals(before)).toBe(true);
    expect(env.settings.current().logs.level).toBe('info');
  });

  it('refuses any change under gateway.auth (restart required), file untouched; identical values pass', async () => {
    const env = await start();
    const before = fileBytes(env);
    const res = await env.inject('PUT', '/api/v1/config', {
      logs: { level: 'debug' },
      gateway: { auth: { api_tokens: [API_TOKEN, 'second-token-123456'] } },
    });
    expect(res.statusCode).toBe(400);
    expect(res.json().error.details).toEqual([
      { path: 'gateway.auth.api_tokens', message: expect.stringMatching(/restart/) },
    ]);
    expectNoSecrets(res);
    expect(fileBytes(env).equals(before)).toBe(true);
    expect(env.settings.current().logs.level).toBe('info');

    const same = await env.inject('PUT', '/api/v1/config', {
      gateway: { auth: { api_tokens: [API_TOKEN], mode: 'pairing' } },
    });
    expect(same.statusCode).toBe(200);
    expect(changeOf(same)).toMatchObject({ applied: [], restart_required: [] });
    expectNoSecrets(same);
  });

  it('takes what GET returned ("***" secrets mean unchanged) and keeps the real secrets', async () => {
    const env = await start();
    const before = fileBytes(env);
    const current = (await env.inject('GET', '/api/v1/config')).json();
    const same = await env.inject('PUT', '/api/v1/config', current);
    expect(same.statusCode).toBe(200);
    expect(changeOf(same)).toMatchObject({ applied: [], restart_required: [] });
    expect(fileBytes(env).equals(before)).toBe(true); // nothing changed, nothing written

    current.logs.level = 'warning';
    const changed = await env.inject('PUT', '/api/v1/config', current);
    expect(changed.statusCode).toBe(200);
    expect(changeOf(changed).applied).toEqual(['logs.level']);
    expectNoSecrets(changed);
    const reloaded = loadConfig({ argv: ['--config', env.file!], env: {}, cwd: env.dir }).config;
    expect(reloaded.logs.level).toBe('warning');
    expect(reloaded.provider.api_key).toBe(SECRETS.providerKey);
    expect(reloaded.storage.url).toBe(SECRETS.storageUrl);
    expect(reloaded.channels.webhook.secret).toBe(SECRETS.webhookSecret);
    expect(reloaded.gateway.auth.api_tokens).toEqual([API_TOKEN]);
    expect(env.settings.current().embeddings.api_key).toBe(SECRETS.embeddingsKey);
  });

  it('lists applied and restart-required keys; restart-only keys keep running with the old value', async () => {
    const env = await start();
    const res = await env.inject('PUT', '/api/v1/config', {
      gateway: { port: 9123, max_body_bytes: 2048 },
      provider: { model: 'gpt-4o-mini', pricing: { 'gpt-4o-mini': { input_per_mtok: 0.15, output_per_mtok: 0.6 } } },
      security: { rate_limits: { read: 500 } },
      budget: { daily_usd: 12.5 },
    });
    expect(res.statusCode).toBe(200);
    expect(changeOf(res).applied).toEqual([
      'budget.daily_usd',
      'provider.pricing.gpt-4o-mini',
      'security.rate_limits.read',
    ]);
    expect(changeOf(res).restart_required).toEqual(['gateway.max_body_bytes', 'gateway.port', 'provider.model']);
    const active = (await env.inject('GET', '/api/v1/config')).json();
    expect(active.gateway.port).toBe(0);
    expect(active.budget.daily_usd).toBe(12.5);
    expect(readConfigFile(env.file!).gateway).toMatchObject({ port: 9123, max_body_bytes: 2048 });
  });

  it('survives a restart: the next start loads the saved value', async () => {
    const env = await start();
    expect(
      (await env.inject('PUT', '/api/v1/config', { tasks: { max_concurrent: 3 }, logs: { level: 'error' } }))
        .statusCode,
    ).toBe(200);
    await env.close();
    const again = await start({ dir: env.dir });
    const body = (await again.inject('GET', '/api/v1/config')).json();
    expect(body.tasks.max_concurrent).toBe(3);
    expect(body.logs.level).toBe('error');
    expect(body.agent.max_tool_iterations).toBe(4);
  });

  it('creates <data_dir>/gatehouse.yaml (mode 0600) when the gateway started without a file', async () => {
    const env = await start({ withFile: false });
    const target = join(env.dir, 'data', 'gatehouse.yaml');
    expect(existsSync(target)).toBe(false);
    const res = await env.inject('PUT', '/api/v1/config', { budget: { daily_usd: 4 } });
    expect(res.statusCode).toBe(200);
    expect(statSync(target).mode & 0o777).toBe(0o600);
    expect(readConfigFile(target)).toEqual({ budget: { daily_usd: 4 } });
    const reloaded = loadConfig({
      argv: ['--data-dir', join(env.dir, 'data')],
      env: {},
      cwd: env.dir,
      dataDirFallback: true,
    });
    expect(reloaded.configPath).toBe(target);
    expect(reloaded.config.budget.daily_usd).toBe(4);
  });
});

describe('PATCH /config', () => {
  it('applies live keys for this run and never writes the file', async () => {
    const env = await start();
    const before = fileBytes(env);
    const res = await env.inject('PATCH', '/api/v1/config', {
      logs: { level: 'debug' },
      agent: { max_tool_iterations: 2 },
    });
    expect(res.statusCode).toBe(200);
    expectNoSecrets(res);
    expect(changeOf(res)).toMatchObject({ applied: ['agent.max_tool_iterations', 'logs.level'], restart_required: [] });
    expect((await env.inject('GET', '/api/v1/config')).json().agent.max_tool_iterations).toBe(2);
    expect(fileBytes(env).equals(before)).toBe(true);
  });

  it('refuses restart-only keys and auth changes with 400', async () => {
    const env = await start();
    const port = await env.inject('PATCH', '/api/v1/config', { gateway: { port: 9000 } });
    expect(port.statusCode).toBe(400);
    expect(port.json().error.details).toEqual([{ path: 'gateway.port', message: expect.stringMatching(/restart/) }]);
    const auth = await env.inject('PATCH', '/api/v1/config', { gateway: { auth: { admin_tokens: null } } });
    expect(auth.statusCode).toBe(400);
    expect(auth.json().error.details).toEqual([
      { path: 'gateway.auth.admin_tokens', message: expect.stringMatching(/never live-reloaded/) },
    ]);
    expectNoSecrets(auth);
  });
});

describe('permissions and rate limits', () => {
  it('PUT and PATCH need an admin token (api → 403); GET and validate take an api token', async () => {
    const env = await start();
    const before = fileBytes(env);
    for (const method of ['PUT', 'PATCH'] as const) {
      const res = await env.inject(method, '/api/v1/config', { logs: { level: 'debug' } }, API_TOKEN);
      expect(res.statusCode).toBe(403);
    }
    expect(fileBytes(env).equals(before)).toBe(true);
    expect(env.settings.current().logs.level).toBe('info');
    expect((await env.inject('GET', '/api/v1/config', undefined, API_TOKEN)).statusCode).toBe(200);
    expect((await env.inject('POST', '/api/v1/config/validate', {}, API_TOKEN)).statusCode).toBe(200);
    const noToken = await env.gateway.app.inject({ method: 'PUT', url: '/api/v1/config', payload: {} });
    expect(noToken.statusCode).toBe(401);
  });

  it('PUT and PATCH share the lifecycle group: 5 a minute, the 6th is 429', async () => {
    const env = await start();
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) {
      const method = i % 2 === 0 ? 'PUT' : 'PATCH';
      const res = await env.inject(method, '/api/v1/config', { budget: { daily_usd: i + 1 } });
      statuses.push(res.statusCode);
      if (i === 0) expect(res.headers['x-ratelimit-limit']).toBe('5');
      if (i === 5) {
        expect(res.json().error.code).toBe('RATE_LIMITED');
        expect(res.headers['retry-after']).toBeDefined();
      }
    }
    expect(statuses).toEqual([200, 200, 200, 200, 200, 429]);
    expect(env.settings.current().budget.daily_usd).toBe(5);
    // Reads are another group.
    expect((await env.inject('GET', '/api/v1/config')).statusCode).toBe(200);
  });
});

describe('live apply through the gateway wiring', () => {
  it('security.rate_limits: the limiter uses the new limit at once', async () => {
    // A manual clock: the three requests fall in one fixed minute window, whenever the test runs.
    const env = await start({ clock: Date.UTC(2026, 10, 27, 12, 0, 10) });
    const first = await env.inject('PATCH', '/api/v1/config', { security: { rate_limits: { lifecycle: 2 } } });
    expect(first.headers['x-ratelimit-limit']).toBe('5');
    const second = await env.inject('PATCH', '/api/v1/config', { budget: { daily_usd: 1 } });
    expect(second.headers['x-ratelimit-limit']).toBe('2');
    expect((await env.inject('PATCH', '/api/v1/config', { budget: { daily_usd: 2 } })).statusCode).toBe(429);
  });

  it('logs.level: the process logger follows', async () => {
    const env = await start();
    await env.inject('PATCH', '/api/v1/config', { logs: { level: 'warning' } });
    expect(env.gateway.logger.level).toBe('warn');
  });

  it('agent.system_prompt: the next turn sends the new prompt to the model', async () => {
    const fake = await startFakeOpenAI();
    try {
      const provider = createProvider({
        type: 'openai',
        base_url: fake.url,
        api_key: 'unused',
        model: 'gpt-4o-mini',
        timeout_seconds: 5,
        pricing: {},
      });
      const env = await start({ provider });
      fake.enqueue({ content: 'Greetings, in seventeen syllables.' });
      const patched = await env.inject('PATCH', '/api/v1/config', { agent: { system_prompt: 'Answer in haiku.' } });
      expect(changeOf(patched).applied).toEqual(['agent.system_prompt']);
      const res = await env.inject(
        'POST',
        '/api/v1/message',
        { platform: 'api', user_id: 'u1', chat_id: 'c1', text: 'hello', wait: true },
        API_TOKEN,
      );
      expect(res.statusCode, res.body).toBe(200);
      const chat = fake.requests.find((r) => r.path === '/v1/chat/completions');
      expect(chat?.body.messages?.[0]).toMatchObject({
        role: 'system',
        content: expect.stringContaining('Answer in haiku.'),
      });
      fake.verify();
    } finally {
      await fake.close();
    }
  });
});
