import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { GATEWAY_MAIN } from '../../bench/processes.js';
import { PG_ADMIN_URL as PG_URL, withPgClient } from '../../test/helpers/pg-databases.js';
import { testBackends } from '../../test/helpers/stores.js';
import { DataDirTakenError, InstanceTakenError } from './errors.js';
import { claimInstance, type InstanceClaim, type InstanceLockEvents } from './instance-claim.js';
import { DATA_DIR_HOLDER_FILE } from './sqlite/data-dir-lock.js';

const pgSkipped = testBackends().find((b) => b.name === 'postgres')!.skip;

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function dataDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-claim-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** Events that fail the test if the claim reports anything it was not expected to. */
function recordedEvents(): InstanceLockEvents & { seen: string[] } {
  const seen: string[] = [];
  return {
    seen,
    lost: (error) => void seen.push(`lost: ${error}`),
    regained: () => void seen.push('regained'),
    failed: (error) => void seen.push(`failed: ${error}`),
  };
}

async function claim(options: {
  driver: 'sqlite' | 'postgres';
  dataDir?: string;
  id?: string;
  waitMs?: number;
  events?: InstanceLockEvents;
}): Promise<InstanceClaim> {
  const held = await claimInstance({
    driver: options.driver,
    dataDir: options.dataDir ?? tmpdir(),
    url: PG_URL,
    id: options.id ?? 'gw_test',
    events: options.events ?? recordedEvents(),
    ...(options.waitMs !== undefined ? { waitMs: options.waitMs } : {}),
  });
  cleanups.push(() => held.release());
  return held;
}

/** A child process that claims `dir` with the built gateway's own code and reports once it holds it. */
async function holderProcess(dir: string): Promise<{ pid: number; kill(): void; exited: Promise<unknown> }> {
  const module = pathToFileURL(join(GATEWAY_MAIN, '..', 'store', 'sqlite', 'data-dir-lock.js')).href;
  const child = spawn(
    process.execPath,
    [
      '--input-type=module',
      '-e',
      `const m = await import(${JSON.stringify(module)}); await m.lockDataDir(${JSON.stringify(dir)}); ` +
        `console.log('held'); setInterval(() => {}, 60000);`,
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const exited = new Promise((resolve) => child.once('exit', resolve));
  cleanups.push(() => void child.kill('SIGKILL'));
  await new Promise<void>((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      if (chunk.toString().includes('held')) resolve();
    });
    child.once('exit', (code) => reject(new Error(`holder exited (${code}) before it held the lock`)));
  });
  return { pid: child.pid!, kill: () => void child.kill('SIGKILL'), exited };
}

describe('instance claim on SQLite: the data dir is held', () => {
  it('refuses a second claim (any instance id) naming the holder and PostgreSQL; a release frees it', async () => {
    const dir = dataDir();
    const first = await claim({ driver: 'sqlite', dataDir: dir, id: 'gw_a' });
    const refused = claim({ driver: 'sqlite', dataDir: dir, id: 'gw_other', waitMs: 100 });
    await expect(refused).rejects.toThrow(DataDirTakenError);
    await expect(refused).rejects.toThrow(`in use by another gateway (pid ${process.pid} on ${hostname()}`);
    await expect(refused).rejects.toThrow(/storage\.driver: postgres/);
    await first.release();
    await expect(claim({ driver: 'sqlite', dataDir: dir, id: 'gw_other' })).resolves.toBeDefined();
  });

  it('a holder killed with SIGKILL frees the data dir without anyone waiting for its reaping', async () => {
    const dir = dataDir();
    const holder = await holderProcess(dir);
    await expect(claim({ driver: 'sqlite', dataDir: dir, waitMs: 100 })).rejects.toThrow(
      `another gateway (pid ${holder.pid} on`,
    );
    holder.kill();
    // Claimed at once: the lock is the kernel's, freed by the death itself (the claim may wait out the teardown).
    await expect(claim({ driver: 'sqlite', dataDir: dir })).resolves.toBeDefined();
    await holder.exited;
  });

  it('a note naming a live process that holds nothing blocks nothing (a recycled pid, a zombie, a dead container)', async () => {
    const dir = dataDir();
    // A live process of this machine, as after a restart in a container where the old pid now belongs to another.
    const note = { pid: process.ppid, host: hostname(), started_at: '2026-01-01T00:00:00.000Z' };
    writeFileSync(join(dir, DATA_DIR_HOLDER_FILE), JSON.stringify(note));
    writeFileSync(join(dir, 'instance-gw_test.pid'), `${process.ppid}\n`); // what an older gateway left
    await expect(claim({ driver: 'sqlite', dataDir: dir, waitMs: 0 })).resolves.toBeDefined();
  });
});

describe.skipIf(pgSkipped)('instance claim on PostgreSQL: a session-level advisory lock', () => {
  it('refuses the same instance id naming the holder, allows another id, and frees it at release', async () => {
    const id = `gw_claim_${process.pid}_${Date.now()}`;
    const first = await claim({ driver: 'postgres', id });
    const refused = claim({ driver: 'postgres', id, waitMs: 100 });
    await expect(refused).rejects.toThrow(InstanceTakenError);
    await expect(refused).rejects.toThrow(
      `another gateway (pid ${process.pid}) runs as instance ${id} on ${hostname()}`,
    );
    await expect(claim({ driver: 'postgres', id: `${id}_b` })).resolves.toBeDefined();
    await first.release();
    await expect(claim({ driver: 'postgres', id })).resolves.toBeDefined();
  });

  it('a dropped lock connection is reported and the id claimed again, so others are still refused', async () => {
    const id = `gw_drop_${process.pid}_${Date.now()}`;
    const events = recordedEvents();
    await claim({ driver: 'postgres', id, events });
    const terminated = await withPgClient(PG_URL, async (client) => {
      const rows = await client.query<{ ok: boolean }>(
        `select pg_terminate_backend(l.pid) as ok from pg_locks l
          where l.locktype = 'advisory' and l.granted and l.objsubid = 2
            and l.objid = (hashtext($1::text || ':' || 'public')::bigint & 4294967295)::oid`,
        [id],
      );
      return rows.rows.length;
    });
    expect(terminated).toBe(1);
    const deadline = Date.now() + 10_000;
    while (!events.seen.includes('regained') && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(events.seen[0]).toMatch(/^lost: /);
    expect(events.seen).toContain('regained');
    await expect(claim({ driver: 'postgres', id, waitMs: 100 })).rejects.toThrow(InstanceTakenError);
  });
});
