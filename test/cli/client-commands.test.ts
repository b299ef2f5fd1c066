import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { GATEWAY_MAIN, GATEWAY_NODE_FLAGS, killAllNow, readAdminToken } from '../../bench/processes.js';
import { fingerprintToken } from '../../src/security/tokens.js';
import { startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai.js';
import { cleanEnv, freePort, gatehouse, removeTempDirs, startServe, tempDir, writeConfig } from './helpers.js';

/** A gateway home: a config on a fixed free port (so the local default target works), auth mode pairing. */
async function home(extra: Record<string, unknown> = {}): Promise<{ dir: string; file: string; dataDir: string }> {
  const dir = tempDir();
  const dataDir = join(dir, 'data');
  const file = writeConfig(dir, {
    data_dir: dataDir,
    gateway: { port: await freePort(), auth: { mode: 'pairing' } },
    budget: { daily_usd: 5 },
    ...extra,
  });
  return { dir, file, dataDir };
}

describe('gatehouse token, pair, status and logs against a running gateway', () => {
  let fake: FakeOpenAI;

  beforeAll(async () => {
    fake = await startFakeOpenAI();
  });
  afterEach(killAllNow);
  afterAll(async () => {
    await fake.close();
    removeTempDirs();
  });

  it('token show: where the generated admin token is and its fingerprint, never the token', async () => {
    const { dir, file, dataDir } = await home();
    const before = await gatehouse(['token', 'show', '--config', file], { cwd: dir });
    expect(before.code).toBe(0);
    expect(before.stdout).toContain(`No generated admin token at ${join(dataDir, 'gateway_auth', 'admin_token')}`);
    expect(before.stdout).toContain('the gateway generates one on its first start');

    const gw = startServe(['--config', file]);
    await gw.ready;
    const token = readAdminToken(dataDir);
    const shown = await gatehouse(['token', 'show'], { cwd: dir }); // ./gatehouse.yaml of the working directory
    expect(shown.code).toBe(0);
    expect(shown.stdout).toContain(`Admin token ${fingerprintToken(token)}`);
    expect(shown.stdout).not.toContain(token);
    const json = await gatehouse(['token', 'show', '--json', '--config', file]);
    expect(JSON.parse(json.stdout)).toEqual({
      file: join(dataDir, 'gateway_auth', 'admin_token'),
      exists: true,
      fingerprint: fingerprintToken(token),
    });
  });

  it('status: health, sessions and spend against today’s budget, from the local configuration', async () => {
    const { dir, file } = await home();
    const gw = startServe(['--config', file]);
    const url = await gw.ready;
    // No --url, no --token: the configuration's address and the generated admin token file.
    const status = await gatehouse(['status'], { cwd: dir });
    expect(status.code, status.stderr).toBe(0);
    expect(status.stdout).toContain(`Gatehouse at ${url}: degraded`);
    expect(status.stdout).toMatch(/provider\s+echo:echo · degraded \(/);
    expect(status.stdout).toMatch(/sessions\s+0 active, 0 in all/);
    expect(status.stdout).toMatch(/spend today\s+\$0\.0000 of a \$5\.00 daily budget/);

    const json = await gatehouse(['status', '--json', '--url', url], {
      env: { GATEHOUSE_TOKEN: readAdminToken(join(dir, 'data')) },
    });
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toMatchObject({
      url,
      health: { status: 'degraded' },
      spend_today_usd: 0,
      daily_budget_usd: 5,
    });
    gw.process.kill('SIGTERM');
    expect(await gw.exited).toBe(0);

    const down = await gatehouse(['status', '--url', url]);
    expect(down.code).toBe(1);
    expect(down.stderr).toContain(`cannot reach the gateway at ${url}`);
    expect(down.stderr).toContain('is it running?');
    // Something that is not a gateway: a clear failure, not a crash.
    const other = await gatehouse(['status', '--url', fake.url.replace(/\/v1$/, '')]);
    expect(other.code).toBe(1);
    expect(other.stderr).toMatch(/^gatehouse: .*no health report; is it a Gatehouse gateway\?/m);
  });

  it('pair: a code for a platform (auth mode pairing); a clear failure when pairing is off', async () => {
    const { dir, file } = await home();
    const gw = startServe(['--config', file]);
    await gw.ready;
    const pair = await gatehouse(['pair', 'telegram'], { cwd: dir });
    expect(pair.code, pair.stderr).toBe(0);
    expect(pair.stdout).toMatch(/^Pairing code for telegram: [A-Z0-9]{8}\n/);
    expect(pair.stdout).toContain('valid for 300 s');
    const json = await gatehouse(['pair', 'slack', '--json', '--config', file]);
    expect(JSON.parse(json.stdout)).toMatchObject({ platform: 'slack', ttl_seconds: 300 });
    expect((JSON.parse(json.stdout) as { code: string }).code).toMatch(/^[A-Z0-9]{8}$/);
    // A wrong API prefix is not "pairing is off".
    const token = readAdminToken(join(dir, 'data'));
    const url = await gw.ready;
    const wrong = await gatehouse(['pair', 'telegram', '--url', `${url}/nope`, '--token', token]);
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toContain('route not found');
    gw.process.kill('SIGTERM');
    expect(await gw.exited).toBe(0);

    const open = await home({ gateway: { port: await freePort(), auth: { mode: 'open' } } });
    const openGw = startServe(['--config', open.file]);
    await openGw.ready;
    const off = await gatehouse(['pair', 'telegram'], { cwd: open.dir });
    expect(off.code).toBe(1);
    expect(off.stderr).toContain('pairing is off on this gateway: set gateway.auth.mode to pairing');
  });

  it('logs: recent entries, JSON lines, filters, and -f follows new entries until Ctrl-C', async () => {
    const { dir, file } = await home();
    const gw = startServe(['--config', file]);
    const url = await gw.ready;
    await gw.line('stdout', /"message":"listening on/);
    const recent = await gatehouse(['logs', '-n', '20'], { cwd: dir });
    expect(recent.code, recent.stderr).toBe(0);
    expect(recent.stdout).toMatch(/^\d\d:\d\d:\d\d\.\d{3} INFO {2}lifecycle {2}listening on /m);
    const json = await gatehouse(['logs', '--json', '--source', 'lifecycle', '--config', file]);
    const entries = json.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { source: string; message: string });
    expect(entries.every((e) => e.source === 'lifecycle')).toBe(true);
    // Oldest first: the configuration was loaded before the gateway listened.
    const messages = entries.map((e) => e.message);
    expect(messages.indexOf('configuration loaded')).toBeLessThan(messages.indexOf(`listening on ${url}`));
    const warnings = await gatehouse(['logs', '--json', '--level', 'warning', '--config', file]);
    expect(warnings.code).toBe(0);
    expect(warnings.stdout).not.toContain('listening on');

    // -f: new entries as they come (a live configuration change logs one), then Ctrl-C ends it with exit 0.
    const follow = spawn(process.execPath, [...GATEWAY_NODE_FLAGS, GATEWAY_MAIN, 'logs', '-f', '-n', '1'], {
      cwd: dir,
      env: cleanEnv(),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    follow.stdout.on('data', (chunk: Buffer) => (out += chunk.toString('utf8')));
    const exited = new Promise<number | null>((resolve) => follow.once('close', resolve));
    try {
      const token = readAdminToken(join(dir, 'data'));
      const deadline = Date.now() + 15_000;
      const patch = () =>
        fetch(`${url}/api/v1/config`, {
          method: 'PATCH',
          headers: { 'content-type': 'application/json', 'x-api-token': token },
          body: JSON.stringify({ agent: { max_tool_iterations: 9 } }),
        });
      // Changed again every 2 s until the follow shows it (it may connect after the first change was logged);
      // PATCH is in the `lifecycle` rate group (5 a minute), so a later one may be refused: the first is not.
      expect((await patch()).status).toBe(200);
      let patchedAt = Date.now();
      while (!out.includes('configuration changed for this run') && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        if (Date.now() - patchedAt >= 2_000) {
          expect([200, 429]).toContain((await patch()).status);
          patchedAt = Date.now();
        }
      }
      expect(out).toContain('configuration changed for this run');
      follow.kill('SIGINT');
      expect(await exited).toBe(0);
    } finally {
      follow.kill('SIGKILL');
    }
  });

  it('token rotate: a new token for the next start; the old one stops working after the restart', async () => {
    const { dir, file, dataDir } = await home();
    const first = startServe(['--config', file]);
    const url = await first.ready;
    const old = readAdminToken(dataDir);
    const rotated = await gatehouse(['token', 'rotate', '--config', file]);
    expect(rotated.code).toBe(0);
    const fresh = readAdminToken(dataDir);
    expect(fresh).not.toBe(old);
    expect(rotated.stdout).toContain(`New admin token ${fingerprintToken(fresh)} (replaces ${fingerprintToken(old)})`);
    expect(rotated.stdout).toContain('Restart the gateway to apply it');
    expect(rotated.stdout).not.toContain(fresh);
    // The running gateway still takes the old one.
    expect((await gatehouse(['logs', '-n', '1', '--url', url, '--token', old])).code).toBe(0);
    first.process.kill('SIGTERM');
    expect(await first.exited).toBe(0);

    const second = startServe(['--config', file]);
    await second.ready;
    const refused = await gatehouse(['logs', '-n', '1', '--url', url, '--token', old]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('UNAUTHORIZED');
    expect(refused.stderr).toContain('pass --token or set GATEHOUSE_TOKEN');
    expect((await gatehouse(['logs', '-n', '1'], { cwd: dir })).code).toBe(0); // the new file's token

    const printed = await gatehouse(['token', 'rotate', '--print', '--config', file]);
    expect(printed.stdout).toContain(`Admin token: ${readAdminToken(dataDir)}`);
  });
});
