import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { killAllNow, readAdminToken, type Child } from '../../bench/processes.js';
import { echoReply, startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai.js';
import { HAS_SCRIPT, jsonLines, removeTempDirs, startOnTerminal, startServe, tempDir, writeConfig } from './helpers.js';

/** Waits until the banner (standard error) and, at log level info, the logger's line (standard output) arrived. */
async function bannerShown(gw: Child, logged = true): Promise<void> {
  await gw.line('stderr', /"message":"listening on/);
  if (logged) await gw.line('stdout', /"message":"listening on/);
}

describe('gatehouse serve: the start-up banner and provider auto-detection', () => {
  let fake: FakeOpenAI;

  beforeAll(async () => {
    fake = await startFakeOpenAI();
    fake.always(echoReply);
  });
  afterEach(killAllNow);
  afterAll(async () => {
    await fake.close();
    removeTempDirs();
  });

  it('OPENAI_API_KEY with no provider block selects openai; the banner says which model and why', async () => {
    const dir = tempDir();
    const key = 'sk-banner-test-0123456789';
    const gw = startServe(['--port', '0', '--data-dir', join(dir, 'data')], {
      cwd: dir,
      env: { OPENAI_API_KEY: key, OPENAI_BASE_URL: fake.url, ANTHROPIC_API_KEY: 'sk-ant-banner' },
    });
    const url = await gw.ready;
    await bannerShown(gw);
    // Not a terminal: JSON lines only, on both streams.
    const banner = jsonLines(gw.stderr);
    expect(banner.length).toBe(gw.stderr.filter((l) => l.trim() !== '').length);
    expect(banner[0]).toMatchObject({
      level: 'info',
      source: 'lifecycle',
      url,
      provider: 'openai',
      model: 'gpt-4o-mini',
      provider_source: 'environment',
      config_file: null,
    });
    expect(String(banner[0]!.message)).toBe(
      `listening on ${url}: provider openai, model gpt-4o-mini (OPENAI_API_KEY is set and the configuration has no provider block)`,
    );
    expect(jsonLines(gw.stdout).length).toBe(gw.stdout.length);
    expect(jsonLines(gw.stdout).find((l) => String(l.message).startsWith('listening on'))).toMatchObject({
      provider: 'openai',
      provider_source: 'environment',
    });

    // The detected provider is the one that answers.
    const token = readAdminToken(join(dir, 'data'));
    const reply = await fetch(`${url}/api/v1/message`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-token': token },
      body: JSON.stringify({ platform: 'cli', user_id: 'u1', chat_id: 'c1', text: 'hello', wait: true }),
    });
    expect(reply.status).toBe(200);
    expect(((await reply.json()) as { response: string }).response).toBe('fake: hello');
    expect(fake.requests.at(-1)?.headers.authorization).toBe(`Bearer ${key}`);

    gw.process.kill('SIGTERM');
    expect(await gw.exited).toBe(0);
    expect([...gw.stdout, ...gw.stderr].join('\n')).not.toContain(key);
  });

  it('a provider in the file wins over the environment, and the banner names the file', async () => {
    const dir = tempDir();
    const file = writeConfig(dir, {
      data_dir: join(dir, 'data'),
      gateway: { port: 0, auth: { api_tokens: ['banner-api-token'] } },
      provider: { type: 'openai', base_url: fake.url, model: 'fake-model' },
      logs: { level: 'warning' },
    });
    const gw = startServe(['--config', file], { env: { ANTHROPIC_API_KEY: 'sk-ant-banner' } });
    const url = await gw.ready;
    await bannerShown(gw, false); // logs.level warning: the banner is shown all the same
    const [line] = jsonLines(gw.stderr);
    expect(line).toMatchObject({ url, provider: 'openai', model: 'fake-model', provider_source: 'file' });
    expect(String(line!.message)).toContain(`(set in ${file})`);
    // Configured tokens: no admin token file, so none is mentioned.
    expect(line!.admin_token_file).toBeUndefined();
    gw.process.kill('SIGTERM');
    expect(await gw.exited).toBe(0);
  });

  it('the first start shows the signed-in dashboard link once; a later start only where the token file is', async () => {
    const dir = tempDir();
    const dataDir = join(dir, 'data');
    const first = startServe(['--port', '0', '--data-dir', dataDir], { cwd: dir });
    const url = await first.ready;
    await bannerShown(first);
    await first.line('stderr', /Open the dashboard/);
    const token = readAdminToken(dataDir);
    const lines = jsonLines(first.stderr);
    expect(lines[0]).toMatchObject({ provider: 'echo', model: null, provider_source: 'default' });
    expect(String(lines[0]!.message)).toContain('neither OPENAI_API_KEY nor ANTHROPIC_API_KEY is set');
    const link = lines.map((l) => String(l.message)).find((m) => m.startsWith('Open the dashboard'));
    expect(link).toContain(`${url}/#token=${token} `);
    expect(lines.find((l) => String(l.message).startsWith('Admin token:'))).toMatchObject({
      level: 'warning',
      admin_token_file: join(dataDir, 'gateway_auth', 'admin_token'),
    });
    expect(first.stdout.join('\n')).not.toContain(token);
    first.process.kill('SIGTERM');
    expect(await first.exited).toBe(0);

    const second = startServe(['--port', '0', '--data-dir', dataDir], { cwd: dir });
    await second.ready;
    await bannerShown(second);
    expect(jsonLines(second.stderr)[0]).toMatchObject({
      admin_token_file: join(dataDir, 'gateway_auth', 'admin_token'),
    });
    expect([...second.stderr, ...second.stdout].join('\n')).not.toContain(token);
    second.process.kill('SIGTERM');
    expect(await second.exited).toBe(0);
  });

  it.skipIf(!HAS_SCRIPT)('on a terminal: a human banner and readable log lines, no JSON', async () => {
    const dir = tempDir();
    const dataDir = join(dir, 'data');
    const first = startOnTerminal(['--port', '0', '--data-dir', dataDir], {
      cwd: dir,
      env: { ANTHROPIC_API_KEY: 'sk-ant-terminal-0123456789' },
    });
    try {
      await first.waitFor(/Open the dashboard \(signed in\): http:\/\/127\.0\.0\.1:\d+\/#token=\S+/);
      await first.waitFor(/INFO\s+lifecycle\s+listening on/);
      const screen = first.screen();
      const token = readAdminToken(dataDir);
      expect(screen).toMatch(/^Gatehouse listening on http:\/\/127\.0\.0\.1:\d+ \(version /m);
      expect(screen).toMatch(/provider\s+anthropic, model \S+ \(the provider's default model\)/);
      expect(screen).toContain('why: ANTHROPIC_API_KEY is set and the configuration has no provider block');
      expect(screen).toContain(`Admin token: ${token}`);
      expect(screen).not.toMatch(/^\{/m); // no JSON line on the terminal
      expect(screen).not.toContain('sk-ant-terminal-0123456789');
    } finally {
      await first.stop();
    }

    const second = startOnTerminal(['--port', '0', '--data-dir', dataDir], { cwd: dir });
    try {
      await second.waitFor(/admin token\s+in \S+admin_token \(not shown again; gatehouse token show\)/);
      await second.waitFor(/INFO\s+lifecycle\s+listening on/);
      expect(second.screen()).not.toContain(readAdminToken(dataDir));
      expect(second.screen()).toMatch(/provider\s+echo \(answers with the message itself/);
      expect(second.screen()).not.toMatch(/^\{/m);
    } finally {
      await second.stop();
    }
  });
});
