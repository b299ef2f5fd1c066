import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { mountSmallDisk } from '../../test/helpers/small-disk.js';
import { ManualClock } from '../lib/clock.js';
import { DailyLogFiles } from './log-files.js';

const disk = mountSmallDisk(256);
afterAll(() => disk?.unmount());

const TIME = '2026-11-22T10:00:00.000Z';
const line = (message: string) =>
  JSON.stringify({ level: 'info', timestamp: TIME, source: 'test', message, filler: 'x'.repeat(120) });

describe.skipIf(!disk)('daily log files on a full disk (ENOSPC)', () => {
  it('reports the failure once, never rejects, keeps the file whole lines, and writes again when space returns', async () => {
    const dir = join(disk!.dir, 'logs');
    const errors: Error[] = [];
    const files = new DailyLogFiles({
      dir,
      clock: new ManualClock(Date.parse(TIME)),
      onError: (e) => errors.push(e),
    });
    for (let i = 0; i < 5; i++) files.write(line(`before-${i}`));
    await files.flush();

    disk!.fill();
    for (let batch = 0; batch < 6; batch++) {
      for (let i = 0; i < 50; i++) files.write(line(`during-${batch}-${i}`));
      await files.flush();
    }
    expect(errors).toHaveLength(1);
    expect(errors[0]!.message).toMatch(/ENOSPC|no space/i);
    expect(files.stats().dropped).toBeGreaterThan(0);

    disk!.free();
    for (let i = 0; i < 5; i++) files.write(line(`after-${i}`));
    await files.flush();
    await files.close();

    const text = readFileSync(files.pathFor('2026-11-22'), 'utf8');
    expect(text.endsWith('\n')).toBe(true);
    const messages = text
      .split('\n')
      .filter(Boolean)
      .map((l) => (JSON.parse(l) as { message: string }).message);
    expect(messages.slice(0, 5)).toEqual(['before-0', 'before-1', 'before-2', 'before-3', 'before-4']);
    expect(messages.slice(-5)).toEqual(['after-0', 'after-1', 'after-2', 'after-3', 'after-4']);
    expect(errors).toHaveLength(1);
    expect(files.stats().written).toBe(messages.length);
  });
});
