/**
 * The command line where a newcomer got stuck: a mistyped command, a bare `token`, a wrong `--token`, `logs`
 * with nothing to show, and `--url` to the local gateway without `--token`.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { killAllNow, readAdminToken, type Child } from '../../bench/processes.js';
import { resolveTarget } from '../../src/cli/target.js';
import { fingerprintToken } from '../../src/security/tokens.js';
import { freePort, gatehouse, removeTempDirs, startServe, tempDir, writeConfig } from './helpers.js';

describe('the command line for a newcomer', () => {
  let dir: string;
  let file: string;
  let url: string;
  let gateway: Child;

  beforeAll(async () => {
    dir = tempDir();
    file = writeConfig(dir, { data_dir: join(dir, 'data'), gateway: { port: await freePort() } });
    gateway = startServe(['--config', file], { cwd: dir });
    url = await gateway.ready;
  });
  afterAll(() => {
    killAllNow();
    removeTempDirs();
  });

  it('a mistyped command is a usage error that names the command meant', async () => {
    const run = await gatehouse(['stauts'], { cwd: dir });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain("unknown command 'stauts' (did you mean 'status'?)");
    const far = await gatehouse(['deploy'], { cwd: dir });
    expect(far.code).toBe(2);
    expect(far.stderr).toContain("unknown command 'deploy'");
    expect(far.stderr).not.toContain('did you mean');
  });

  it('a mistyped configuration key names the key meant', async () => {
    const bad = writeConfig(dir, { gateway: { prot: 1 } }, 'typo.yaml');
    const run = await gatehouse(['doctor', '--config', bad], { cwd: dir });
    expect(run.code).toBe(1);
    expect(run.stdout + run.stderr).toContain('gateway.prot: unknown key (did you mean port?)');
  });

  it('`gatehouse token` alone shows the token, as `token show` does', async () => {
    const run = await gatehouse(['token'], { cwd: dir });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain(`Admin token ${fingerprintToken(readAdminToken(join(dir, 'data')))}`);
  });

  it('status with a refused token fails (exit 1) and says which token and what to do', async () => {
    const run = await gatehouse(['status', '--token', 'not-the-token'], { cwd: dir });
    expect(run.code).toBe(1);
    expect(run.stdout).toContain(`Gatehouse at ${url}`); // health answers anyone, so the report is still shown
    expect(run.stderr).toMatch(/refused the token from --token: .*gatehouse token show/);
    const good = await gatehouse(['status'], { cwd: dir });
    expect(good.code, good.stderr).toBe(0);
  });

  it('logs with nothing to show says so (on stderr), rather than printing nothing', async () => {
    const run = await gatehouse(['logs', '--level', 'error', '--source', 'cron'], { cwd: dir });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toBe('');
    expect(run.stderr).toContain(
      "No log entries at level error or above from source cron in the gateway's recent buffer.",
    );
    const json = await gatehouse(['logs', '--json', '--level', 'error'], { cwd: dir });
    expect(json.stderr).toBe('');
  });

  it('--url to the local gateway on loopback uses the local token file; another host never gets it', async () => {
    const local = await gatehouse(['whoami', '--url', url.replace('127.0.0.1', 'localhost')], { cwd: dir });
    expect(local.code, local.stderr).toBe(0);
    expect(local.stdout).toContain('admin');
    // The same resolution in process: a loopback --url gets the local token file, another host gets no token.
    const io = { out: () => undefined, err: () => undefined, env: {}, cwd: dir, stdoutIsTTY: false, stdinIsTTY: false };
    const loopback = await resolveTarget(io, { url: 'http://[::1]:9', config: file });
    expect(loopback.tokenSource).toBe(join(dir, 'data', 'gateway_auth', 'admin_token'));
    const elsewhere = await resolveTarget(io, { url: 'http://192.0.2.1:9', config: file });
    expect(elsewhere).toMatchObject({ token: null, tokenSource: null });
  });
});
