import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../lib/clock.js';
import { DailyLogFiles, logsDir, readLinesBackward } from './log-files.js';

function line(timestamp: string, message: string): string {
  return `${JSON.stringify({ level: 'info', timestamp, source: 'test', message })}\n`;
}

function readLines(path: string): string[] {
  return readFileSync(path, 'utf8').split('\n').filter(Boolean);
}

async function collect(iterable: AsyncIterable<string>): Promise<string[]> {
  const out: string[] = [];
  for await (const item of iterable) out.push(item);
  return out;
}

describe('DailyLogFiles', () => {
  let root: string;
  let dir: string;
  const clock = new ManualClock(Date.UTC(2026, 10, 22, 0, 0, 1));
  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), 'gatehouse-logfiles-'));
    dir = logsDir(root);
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  it('rotates at the UTC day boundary by each line’s own timestamp', async () => {
    const files = new DailyLogFiles({ dir, clock });
    files.write(line('2026-11-21T23:59:59.998Z', 'a'));
    files.write(line('2026-11-21T23:59:59.999Z', 'b'));
    files.write(line('2026-11-22T00:00:00.000Z', 'c'));
    files.write(line('2026-11-22T00:00:00.001Z', 'd'));
    await files.flush();
    expect(readdirSync(dir).sort()).toEqual(['gatehouse-2026-11-21.jsonl', 'gatehouse-2026-11-22.jsonl']);
    const first = readLines(join(dir, 'gatehouse-2026-11-21.jsonl')).map(
      (l) => (JSON.parse(l) as { message: string }).message,
    );
    const second = readLines(join(dir, 'gatehouse-2026-11-22.jsonl')).map(
      (l) => (JSON.parse(l) as { message: string }).message,
    );
    expect(first).toEqual(['a', 'b']);
    expect(second).toEqual(['c', 'd']);
    expect(await files.days()).toEqual(['2026-11-21', '2026-11-22']);
    await files.close();
  });

  it('creates the directory 0700 and the files 0600, and appends to an existing day', async () => {
    const files = new DailyLogFiles({ dir, clock });
    files.write(line('2026-11-22T08:00:00.000Z', 'one'));
    await files.close();
    expect(statSync(dir).mode & 0o777).toBe(0o700);
    const path = join(dir, 'gatehouse-2026-11-22.jsonl');
    expect(statSync(path).mode & 0o777).toBe(0o600);

    const again = new DailyLogFiles({ dir, clock });
    again.write(line('2026-11-22T09:00:00.000Z', 'two'));
    await again.flush();
    expect(readLines(path)).toHaveLength(2);
    await again.close();
  });

  it('writes a synchronous burst in one batch, never a write per line', async () => {
    const files = new DailyLogFiles({ dir, clock });
    for (let i = 0; i < 500; i++) files.write(line('2026-11-22T08:00:00.000Z', `m${i}`));
    expect(files.stats()).toMatchObject({ written: 0, pending: 500 });
    await files.flush();
    expect(files.stats()).toMatchObject({ written: 500, batches: 1, pending: 0, dropped: 0 });
    await files.close();
  });

  it('drops and counts lines beyond its queue bound, and reports the overflow once', async () => {
    const reported: string[] = [];
    const files = new DailyLogFiles({ dir, clock, maxPendingLines: 3, onError: (err) => reported.push(err.message) });
    for (let i = 0; i < 10; i++) files.write(line('2026-11-22T08:00:00.000Z', `m${i}`));
    await files.flush();
    expect(files.stats()).toMatchObject({ written: 3, dropped: 7 });
    expect(reported).toEqual(['log file queue full; dropping log lines']);
    expect(readLines(join(dir, 'gatehouse-2026-11-22.jsonl'))).toHaveLength(3);
    await files.close();
  });

  it('flushes on close and drops lines written afterwards', async () => {
    const files = new DailyLogFiles({ dir, clock });
    files.write(line('2026-11-22T08:00:00.000Z', 'before'));
    await files.close();
    files.write(line('2026-11-22T08:00:01.000Z', 'after'));
    await files.flush();
    expect(readLines(join(dir, 'gatehouse-2026-11-22.jsonl'))).toHaveLength(1);
    expect(files.stats()).toMatchObject({ written: 1, dropped: 1 });
  });

  it('keeps only the last `retainDays` days', async () => {
    mkdirSync(dir, { recursive: true });
    for (const day of ['2026-10-01', '2026-11-08', '2026-11-09', '2026-11-21']) {
      writeFileSync(join(dir, `gatehouse-${day}.jsonl`), line(`${day}T00:00:00.000Z`, 'old'));
    }
    writeFileSync(join(dir, 'notes.txt'), 'not a log file');
    const files = new DailyLogFiles({ dir, clock, retainDays: 14 }); // today 2026-11-22 → keeps 11-09..11-22
    files.write(line('2026-11-22T08:00:00.000Z', 'today'));
    await files.close();
    expect(readdirSync(dir).sort()).toEqual([
      'gatehouse-2026-11-09.jsonl',
      'gatehouse-2026-11-21.jsonl',
      'gatehouse-2026-11-22.jsonl',
      'notes.txt',
    ]);
    expect(files.stats().pruned).toBe(2);
  });

  it('reports a write failure once and keeps going', async () => {
    writeFileSync(join(root, 'blocker'), '');
    const reported: string[] = [];
    const files = new DailyLogFiles({
      dir: join(root, 'blocker'),
      clock,
      onError: (err) => reported.push(err.message),
    });
    files.write(line('2026-11-22T08:00:00.000Z', 'lost'));
    files.write(line('2026-11-22T08:00:00.001Z', 'lost too'));
    await files.flush();
    expect(files.stats()).toMatchObject({ written: 0, dropped: 2 });
    expect(reported).toHaveLength(1);
    expect(reported[0]).toMatch(/log file write failed \(2 lines lost\)/);
    await files.close();
  });
});

describe('readLinesBackward', () => {
  let root: string;
  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), 'gatehouse-backward-'));
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  it('yields lines newest first across chunk boundaries, multi-byte text intact', async () => {
    const path = join(root, 'f.jsonl');
    const lines = Array.from({ length: 50 }, (_, i) => `line ${i} ${'é€😀'.repeat(i % 7)}`);
    writeFileSync(path, `${lines.join('\n')}\n`);
    for (const chunkBytes of [2, 7, 64, 1 << 16]) {
      expect(await collect(readLinesBackward(path, { chunkBytes }))).toEqual([...lines].reverse());
    }
  });

  it('handles a missing final newline, empty lines, and skips over-long lines', async () => {
    const path = join(root, 'g.jsonl');
    writeFileSync(path, `first\n\n${'x'.repeat(100)}\nlast`);
    expect(await collect(readLinesBackward(path, { chunkBytes: 8, maxLineBytes: 20 }))).toEqual(['last', 'first']);
    expect(await collect(readLinesBackward(join(root, 'missing.jsonl')))).toEqual([]);
  });

  it('stops reading when the caller stops', async () => {
    const path = join(root, 'h.jsonl');
    writeFileSync(path, 'a\nb\nc\n');
    const seen: string[] = [];
    for await (const l of readLinesBackward(path)) {
      seen.push(l);
      if (seen.length === 2) break;
    }
    expect(seen).toEqual(['c', 'b']);
  });
});
