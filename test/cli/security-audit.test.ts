/**
 * `gatehouse security audit` as users run it: the built binary
 * (`node dist/src/main.js`, built by `npm run build`) against configuration
 * files in a temp dir, no gateway running. Checks the finding ids, the exit
 * codes (1 on a critical finding, else 0; 2 on a usage error), `--json`, the
 * human table, and that no secret is printed.
 */
import { execFile } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SelfAuditReport } from '../../src/self-audit/index.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const MAIN = join(ROOT, 'dist', 'src', 'main.js');

const API = 'Q7v2mK9xR4tLp8sW1zN6bH3cJ5dF0gYe';
const ADMIN = 'Zr8Tq2Wv6Xn4Bm1Kc9Hj3Lp5Sd7Fg0Ay';
const WEBHOOK_SECRET = 'f3a91c07d2b84e6a9c15e0b7d4a2f86c';

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

let home: string;
let files = 0;

beforeAll(() => {
  if (!existsSync(MAIN)) throw new Error(`${MAIN} is missing: run npm run build first`);
  home = mkdtempSync(join(tmpdir(), 'gatehouse-audit-cli-'));
});
afterAll(() => {
  rmSync(home, { recursive: true, force: true });
});

/** Runs the built binary in `home` with an environment free of GATEHOUSE_* and provider keys. */
function gatehouse(args: string[]): Promise<Run> {
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: home, TZ: 'UTC' };
  return new Promise((resolve) => {
    execFile(process.execPath, [MAIN, ...args], { cwd: home, env, timeout: 15_000 }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === 'number' ? err.code : -1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

/**
 * Writes a configuration (JSON is YAML) over a safe base — loopback, two strong separate tokens, a private
 * data dir — with `blocks` replacing whole top-level blocks. Returns the file and its data dir.
 */
function configFile(blocks: Record<string, unknown> = {}): { file: string; dataDir: string } {
  const dir = join(home, `case-${++files}`);
  const dataDir = join(dir, 'data');
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  chmodSync(dir, 0o700);
  chmodSync(dataDir, 0o700);
  const file = join(dir, 'gatehouse.yaml');
  const config = {
    data_dir: dataDir,
    gateway: { host: '127.0.0.1', auth: { api_tokens: [API], admin_tokens: [ADMIN] } },
    ...blocks,
  };
  writeFileSync(file, JSON.stringify(config, null, 2));
  return { file, dataDir };
}

/** Runs the audit with `--json` and returns the exit code and the report. */
async function audit(file: string): Promise<{ code: number; report: SelfAuditReport; run: Run }> {
  const run = await gatehouse(['security', 'audit', '--config', file, '--json']);
  let report: SelfAuditReport;
  try {
    report = JSON.parse(run.stdout) as SelfAuditReport;
  } catch {
    throw new Error(`not JSON (exit ${run.code}): ${run.stdout}\n${run.stderr}`);
  }
  return { code: run.code, report, run };
}

const withAuth = (auth: Record<string, unknown>, host = '127.0.0.1') => ({
  gateway: { host, auth: { api_tokens: [API], admin_tokens: [ADMIN], ...auth } },
});

describe('gatehouse security audit', () => {
  it('exits 0 with no findings for a safe configuration, in JSON and as a table', async () => {
    const { file } = configFile();
    const { code, report } = await audit(file);
    expect(code).toBe(0);
    expect(report).toEqual({ findings: [], summary: { critical: 0, warning: 0, info: 0 } });

    const human = await gatehouse(['security', 'audit', '--config', file]);
    expect(human.code).toBe(0);
    expect(human.stdout).toContain(`Security audit of ${file}`);
    expect(human.stdout).toContain('No findings.');
    expect(human.stdout).toContain('0 critical, 0 warning, 0 info');
    expect(human.stderr).toBe('');
  });

  // Each case: the configuration blocks, the findings it must raise (id → severity), the exit code.
  const cases: Array<[string, Record<string, unknown>, Record<string, string>, number]> = [
    [
      'a public bind without allowed_hosts',
      withAuth({}, '0.0.0.0'),
      { 'gateway.bind_public': 'warning', 'gateway.allowed_hosts_missing': 'critical' },
      1,
    ],
    [
      'a public bind whose allowed_hosts are all wildcards',
      withAuth({ allowed_hosts: ['*', '0.0.0.0'] }, '0.0.0.0'),
      { 'gateway.bind_public': 'warning', 'gateway.allowed_hosts_missing': 'critical' },
      1,
    ],
    [
      'a public bind with exact allowed_hosts and a dropped wildcard',
      withAuth({ allowed_hosts: ['gw.example.com', '*'] }, '10.0.0.4'),
      { 'gateway.bind_public': 'warning', 'gateway.allowed_hosts_wildcard': 'info' },
      0,
    ],
    [
      'a well-known token',
      { gateway: { auth: { api_tokens: ['change-me'], admin_tokens: [ADMIN] } } },
      { 'auth.token_well_known': 'critical' },
      1,
    ],
    [
      'a short token and a low-variety one',
      { gateway: { auth: { api_tokens: ['k3N_9fQz-Lr2Vt8WpXa1'], admin_tokens: ['ab'.repeat(20)] } } },
      { 'auth.token_short': 'warning', 'auth.token_low_variety': 'warning' },
      0,
    ],
    [
      'an api token that is also an admin token',
      { gateway: { auth: { api_tokens: [API], admin_tokens: [API] } } },
      { 'auth.api_token_is_admin': 'warning' },
      0,
    ],
    [
      'api tokens without admin tokens',
      { gateway: { auth: { api_tokens: [API] } } },
      { 'auth.admin_fallback': 'info' },
      0,
    ],
    [
      'loopback_trust behind a proxy on this host',
      withAuth({ allowed_hosts: ['gw.example.com'] }),
      { 'auth.loopback_trust_proxy': 'warning' },
      0,
    ],
    ['profile minimal on loopback', { security: { profile: 'minimal' } }, { 'security.profile_minimal': 'warning' }, 0],
    [
      'profile minimal off loopback',
      { ...withAuth({ allowed_hosts: ['gw.example.com'] }, '10.0.0.4'), security: { profile: 'minimal' } },
      { 'security.profile_minimal': 'critical', 'gateway.bind_public': 'warning' },
      1,
    ],
    [
      'the webhook on 0.0.0.0 without a secret',
      { channels: { webhook: { enabled: true } } },
      { 'webhook.no_secret': 'critical', 'webhook.bind_public': 'warning' },
      1,
    ],
    [
      'the webhook on 0.0.0.0 with change-me',
      { channels: { webhook: { enabled: true, secret: 'change-me' } } },
      { 'webhook.secret_weak': 'critical', 'webhook.bind_public': 'warning' },
      1,
    ],
    [
      'the webhook on loopback without a secret',
      { channels: { webhook: { enabled: true, host: '127.0.0.1' } } },
      { 'webhook.no_secret': 'warning' },
      0,
    ],
    [
      'a keyed provider over plain HTTP off loopback, no budget',
      { provider: { type: 'openai', base_url: 'http://10.0.0.5:8000/v1', api_key: 'sk-plain-http-key-5b2e' } },
      { 'provider.plain_http': 'critical', 'budget.missing': 'warning' },
      1,
    ],
    [
      'embeddings over plain HTTP without a key',
      { embeddings: { base_url: 'http://embed.lan/v1', model: 'e' } },
      { 'embeddings.plain_http': 'warning' },
      0,
    ],
    [
      'Anthropic without a daily budget',
      { provider: { type: 'anthropic', api_key: 'sk-ant-key-abcdef-0123' } },
      { 'budget.missing': 'warning' },
      0,
    ],
  ];

  it.each(cases)('reports %s', async (_label, blocks, expected, exitCode) => {
    const { file } = configFile(blocks);
    const { code, report, run } = await audit(file);
    const found = Object.fromEntries(report.findings.map((f) => [f.id, f.severity]));
    expect(found, run.stdout).toEqual(expected);
    expect(code, run.stderr).toBe(exitCode);
    if (exitCode === 1) expect(run.stderr).toMatch(/^gatehouse: \d+ critical findings?\n$/);
    for (const secret of ['change-me', 'sk-plain-http-key-5b2e', 'sk-ant-key-abcdef-0123', API, ADMIN]) {
      expect(run.stdout).not.toContain(secret);
    }
  });

  it('reports a world-readable data dir and its files (critical), and a missing data dir (info)', async () => {
    const { file, dataDir } = configFile();
    writeFileSync(join(dataDir, 'gatehouse.db'), '');
    chmodSync(join(dataDir, 'gatehouse.db'), 0o644);
    chmodSync(dataDir, 0o755);
    const { code, report } = await audit(file);
    expect(code).toBe(1);
    const world = report.findings.find((f) => f.id === 'data.world_accessible')!;
    expect(world.severity).toBe('critical');
    expect(world.found).toContain('gatehouse.db (0644: other users may read it)');
    expect(report.findings.find((f) => f.id === 'data.group_accessible')?.severity).toBe('warning');

    rmSync(dataDir, { recursive: true });
    const missing = await audit(file);
    expect(missing.code).toBe(0);
    expect(missing.report.findings.map((f) => f.id)).toEqual(['data.dir_missing']);
  });

  it('prints a plain table (no colour off a terminal) with the fix under each finding', async () => {
    const { file } = configFile({
      ...withAuth({}, '0.0.0.0'),
      channels: { webhook: { enabled: true, host: '127.0.0.1', secret: WEBHOOK_SECRET } },
    });
    const run = await gatehouse(['security', 'audit', '--config', file]);
    expect(run.code).toBe(1);
    expect(run.stdout).not.toContain('\u001b[');
    expect(run.stdout).toMatch(/SEVERITY\s+ID\s+FINDING/);
    expect(run.stdout).toMatch(/critical\s+gateway\.allowed_hosts_missing\s+No usable allowed_hosts/);
    expect(run.stdout).toMatch(/warning\s+gateway\.bind_public/);
    expect(run.stdout).toContain('fix: Bind gateway.host to 127.0.0.1');
    expect(run.stdout).toContain('1 critical, 1 warning, 0 info');
    expect(run.stdout.indexOf('gateway.allowed_hosts_missing')).toBeLessThan(run.stdout.indexOf('gateway.bind_public'));
    expect(run.stdout).not.toContain(WEBHOOK_SECRET);
    expect(run.stderr).toBe('gatehouse: 1 critical finding\n');
  });

  it('exits 1 on an invalid configuration and 2 on a usage error, with --help at 0', async () => {
    const dir = mkdtempSync(join(home, 'bad-'));
    const bad = join(dir, 'gatehouse.yaml');
    writeFileSync(bad, 'gateway: {bogus_key: 1}\n');
    const invalid = await gatehouse(['security', 'audit', '--config', bad]);
    expect(invalid.code).toBe(1);
    expect(invalid.stderr).toContain('gateway.bogus_key');

    expect((await gatehouse(['security', 'audit', '--bogus'])).code).toBe(2);
    expect((await gatehouse(['security'])).code).toBe(2);
    const help = await gatehouse(['security', 'audit', '--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('--json');
    expect(help.stdout).toContain('--config');
  });
});
