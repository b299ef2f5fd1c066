import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { claimInstanceFile, InstanceTakenError, instanceIdOf } from './instance-id.js';

const dirs: string[] = [];
function dir(): string {
  const made = mkdtempSync(join(tmpdir(), 'gatehouse-instance-'));
  dirs.push(made);
  return made;
}
afterEach(() => {
  for (const made of dirs.splice(0)) rmSync(made, { recursive: true, force: true });
});

describe('instanceIdOf', () => {
  it('is stable for one host, data dir and port, and differs when any of them does', () => {
    const base = { configured: null, dataDir: '/srv/gatehouse/data', port: 18789, host: 'node-1' };
    const id = instanceIdOf(base);
    expect(id).toMatch(/^gw_[0-9a-f]{20}$/);
    expect(instanceIdOf({ ...base })).toBe(id);
    expect(instanceIdOf({ ...base, dataDir: '/srv/gatehouse/data/' })).toBe(id); // resolved
    expect(instanceIdOf({ ...base, host: 'node-2' })).not.toBe(id);
    expect(instanceIdOf({ ...base, dataDir: '/srv/other' })).not.toBe(id);
    expect(instanceIdOf({ ...base, port: 18790 })).not.toBe(id);
  });

  it('uses the configured name as given', () => {
    expect(instanceIdOf({ configured: 'eu-1', dataDir: '/x', port: 1 })).toBe('eu-1');
  });
});

describe('claimInstanceFile', () => {
  it('writes this pid, takes over a dead predecessor’s file, and removes its own at release', async () => {
    const data = dir();
    const file = join(data, 'instance-gw_a.pid');
    // A pid that exited: a short-lived child.
    const child = spawn(process.execPath, ['-e', '0']);
    const deadPid = child.pid!;
    await new Promise((resolve) => child.once('exit', resolve));
    writeFileSync(file, `${deadPid}\n`);
    const release = claimInstanceFile(data, 'gw_a');
    expect(readFileSync(file, 'utf8')).toBe(`${process.pid}\n`);
    // Claimed again by this same process (a gateway restarted in-process): allowed.
    claimInstanceFile(data, 'gw_a')();
    const again = claimInstanceFile(data, 'gw_a');
    release();
    again();
    expect(() => readFileSync(file)).toThrow();
  });

  it('refuses while another live process holds the name', async () => {
    const data = dir();
    const child = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 30000)']);
    try {
      writeFileSync(join(data, 'instance-gw_b.pid'), `${child.pid}\n`);
      expect(() => claimInstanceFile(data, 'gw_b')).toThrow(InstanceTakenError);
      expect(() => claimInstanceFile(data, 'gw_b')).toThrow(new RegExp(`pid ${child.pid}\\) runs as instance gw_b`));
    } finally {
      child.kill('SIGKILL');
    }
  });
});
