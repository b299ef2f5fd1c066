import { mkdtempSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { killAllNow, readAdminToken, spawnGateway } from '../../bench/processes.js';
import { adminTokenPath } from '../../src/security/admin-token.js';

const tempDir = () => mkdtempSync(join(tmpdir(), 'gatehouse-e2e-'));

describe('the built server over a real socket', () => {
  afterEach(killAllNow);

  it('starts, answers, refuses without a token, drains on SIGTERM and exits 0', async () => {
    const dir = tempDir();
    const configFile = join(dir, 'gatehouse.yaml');
    writeFileSync(
      configFile,
      `data_dir: ${join(dir, 'data')}\ngateway:\n  port: 0\n  auth:\n    api_tokens: [e2e-api-token]\n`,
    );
    const gw = spawnGateway(['--config', configFile]);
    const url = await gw.ready;
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);

    const health = await fetch(`${url}/api/v1/health`);
    expect(health.status).toBe(200);
    expect(((await health.json()) as { status: string }).status).toBe('degraded');
    const unknown = await fetch(`${url}/api/v1/sessions-nope`, { headers: { 'x-api-token': 'e2e-api-token' } });
    expect(unknown.status).toBe(404);

    gw.process.kill('SIGTERM');
    expect(await gw.exited).toBe(0);
    const lines = gw.stdout.map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines.some((l) => l.message === 'draining')).toBe(true);
    expect(lines.every((l) => typeof l.timestamp === 'string' && typeof l.level === 'string')).toBe(true);
    // The configured token never reaches a log line.
    expect(gw.stdout.join('\n')).not.toContain('e2e-api-token');
  });

  it('generates an admin token on first start, prints it once and keeps it 0600', async () => {
    const dir = tempDir();
    const dataDir = join(dir, 'data');
    const first = spawnGateway(['--port', '0', '--data-dir', dataDir]);
    const url = await first.ready;
    const token = readAdminToken(dataDir);
    expect(token.length).toBeGreaterThanOrEqual(32);
    expect(statSync(adminTokenPath(dataDir)).mode & 0o777).toBe(0o600);
    expect(await first.line('stderr', /Admin token:/)).toContain(token);
    expect(first.stdout.join('\n')).not.toContain(token);
    const res = await fetch(`${url}/api/v1/health`);
    expect(res.status).toBe(200);
    first.process.kill('SIGINT');
    expect(await first.exited).toBe(0);

    const second = spawnGateway(['--port', '0', '--data-dir', dataDir]);
    await second.ready;
    expect(second.stderr.join('\n')).not.toContain(token);
    second.process.kill('SIGTERM');
    expect(await second.exited).toBe(0);
    expect(second.stdout.join('\n')).not.toContain(token);
  });

  it('refuses a second gateway on a held SQLite data dir, whatever its port, in one line naming the holder', async () => {
    const dataDir = join(tempDir(), 'data');
    const first = spawnGateway(['--port', '0', '--data-dir', dataDir]);
    await first.ready;
    // Another port gives another instance id: the data dir itself is what is held (one process per SQLite file).
    const second = spawnGateway(['--port', '0', '--data-dir', dataDir]);
    expect(await second.exited).toBe(1);
    const text = second.stderr.join('\n');
    expect(text).toContain(`data dir ${dataDir} is in use by another gateway (pid ${first.pid} on `);
    expect(text).toContain('storage.driver: postgres');
    expect(text).toContain('start-up refused');
    expect(text).not.toMatch(/^\s+at /m); // one clear line, no stack trace
    expect(second.stdout).toEqual([]); // refused before it logged or wrote anything
    first.process.kill('SIGTERM');
    expect(await first.exited).toBe(0);
  });

  it('starts at once after a SIGKILL, though a note left behind names a live process (a recycled pid)', async () => {
    const dataDir = join(tempDir(), 'data');
    const first = spawnGateway(['--port', '0', '--data-dir', dataDir], { group: true });
    await first.ready;
    first.killGroup('SIGKILL');
    // The note now names a live process of this machine, as after a container restart where the pid was reused.
    writeFileSync(
      join(dataDir, 'gatehouse.lock.json'),
      JSON.stringify({ pid: process.pid, host: 'x', started_at: '' }),
    );
    const second = spawnGateway(['--port', '0', '--data-dir', dataDir]); // no wait for the reaping of the first
    await second.ready;
    expect(await first.exited).toBe('SIGKILL');
    second.process.kill('SIGTERM');
    expect(await second.exited).toBe(0);
  });

  it('refuses to start with every configuration error listed', async () => {
    const dir = tempDir();
    const configFile = join(dir, 'gatehouse.yaml');
    writeFileSync(configFile, 'gateway:\n  bogus_key: 1\n  port: "x"\nsecurity:\n  profile: lax\n');
    const gw = spawnGateway(['--config', configFile]);
    expect(await gw.exited).toBe(2);
    const text = gw.stderr.join('\n');
    for (const path of ['gateway.bogus_key', 'gateway.port', 'security.profile']) expect(text).toContain(path);
  });

  it('refuses a non-loopback bind without tokens, and minimal on a non-loopback bind', async () => {
    const noTokens = spawnGateway(['--host', '0.0.0.0', '--port', '0', '--data-dir', join(tempDir(), 'data')]);
    expect(await noTokens.exited).toBe(2);
    expect(noTokens.stderr.join('\n')).toMatch(/token/i);

    const dir = tempDir();
    const configFile = join(dir, 'gatehouse.yaml');
    writeFileSync(configFile, `data_dir: ${join(dir, 'data')}\nsecurity:\n  profile: minimal\n`);
    const minimal = spawnGateway(['--config', configFile, '--host', '0.0.0.0', '--port', '0']);
    expect(await minimal.exited).toBe(2);
    expect(minimal.stderr.join('\n')).toMatch(/minimal/);
  });
});
