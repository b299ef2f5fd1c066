import { mkdtempSync, readFileSync, statSync, writeFileSync, existsSync, readdirSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig, readConfigFile } from '../config/config.load.js';
import { REDACTED } from '../config/config.redact.js';
import type { Config } from '../config/config.schema.js';
import {
  AUTH_LOCKED_MESSAGE,
  ConfigChangeError,
  PATCH_RESTART_MESSAGE,
  restoreRedactedSecrets,
  SettingsService,
} from './settings.service.js';

const USER_FILE = `# my gateway
gateway:
  port: 0
  auth:
    api_tokens: [api-token-aaaaaaaa]
    admin_tokens: [admin-token-bbbbbbbb]
provider:
  type: openai
  api_key: sk-secret-provider-key # from the vault
logs:
  level: info # quiet please
agent:
  max_tool_iterations: 4
`;

interface Setup {
  dir: string;
  file: string;
  service: SettingsService;
  config: Config;
}

function setup(text = USER_FILE): Setup {
  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-settings-'));
  const file = join(dir, 'gatehouse.yaml');
  writeFileSync(file, `data_dir: ${join(dir, 'data')}\n${text}`);
  const loaded = loadConfig({ argv: ['--config', file], env: {}, cwd: dir });
  const service = new SettingsService({
    config: loaded.config,
    configPath: loaded.configPath,
    fileObject: loaded.fileObject,
    cwd: dir,
  });
  return { dir, file, service, config: loaded.config };
}

async function rejection(promise: Promise<unknown>): Promise<ConfigChangeError> {
  try {
    await promise;
  } catch (err) {
    if (err instanceof ConfigChangeError) return err;
    throw err;
  }
  throw new Error('expected a ConfigChangeError');
}

describe('SettingsService.validate', () => {
  it('accepts a valid partial and changes nothing', () => {
    const { service, config } = setup();
    expect(service.validate({ logs: { level: 'debug' }, gateway: { port: 9000 } })).toEqual({
      valid: true,
      errors: [],
    });
    expect(service.current()).toEqual(config);
  });

  it('lists wrong types and unknown keys at dotted paths', () => {
    const { service } = setup();
    const check = service.validate({ logs: { level: 'loud' }, agent: { max_tool_iterations: '3', bogus: 1 } });
    expect(check.valid).toBe(false);
    expect(check.errors.map((e) => e.path).sort()).toEqual(['agent.bogus', 'agent.max_tool_iterations', 'logs.level']);
  });

  it('refuses a change under gateway.auth at its path, but not identical values', () => {
    const { service } = setup();
    const changed = service.validate({ gateway: { auth: { mode: 'open' } } });
    expect(changed).toEqual({ valid: false, errors: [{ path: 'gateway.auth.mode', message: AUTH_LOCKED_MESSAGE }] });
    expect(service.validate({ gateway: { auth: { mode: 'pairing', api_tokens: ['api-token-aaaaaaaa'] } } }).valid).toBe(
      true,
    );
    expect(service.validate({ gateway: { auth: null } }).errors.map((e) => e.path)).toEqual([
      'gateway.auth.admin_tokens',
      'gateway.auth.api_tokens',
    ]);
  });

  it('accepts the redacted configuration as GET returns it', () => {
    const { service } = setup();
    const redacted = JSON.parse(JSON.stringify(service.current())) as Record<string, unknown>;
    const auth = (redacted.gateway as { auth: Record<string, unknown> }).auth;
    auth.api_tokens = [REDACTED];
    auth.admin_tokens = [REDACTED];
    (redacted.provider as Record<string, unknown>).api_key = REDACTED;
    expect(service.validate(redacted)).toEqual({ valid: true, errors: [] });
  });
});

describe('restoreRedactedSecrets', () => {
  it('restores "***" scalars and list elements by position, and reports missing ones', () => {
    const { config } = setup();
    const { patch, errors } = restoreRedactedSecrets(
      {
        provider: { api_key: REDACTED },
        gateway: { auth: { api_tokens: [REDACTED, REDACTED], admin_tokens: [REDACTED, 'new'] } },
        agent: { system_prompt: REDACTED },
      },
      config,
    );
    expect(patch).toEqual({
      provider: { api_key: 'sk-secret-provider-key' },
      gateway: {
        auth: { api_tokens: ['api-token-aaaaaaaa', REDACTED], admin_tokens: ['admin-token-bbbbbbbb', 'new'] },
      },
      agent: { system_prompt: REDACTED }, // not a secret: taken literally
    });
    expect(errors.map((e) => e.path)).toEqual(['gateway.auth.api_tokens.1']);
    expect(JSON.stringify(errors)).not.toContain('api-token');
  });
});

