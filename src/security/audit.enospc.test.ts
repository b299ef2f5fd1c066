import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { mountSmallDisk } from '../../test/helpers/small-disk.js';
import { ManualClock } from '../lib/clock.js';
import { auditLogPath, createAuditLog, type AuditEntry } from './audit.js';

const disk = mountSmallDisk(256);
afterAll(() => disk?.unmount());

const entry = (user: string): AuditEntry => ({
  event: 'auth_failure',
  ip: '203.0.113.7',
  user,
  mode: 'pairing',
  reason: 'a reason long enough to make each line take some room on the disk',
  path: '/api/v1/sessions',
});

describe.skipIf(!disk)('audit log on a full disk (ENOSPC)', () => {
  it('reports the failure once, never rejects, keeps the file whole lines, and writes again when space returns', async () => {
    const dataDir = join(disk!.dir, 'data');
    const errors: Error[] = [];
    const log = createAuditLog({ dataDir, clock: new ManualClock(), onError: (e) => errors.push(e) });
    for (let i = 0; i < 5; i++) log.record(entry(`before-${i}`));
    await log.flush();

    disk!.fill();
    for (let i = 0; i < 300; i++) {
      log.record(entry(`during-${i}`));
      if (i % 50 === 0) await log.flush();
    }
    await log.flush();
    expect(errors).toHaveLength(1);
    expect(errors[0]!.message).toMatch(/ENOSPC|no space/i);
    expect(log.stats().dropped).toBeGreaterThan(0);

    disk!.free();
    for (let i = 0; i < 5; i++) log.record(entry(`after-${i}`));
    await log.flush();
    await log.close();

    const lines = readFileSync(auditLogPath(dataDir), 'utf8').split('\n');
    expect(lines.at(-1)).toBe('');
    const users = lines.slice(0, -1).map((line) => (JSON.parse(line) as { user: string }).user);
    expect(users.slice(0, 5)).toEqual(['before-0', 'before-1', 'before-2', 'before-3', 'before-4']);
    expect(users.slice(-5)).toEqual(['after-0', 'after-1', 'after-2', 'after-3', 'after-4']);
    expect(errors).toHaveLength(1); // recovering reports nothing more
    expect(log.stats().written).toBe(users.length);
  });

  it('reports a second outage once more after writing resumed in between', async () => {
    const dataDir = join(disk!.dir, 'data2');
    const errors: Error[] = [];
    const log = createAuditLog({ dataDir, clock: new ManualClock(), onError: (e) => errors.push(e) });
    for (let round = 0; round < 2; round++) {
      disk!.fill();
      for (let i = 0; i < 100; i++) log.record(entry(`r${round}-${i}`));
      await log.flush();
      disk!.free();
      log.record(entry(`r${round}-ok`));
      await log.flush();
    }
    await log.close();
    expect(errors).toHaveLength(2);
  });
});
