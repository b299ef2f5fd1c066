import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import { parse } from 'yaml';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { killAllNow } from '../../bench/processes.js';
import { loadConfig } from '../../src/config/config.load.js';
import { adminTokenPath } from '../../src/security/admin-token.js';
import { gatehouse, gatehouseOnTerminal, HAS_SCRIPT, plain, removeTempDirs, startServe, tempDir } from './helpers.js';

/** A stand-in for a local Ollama: GET /api/tags lists `models`. */
async function fakeOllama(models: string[]): Promise<{ server: Server; host: string }> {
  const server = createServer((req, res) => {
    if (req.url === '/api/tags') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ models: models.map((name) => ({ name, model: name })) }));
    } else {
      res.writeHead(404).end();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, host: `127.0.0.1:${(server.address() as { port: number }).port}` };
}

describe('gatehouse init', () => {
  afterEach(killAllNow);
  afterAll(removeTempDirs);

  it('--yes writes a commented, valid gatehouse.yaml (0600) that a gateway starts from', async () => {
    const dir = tempDir();
    const run = await gatehouse(['init', '--yes'], { cwd: dir });
    expect(run.code).toBe(0);
    const file = join(dir, 'gatehouse.yaml');
    expect(run.stdout).toContain(`Wrote ${file} (mode 0600)`);
    expect(run.stdout).toContain('gatehouse serve');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const text = readFileSync(file, 'utf8');
    expect(text).toMatch(/^# /); // commented
    expect(text).toContain('# storage:'); // keys left at their defaults are there, commented out

    const loaded = loadConfig({ argv: ['--config', file], env: {}, cwd: dir });
    expect(loaded.warnings).toEqual([]);
    expect(loaded.providerSource).toBe('file');
    expect(loaded.config.provider.type).toBe('echo');
    expect(loaded.config.gateway).toMatchObject({ host: '127.0.0.1', port: 58123, auth: { mode: 'pairing' } });
    expect(loaded.config.channels.webhook.enabled).toBe(false);
    expect(loaded.config.channels.webhook.secret).toMatch(/^[A-Za-z0-9_-]{43}$/);

    // ./gatehouse.yaml of the working directory, the port made free-to-pick by a flag.
    const gw = startServe(['--port', '0'], { cwd: dir });
    const url = await gw.ready;
    const health = await fetch(`${url}/api/v1/health`);
    expect(health.status).toBe(200);
    gw.process.kill('SIGTERM');
    expect(await gw.exited).toBe(0);
    expect(existsSync(join(dir, 'data', 'gatehouse.db'))).toBe(true);
  });

  it('picks the provider the environment suggests and never writes the API key', async () => {
    const dir = tempDir();
    const key = 'sk-init-test-0123456789abcdef';
    const run = await gatehouse(['init', '--yes'], {
      cwd: dir,
      env: { OPENAI_API_KEY: key, ANTHROPIC_API_KEY: 'sk-ant-init-test' },
    });
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('the key is read from OPENAI_API_KEY at start; it is not in the file');
    const text = readFileSync(join(dir, 'gatehouse.yaml'), 'utf8');
    expect(text).not.toContain(key);
    expect(text).not.toContain('sk-ant-init-test');
    expect((parse(text) as { provider: unknown }).provider).toEqual({ type: 'openai' });
    // At start the key comes from the environment.
    const loaded = loadConfig({ argv: [], env: { OPENAI_API_KEY: key }, cwd: dir });
    expect(loaded.config.provider).toMatchObject({ type: 'openai', api_key: key });

    const anthropic = tempDir();
    expect((await gatehouse(['init', '-y'], { cwd: anthropic, env: { ANTHROPIC_API_KEY: 'sk-ant-x' } })).code).toBe(0);
    const written = parse(readFileSync(join(anthropic, 'gatehouse.yaml'), 'utf8')) as { provider: unknown };
    expect(written.provider).toEqual({ type: 'anthropic' });
  });

  it('finds a local Ollama (OLLAMA_HOST) and uses its OpenAI-compatible API with a pulled model', async () => {
    const ollama = await fakeOllama(['qwen2.5:0.5b', 'llama3.2:latest']);
    try {
      const dir = tempDir();
      const run = await gatehouse(['init', '--yes'], { cwd: dir, env: { OLLAMA_HOST: ollama.host } });
      expect(run.code).toBe(0);
      const written = parse(readFileSync(join(dir, 'gatehouse.yaml'), 'utf8')) as { provider: unknown };
      expect(written.provider).toEqual({
        type: 'openai',
        base_url: `http://${ollama.host}/v1`,
        model: 'qwen2.5:0.5b',
      });
    } finally {
      ollama.server.close();
    }
    // Nothing answering there: echo, and init does not wait long.
    const dir = tempDir();
    const started = Date.now();
    const run = await gatehouse(['init', '--yes'], { cwd: dir, env: { OLLAMA_HOST: ollama.host } });
    expect(run.code).toBe(0);
    expect(Date.now() - started).toBeLessThan(10_000);
    expect((parse(readFileSync(join(dir, 'gatehouse.yaml'), 'utf8')) as { provider: unknown }).provider).toEqual({
      type: 'echo',
    });
  });

  it('refuses to overwrite without --force, writes elsewhere with --output', async () => {
    const dir = tempDir();
    const file = join(dir, 'gatehouse.yaml');
    writeFileSync(file, 'gateway: {port: 1234}\n');
    const refused = await gatehouse(['init', '--yes'], { cwd: dir });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('already exists; pass --force');
    expect(readFileSync(file, 'utf8')).toBe('gateway: {port: 1234}\n');

    const forced = await gatehouse(['init', '--yes', '--force'], { cwd: dir });
    expect(forced.code).toBe(0);
    expect(readFileSync(file, 'utf8')).toContain('# Gatehouse configuration');
    expect(statSync(file).mode & 0o777).toBe(0o600);

    const other = await gatehouse(['init', '--yes', '--output', 'conf/gh.yaml'], { cwd: dir });
    expect(other.code).toBe(1);
    expect(other.stderr).toContain('does not exist');
    const elsewhere = await gatehouse(['init', '--yes', '-o', 'gh.yaml'], { cwd: dir });
    expect(elsewhere.code).toBe(0);
    expect(elsewhere.stdout).toContain('gatehouse serve --config gh.yaml');
    expect(existsSync(join(dir, 'gh.yaml'))).toBe(true);
  });

  it('without a terminal and without --yes: exit 2, a hint, nothing written', async () => {
    const dir = tempDir();
    const run = await gatehouse(['init'], { cwd: dir, input: 'openai\n' });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('standard input is not a terminal; pass --yes');
    expect(existsSync(join(dir, 'gatehouse.yaml'))).toBe(false);
  });

  it.skipIf(!HAS_SCRIPT)('asks on a terminal: provider, model, bind address, port, auth, webhook', async () => {
    const dir = tempDir();
    // Typed ahead: an invalid provider first (asked again), then anthropic, a model, a non-loopback bind, port 0,
    // allowlist with two users, the webhook on port 0.
    const answers = ['gpt', 'anthropic', 'claude-test-1', '0.0.0.0', '0', 'allowlist', 'telegram:42, alice', 'y', '0'];
    const run = await gatehouseOnTerminal(['init'], {
      cwd: dir,
      env: { OLLAMA_HOST: '127.0.0.1:9' },
      input: `${answers.join('\n')}\n`,
    });
    const screen = plain(run.stdout);
    expect(run.code, screen).toBe(0);
    expect(screen).toContain('Provider [echo]:');
    expect(screen).toContain('one of: openai, anthropic, ollama, echo');
    expect(screen).toContain('Auth mode [pairing]:');
    expect(screen).toContain('Enable the webhook server [y/N]:');

    const loaded = loadConfig({ argv: [], env: { ANTHROPIC_API_KEY: 'sk-ant-t' }, cwd: dir });
    expect(loaded.config.provider).toMatchObject({ type: 'anthropic', model: 'claude-test-1', api_key: 'sk-ant-t' });
    expect(loaded.config.gateway).toMatchObject({ host: '0.0.0.0', port: 0 });
    expect(loaded.config.gateway.auth).toMatchObject({ mode: 'allowlist', allowed_users: ['telegram:42', 'alice'] });
    expect(loaded.config.channels.webhook).toMatchObject({ enabled: true, port: 0 });

    // A non-loopback bind needs a token to start: init generated the admin token file, shown once.
    const tokenFile = adminTokenPath(join(dir, 'data'));
    const token = readFileSync(tokenFile, 'utf8').trim();
    expect(statSync(tokenFile).mode & 0o777).toBe(0o600);
    expect(screen).toContain(`Admin token (shown once): ${token}`);
    const gw = startServe([], { cwd: dir });
    const url = await gw.ready;
    const health = await fetch(`${url.replace('0.0.0.0', '127.0.0.1')}/api/v1/health`);
    expect(health.status).toBe(200);
    gw.process.kill('SIGTERM');
    expect(await gw.exited).toBe(0);
  });
});