describe('SettingsService.update (PATCH: live only)', () => {
  it('applies live keys, notifies listeners, and never touches the file', async () => {
    const { service, file } = setup();
    const before = readFileSync(file);
    const seen: Array<{ level: string; paths: string[] }> = [];
    service.onChange((next, paths) => seen.push({ level: next.logs.level, paths }));
    const result = await service.update(
      { logs: { level: 'debug' }, security: { rate_limits: { lifecycle: 2 } } },
      { persist: false },
    );
    expect(result.applied).toEqual(['logs.level', 'security.rate_limits.lifecycle']);
    expect(result.restartRequired).toEqual([]);
    expect(result.written).toBeNull();
    expect(service.current().logs.level).toBe('debug');
    expect(service.current().security.rate_limits.lifecycle).toBe(2);
    expect(seen).toEqual([{ level: 'debug', paths: ['logs.level', 'security.rate_limits.lifecycle'] }]);
    expect(readFileSync(file).equals(before)).toBe(true);
  });

  it('refuses restart-only keys (they would never take effect) and auth changes', async () => {
    const { service } = setup();
    const err = await rejection(
      service.update({ gateway: { port: 9000 }, logs: { level: 'debug' } }, { persist: false }),
    );
    expect(err.issues).toEqual([{ path: 'gateway.port', message: PATCH_RESTART_MESSAGE }]);
    expect(service.current().logs.level).toBe('info');
    const auth = await rejection(service.update({ gateway: { auth: { admin_tokens: [] } } }, { persist: false }));
    expect(auth.issues.map((i) => i.path)).toContain('gateway.auth.admin_tokens');
  });

  it('reports nothing applied for a value equal to the current one, and does not notify', async () => {
    const { service } = setup();
    let calls = 0;
    service.onChange(() => calls++);
    const result = await service.update({ logs: { level: 'info' } }, { persist: false });
    expect(result.applied).toEqual([]);
    expect(calls).toBe(0);
  });

  it('keeps the change when a listener throws, and reports the error', async () => {
    const errors: unknown[] = [];
    const { config } = setup();
    const service = new SettingsService({ config, configPath: null, onListenerError: (err) => errors.push(err) });
    let later = 0;
    service.onChange(() => {
      throw new Error('boom');
    });
    const off = service.onChange(() => later++);
    await service.update({ budget: { daily_usd: 5 } }, { persist: false });
    expect(service.current().budget.daily_usd).toBe(5);
    expect(errors).toHaveLength(1);
    expect(later).toBe(1);
    off();
    await service.update({ budget: { daily_usd: 6 } }, { persist: false });
    expect(later).toBe(1);
  });

  it('hands out a frozen configuration', () => {
    const { service } = setup();
    expect(() => {
      (service.current().logs as { level: string }).level = 'debug';
    }).toThrow(TypeError);
  });
});

