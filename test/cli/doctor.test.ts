import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { Server as TcpServer } from 'node:net';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { killAllNow } from '../../bench/processes.js';
import { startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai.js';
import { freePort, gatehouse, listenTcp, removeTempDirs, startServe, tempDir, writeConfig } from './helpers.js';

/** One check of `doctor --json`. */
interface Check {
  name: string;
  status: 'ok' | 'warn' | 'fail' | 'skip';
  message: string;
  details?: string[];
  fix?: string;
}

async function doctorJson(
  args: string[],
  options: { cwd?: string; env?: NodeJS.ProcessEnv } = {},
): Promise<{ code: number | null; ok: boolean; checks: Map<string, Check> }> {
  const run = await gatehouse(['doctor', '--json', ...args], options);
  const report = JSON.parse(run.stdout) as { ok: boolean; checks: Check[] };
  return { code: run.code, ok: report.ok, checks: new Map(report.checks.map((c) => [c.name, c])) };
}

/** A stand-in for the Anthropic models list that refuses every key. */
async function refusingAnthropic(): Promise<{ server: Server; url: string }> {
  const server = createServer((req, res) => {
    res.writeHead(req.url?.startsWith('/v1/models') ? 401 : 404, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ type: 'error', error: { type: 'authentication_error', message: 'invalid x-api-key' } }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as { port: number }).port}` };
}

describe('gatehouse doctor', () => {
  let fake: FakeOpenAI;
  const servers: Array<Server | TcpServer> = [];

  beforeAll(async () => {
    fake = await startFakeOpenAI();
  });
  afterEach(killAllNow);
  afterAll(async () => {
    for (const server of servers) server.close();
    await fake.close();
    removeTempDirs();
  });

  it('a good configuration: every check ok, exit 0; a running gateway on the port is recognised', async () => {
    const dir = tempDir();
    const port = await freePort();
    const file = writeConfig(dir, {
      data_dir: join(dir, 'data'),
      gateway: { port, auth: { api_tokens: ['doctor-api-token'] } },
      provider: { type: 'openai', base_url: fake.url, model: 'fake-model' },
    });
    const human = await gatehouse(['doctor', '--config', file]);
    expect(human.code, human.stdout).toBe(0);
    for (const name of ['config', 'start-up', 'data dir', 'store', 'provider', 'port']) {
      expect(human.stdout).toMatch(new RegExp(`^ok\\s+${name}\\s`, 'm'));
    }
    expect(human.stdout).toContain('all checks passed');
    expect(fake.requests.some((r) => r.method === 'GET' && r.path === '/v1/models')).toBe(true);

    // With the gateway running: its port is in use, by a gateway; the store answers with its migrations.
    const gw = startServe(['--config', file]);
    await gw.ready;
    const report = await doctorJson(['--config', file]);
    expect(report.code).toBe(0);
    expect(report.checks.get('port')).toMatchObject({ status: 'ok' });
    expect(report.checks.get('port')?.message).toContain('in use by a running gateway');
    expect(report.checks.get('store')?.message).toMatch(/\d+ migration\(s\) applied/);
    expect(report.checks.get('data dir')).toMatchObject({ status: 'ok' });
    gw.process.kill('SIGTERM');
    expect(await gw.exited).toBe(0);
  });

  it('the echo provider is ok with a note; a model the server does not list is a warning (exit 0)', async () => {
    const dir = tempDir();
    const echo = await doctorJson([], { cwd: dir, env: { GATEHOUSE_PORT: '0' } });
    expect(echo.code).toBe(0);
    expect(echo.checks.get('provider')).toMatchObject({ status: 'ok' });
    expect(echo.checks.get('provider')?.message).toContain('only echoes');
    expect(echo.checks.get('config')?.message).toContain('no file');

    const file = writeConfig(dir, {
      data_dir: join(dir, 'data'),
      gateway: { port: 0 },
      provider: { type: 'openai', base_url: fake.url, model: 'gpt-nonexistent' },
    });
    const warned = await doctorJson(['--config', file]);
    expect(warned.code).toBe(0);
    expect(warned.checks.get('provider')).toMatchObject({ status: 'warn' });
    expect(warned.checks.get('provider')?.fix).toContain('fake-model');
  });

  it('a bad provider URL, a taken port, an unreachable database and bus: each fails with a fix, exit 1', async () => {
    const dir = tempDir();
    const closed = await freePort();
    const taken = await listenTcp(await freePort());
    servers.push(taken);
    const busy = (taken.address() as { port: number }).port;
    const file = writeConfig(dir, {
      data_dir: join(dir, 'data'),
      gateway: { port: busy },
      provider: { type: 'openai', base_url: `http://127.0.0.1:${closed}/v1`, api_key: 'sk-doctor-secret' },
      storage: { driver: 'postgres', url: `postgres://gh:pw-doctor-secret@127.0.0.1:${closed}/gh` },
      bus: { driver: 'nats', url: `nats://127.0.0.1:${closed}` },
    });
    const run = await gatehouse(['doctor', '--config', file]);
    expect(run.code).toBe(1);
    expect(run.stdout).toMatch(/^fail\s+provider\s.*cannot reach .*ECONNREFUSED/m);
    expect(run.stdout).toMatch(/fix: is the server running.*provider\.base_url/);
    expect(run.stdout).toMatch(/^fail\s+port\s.*in use by another program/m);
    expect(run.stdout).toContain(`lsof -iTCP:${busy}`);
    expect(run.stdout).toMatch(/^fail\s+store\s+PostgreSQL postgres:\/\/gh:\*\*\*@127\.0\.0\.1/m);
    expect(run.stdout).toMatch(/fix: is PostgreSQL running/);
    expect(run.stdout).toMatch(/^fail\s+bus\s/m);
    expect(run.stdout).toMatch(/check bus\.url/);
    expect(run.stdout).toMatch(/\d check\(s\) failed/);
    expect(run.stderr).toContain('doctor found problems');
    // Secrets stay out of the report.
    expect(run.stdout).not.toContain('doctor-secret');
  });

  it('a provider that refuses the key, and a base URL that is not an API root', async () => {
    const anthropic = await refusingAnthropic();
    servers.push(anthropic.server);
    const dir = tempDir();
    writeConfig(dir, { gateway: { port: 0 }, provider: { type: 'anthropic', base_url: anthropic.url } });
    const fromFile = await doctorJson([], { cwd: dir, env: { ANTHROPIC_API_KEY: 'sk-ant-doctor' } });
    expect(fromFile.code).toBe(1);
    const check = fromFile.checks.get('provider')!;
    expect(check.status).toBe('fail');
    expect(check.message).toContain('refused the key (HTTP 401: invalid x-api-key)');
    expect(check.fix).toContain('ANTHROPIC_API_KEY');
    // Without a provider block, a key in the environment selects the provider; the report says so.
    const detected = await doctorJson([], {
      cwd: tempDir(),
      env: { OPENAI_API_KEY: 'sk-doctor', OPENAI_BASE_URL: fake.url, GATEHOUSE_PORT: '0' },
    });
    expect(detected.checks.get('provider')?.message).toContain('openai at');
    expect(detected.checks.get('provider')?.message).toContain('selected by OPENAI_API_KEY');

    const notRoot = writeConfig(
      dir,
      { gateway: { port: 0 }, provider: { type: 'openai', base_url: `${anthropic.url}/nope` } }, // answers 404
      'not-root.yaml',
    );
    const wrong = await doctorJson(['--config', notRoot]);
    expect(wrong.code).toBe(1);
    expect(wrong.checks.get('provider')?.fix).toContain('provider.base_url is probably wrong');
  });

  it('an unwritable data dir fails with a fix; loose modes warn', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'a-file'), '');
    const file = writeConfig(dir, { data_dir: join(dir, 'a-file', 'data'), gateway: { port: 0 } });
    const blocked = await doctorJson(['--config', file]);
    expect(blocked.code).toBe(1);
    expect(blocked.checks.get('data dir')).toMatchObject({ status: 'fail' });
    expect(blocked.checks.get('data dir')?.message).toContain('is a file, not a directory');
    expect(blocked.checks.get('data dir')?.fix).toContain('set data_dir');
    expect(blocked.checks.get('store')).toMatchObject({ status: 'skip' });

    if (process.getuid?.() !== 0) {
      // Not for root, who may write anyway.
      const locked = join(dir, 'locked');
      mkdirSync(locked, { mode: 0o500 });
      const lockedFile = writeConfig(dir, { data_dir: locked, gateway: { port: 0 } }, 'locked.yaml');
      const refused = await doctorJson(['--config', lockedFile]);
      expect(refused.code).toBe(1);
      expect(refused.checks.get('data dir')?.message).toContain('not writable');
      chmodSync(locked, 0o700);
    }

    const loose = join(dir, 'loose');
    mkdirSync(join(loose, 'gateway_auth'), { recursive: true, mode: 0o755 });
    chmodSync(loose, 0o755);
    writeFileSync(join(loose, 'gateway_auth', 'admin_token'), 'tok\n', { mode: 0o644 });
    const looseFile = writeConfig(dir, { data_dir: loose, gateway: { port: 0 } }, 'loose.yaml');
    const warned = await doctorJson(['--config', looseFile]);
    expect(warned.code).toBe(0);
    const check = warned.checks.get('data dir')!;
    expect(check.status).toBe('warn');
    expect(check.details?.join('\n')).toContain('admin_token is 0644 (want 0600)');
    expect(check.fix).toBe(`chmod -R go-rwx ${loose}`);
  });

  it('bad YAML and unknown keys: every problem listed, the other checks skipped, exit 1', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'bad.yaml'), 'gateway:\n  port: [1,\n');
    const yaml = await gatehouse(['doctor', '--config', 'bad.yaml'], { cwd: dir });
    expect(yaml.code).toBe(1);
    expect(yaml.stdout).toMatch(/^fail\s+config\s+invalid configuration/m);
    expect(yaml.stdout).toContain('is not valid YAML');
    expect(yaml.stdout).toMatch(/fix: fix the file/);
    expect(yaml.stdout).toMatch(/^skip\s+provider\s/m);

    const keys = writeConfig(dir, { gateway: { bogus: 1, port: 'x' }, provider: { type: 'gpt' } }, 'keys.yaml');
    const report = await doctorJson(['--config', keys]);
    expect(report.code).toBe(1);
    const details = report.checks.get('config')?.details ?? [];
    expect(details.map((d) => d.split(':')[0]).sort()).toEqual(['gateway.bogus', 'gateway.port', 'provider.type']);
    expect(report.checks.get('config')?.fix).toContain('examples/gatehouse.yaml');
  });

  it('a bus that answers, a webhook port clash, and a start-up the gateway would refuse', async () => {
    const redis = await listenTcp(await freePort(), '+PONG\r\n');
    servers.push(redis);
    const dir = tempDir();
    const file = writeConfig(dir, {
      data_dir: join(dir, 'data'),
      gateway: { host: '0.0.0.0', port: 0 },
      bus: { driver: 'redis', url: `redis://127.0.0.1:${(redis.address() as { port: number }).port}` },
      channels: { webhook: { enabled: true, port: 0 } },
    });
    const report = await doctorJson(['--config', file]);
    expect(report.checks.get('bus')).toMatchObject({ status: 'ok' });
    expect(report.checks.get('webhook')).toMatchObject({ status: 'ok' });
    // 0.0.0.0 without any token: the gateway would refuse to start.
    expect(report.checks.get('start-up')).toMatchObject({ status: 'fail' });
    expect(report.checks.get('start-up')?.fix).toContain('gateway.auth.api_tokens');
    expect(report.code).toBe(1);

    const clash = writeConfig(
      dir,
      { data_dir: join(dir, 'data'), gateway: { port: 9999 }, channels: { webhook: { enabled: true, port: 9999 } } },
      'clash.yaml',
    );
    const clashed = await doctorJson(['--config', clash]);
    expect(clashed.checks.get('webhook')).toMatchObject({ status: 'fail' });
  });
});