describe('SettingsService.update (PUT: saved)', () => {
  it('writes only the change into the user file, keeping comments and untouched values', async () => {
    const { service, file, dir } = setup();
    const result = await service.update(
      { logs: { level: 'debug' }, agent: { system_prompt: 'Be brief.' } },
      { persist: true },
    );
    expect(result.applied).toEqual(['agent.system_prompt', 'logs.level']);
    expect(result.restartRequired).toEqual([]);
    expect(result.written).toBe(file);
    const text = readFileSync(file, 'utf8');
    expect(text).toContain('# my gateway');
    expect(text).toContain('level: debug # quiet please');
    expect(text).toContain('api_key: sk-secret-provider-key # from the vault');
    expect(text).not.toContain('buffer_entries'); // defaults are not dumped
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const raw = readConfigFile(file);
    expect(raw.agent).toEqual({ max_tool_iterations: 4, system_prompt: 'Be brief.' });
    const reloaded = loadConfig({ argv: ['--config', file], env: {}, cwd: dir });
    expect(reloaded.config.logs.level).toBe('debug');
    expect(reloaded.config.agent.system_prompt).toBe('Be brief.');
    expect(reloaded.config.provider.api_key).toBe('sk-secret-provider-key');
    expect(readdirSync(dir).filter((f) => f.endsWith('.tmp'))).toEqual([]);
  });

  it('null removes the key from the file and resets the value to its default', async () => {
    const { service, file, dir } = setup();
    const result = await service.update({ agent: { max_tool_iterations: null } }, { persist: true });
    expect(result.applied).toEqual(['agent.max_tool_iterations']);
    expect(service.current().agent.max_tool_iterations).toBe(8);
    expect(readConfigFile(file).agent).toEqual({});
    expect(loadConfig({ argv: ['--config', file], env: {}, cwd: dir }).config.agent.max_tool_iterations).toBe(8);
  });

  it('saves restart-only keys but keeps running with the old value', async () => {
    const { service, file, dir } = setup();
    const result = await service.update({ gateway: { port: 9123 }, tasks: { max_concurrent: 3 } }, { persist: true });
    expect(result.applied).toEqual(['tasks.max_concurrent']);
    expect(result.restartRequired).toEqual(['gateway.port']);
    expect(service.current().gateway.port).toBe(0);
    expect(loadConfig({ argv: ['--config', file], env: {}, cwd: dir }).config.gateway.port).toBe(9123);
    // Putting the running value back undoes the pending change: nothing left to restart for.
    const back = await service.update({ gateway: { port: 0 } }, { persist: true });
    expect(back.restartRequired).toEqual([]);
    expect(readConfigFile(file).gateway).toMatchObject({ port: 0 });
  });

  it('writes nothing for a GET→PUT round trip with redacted secrets, and keeps the real ones', async () => {
    const { service, file } = setup();
    const before = readFileSync(file);
    const body = JSON.parse(JSON.stringify(service.current())) as Record<string, unknown>;
    const auth = (body.gateway as { auth: Record<string, unknown> }).auth;
    auth.api_tokens = [REDACTED];
    auth.admin_tokens = [REDACTED];
    (body.provider as Record<string, unknown>).api_key = REDACTED;
    const result = await service.update(body, { persist: true });
    expect(result).toMatchObject({ applied: [], restartRequired: [], written: null });
    expect(readFileSync(file).equals(before)).toBe(true);
    expect(service.current().provider.api_key).toBe('sk-secret-provider-key');
  });

  it('a refused change leaves the file byte-identical and the configuration unchanged', async () => {
    const { service, file, config } = setup();
    const before = readFileSync(file);
    await rejection(service.update({ logs: { level: 'debug' }, agent: { max_tool_iterations: 0 } }, { persist: true }));
    await rejection(
      service.update({ logs: { level: 'debug' }, gateway: { auth: { mode: 'open' } } }, { persist: true }),
    );
    await rejection(service.update({ logs: { level: 'debug', bogus: true } }, { persist: true }));
    expect(readFileSync(file).equals(before)).toBe(true);
    expect(service.current()).toEqual(config);
  });

  it('writes a value that PATCH made live but the file does not hold yet', async () => {
    const { service, file } = setup();
    await service.update({ logs: { level: 'debug' } }, { persist: false });
    expect(readConfigFile(file).logs).toEqual({ level: 'info' });
    const result = await service.update({ logs: { level: 'debug' } }, { persist: true });
    expect(result.applied).toEqual([]); // already live
    expect(result.written).toBe(file);
    expect(readConfigFile(file).logs).toEqual({ level: 'debug' });
  });

  it('creates <data_dir>/gatehouse.yaml (0600) when the gateway started without a file', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'gatehouse-settings-'));
    const loaded = loadConfig({ argv: ['--data-dir', 'data'], env: {}, cwd: dir });
    expect(loaded.configPath).toBeNull();
    const service = new SettingsService({ config: loaded.config, configPath: null, fileObject: {}, cwd: dir });
    const target = join(dir, 'data', 'gatehouse.yaml');
    expect(service.configFile()).toBe(target);
    await service.update({ logs: null }, { persist: true });
    expect(existsSync(target)).toBe(false); // nothing to write
    const result = await service.update({ budget: { daily_usd: 2.5 } }, { persist: true });
    expect(result.written).toBe(target);
    expect(statSync(target).mode & 0o777).toBe(0o600);
    expect(readConfigFile(target)).toEqual({ budget: { daily_usd: 2.5 } });
    const reloaded = loadConfig({ argv: ['--data-dir', 'data'], env: {}, cwd: dir, dataDirFallback: true });
    expect(reloaded.config.budget.daily_usd).toBe(2.5);
  });

  it('writes through a symlinked configuration file to its target', async () => {
    const { service, file, dir } = setup();
    const link = join(dir, 'link.yaml');
    symlinkSync(file, link);
    const linked = new SettingsService({ config: service.current(), configPath: link, cwd: dir });
    const result = await linked.update({ logs: { level: 'error' } }, { persist: true });
    expect(result.written).toBe(file);
    expect(readConfigFile(link).logs).toEqual({ level: 'error' });
  });

  it('refuses to write over a file that no longer parses, and leaves it alone', async () => {
    const { service, file } = setup();
    writeFileSync(file, 'logs: [unclosed\n');
    await expect(service.update({ logs: { level: 'debug' } }, { persist: true })).rejects.toThrow(/not valid YAML/);
    expect(readFileSync(file, 'utf8')).toBe('logs: [unclosed\n');
    expect(service.current().logs.level).toBe('info');
  });

  it('serialises concurrent changes', async () => {
    const { service, file } = setup();
    await Promise.all([
      service.update({ security: { rate_limits: { read: 50 } } }, { persist: true }),
      service.update({ security: { rate_limits: { write: 20 } } }, { persist: true }),
      service.update({ budget: { daily_usd: 1 } }, { persist: true }),
    ]);
    expect(readConfigFile(file)).toMatchObject({
      security: { rate_limits: { read: 50, write: 20 } },
      budget: { daily_usd: 1 },
    });
    expect(service.current().security.rate_limits).toMatchObject({ read: 50, write: 20 });
  });
});
