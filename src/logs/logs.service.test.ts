import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ManualClock } from '../lib/clock.js';
import { EventBus, type BusEvent } from '../events/event-bus.js';
import { LogBuffer } from './log-buffer.js';
import { DailyLogFiles } from './log-files.js';
import { createLogPipeline } from './log-pipeline.js';
import { queryLogs } from './logs.service.js';

const HOUR = 3_600_000;
/** 2026-11-20T20:00Z: lines n = 0.. are one hour apart, so they span several UTC days. */
const BASE = Date.UTC(2026, 10, 20, 20, 0, 0, 0);
const clock = new ManualClock(Date.UTC(2026, 10, 23, 12, 0, 0));

function line(n: number, at = BASE + n * HOUR, level = 'info', source = 'test'): string {
  return `${JSON.stringify({ level, timestamp: new Date(at).toISOString(), source, message: `m${n}` })}\n`;
}

describe('queryLogs', () => {
  let root: string;
  let buffer: LogBuffer;
  let files: DailyLogFiles;
  const log = (text: string): void => {
    buffer.write(text);
    files.write(text);
  };
  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), 'gatehouse-logquery-'));
    buffer = new LogBuffer(4);
    files = new DailyLogFiles({ dir: join(root, 'logs'), clock });
  });
  afterEach(async () => {
    await files.close();
    rmSync(root, { recursive: true, force: true });
  });

  const messages = (page: { items: { message: string }[] }): string[] => page.items.map((e) => e.message);

  it('answers from the buffer alone without `since`, or when `since` is within the buffer', async () => {
    for (let n = 0; n < 10; n++) log(line(n));
    const recent = await queryLogs({ buffer, files }, { limit: 100, offset: 0 });
    expect(messages(recent)).toEqual(['m9', 'm8', 'm7', 'm6']);
    expect(recent).toMatchObject({ total: 4, limit: 100, offset: 0 });
    const within = await queryLogs({ buffer, files }, { since: BASE + 7 * HOUR, limit: 100, offset: 0 });
    expect(messages(within)).toEqual(['m9', 'm8', 'm7']);
  });

  it('reads the day files for entries older than the buffer, without duplicates', async () => {
    for (let n = 0; n < 40; n++) log(line(n)); // 20:00 on 11-20 .. 11:00 on 11-22: three day files
    await files.flush();
    expect(await files.days()).toEqual(['2026-11-20', '2026-11-21', '2026-11-22']);
    const page = await queryLogs({ buffer, files }, { since: BASE, limit: 100, offset: 0 });
    expect(messages(page)).toEqual(Array.from({ length: 40 }, (_, i) => `m${39 - i}`));
    expect(page.total).toBe(40);
    expect(page.partial).toBeUndefined();

    const window = await queryLogs(
      { buffer, files },
      { since: BASE + 10 * HOUR, until: BASE + 12 * HOUR, limit: 100, offset: 0 },
    );
    expect(messages(window)).toEqual(['m12', 'm11', 'm10']);
    expect(window.total).toBe(3);
  });

  it('pages across the buffer/file seam', async () => {
    for (let n = 0; n < 12; n++) log(line(n));
    const q = { since: BASE, limit: 5 };
    expect(messages(await queryLogs({ buffer, files }, { ...q, offset: 0 }))).toEqual(['m11', 'm10', 'm9', 'm8', 'm7']);
    expect(messages(await queryLogs({ buffer, files }, { ...q, offset: 5 }))).toEqual(['m6', 'm5', 'm4', 'm3', 'm2']);
    const last = await queryLogs({ buffer, files }, { ...q, offset: 10 });
    expect(messages(last)).toEqual(['m1', 'm0']);
    expect(last.total).toBe(12);
  });

  it('stops the file scan once the page is full and marks the answer partial', async () => {
    for (let n = 0; n < 30; n++) log(line(n));
    const page = await queryLogs({ buffer, files }, { since: BASE, limit: 6, offset: 0 });
    expect(messages(page)).toEqual(['m29', 'm28', 'm27', 'm26', 'm25', 'm24']);
    expect(page.partial).toBe(true);
    expect(page.total).toBe(7); // a lower bound: 6 on the page plus the one that proved there are more
  });

  it('stops after its scan budget', async () => {
    for (let n = 0; n < 30; n++) log(line(n));
    const page = await queryLogs(
      { buffer, files },
      { since: BASE, source: 'nobody', limit: 10, offset: 0 },
      { maxScanChars: 500 },
    );
    expect(page).toMatchObject({ items: [], total: 0, partial: true });
  });

  it('applies level and source filters to file entries too', async () => {
    for (let n = 0; n < 20; n++) log(line(n, BASE + n * HOUR, n % 2 ? 'error' : 'debug', n % 5 ? 'agent' : 'http'));
    const errorsOnly = await queryLogs({ buffer, files }, { since: BASE, minLevel: 'error', limit: 100, offset: 0 });
    expect(messages(errorsOnly)).toEqual(['m19', 'm17', 'm15', 'm13', 'm11', 'm9', 'm7', 'm5', 'm3', 'm1']);
    const http = await queryLogs({ buffer, files }, { since: BASE, source: 'http', limit: 100, offset: 0 });
    expect(messages(http)).toEqual(['m15', 'm10', 'm5', 'm0']);
  });

  it('does not count the buffer’s oldest millisecond twice', async () => {
    const same = BASE + 5 * HOUR;
    for (let n = 0; n < 3; n++) log(line(n));
    for (let n = 3; n < 8; n++) log(line(n, same)); // the buffer keeps m4..m7, all at `same`
    expect(buffer.oldest()).toEqual({ time: same, count: 4 });
    const page = await queryLogs({ buffer, files }, { since: BASE, limit: 100, offset: 0 });
    expect(messages(page)).toEqual(['m7', 'm6', 'm5', 'm4', 'm3', 'm2', 'm1', 'm0']);
  });

  it('reads lines still queued for the files', async () => {
    for (let n = 0; n < 10; n++) log(line(n)); // no flush: queryLogs flushes first
    const page = await queryLogs({ buffer, files }, { since: BASE, limit: 100, offset: 0 });
    expect(page.total).toBe(10);
  });

  it('uses the files alone for entries from an earlier run', async () => {
    for (let n = 0; n < 5; n++) files.write(line(n));
    const page = await queryLogs({ buffer: new LogBuffer(4), files }, { since: BASE, limit: 100, offset: 0 });
    expect(messages(page)).toEqual(['m4', 'm3', 'm2', 'm1', 'm0']);
  });
});

describe('createLogPipeline', () => {
  let root: string;
  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), 'gatehouse-pipeline-'));
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  it('feeds stdout, the buffer, the day files and the bus `logs` topic', async () => {
    const stdout: string[] = [];
    const bus = new EventBus();
    const pipeline = createLogPipeline({
      dataDir: root,
      level: 'info',
      bufferEntries: 10,
      bus,
      stdout: { write: (l) => void stdout.push(l) },
    });
    const publish = vi.spyOn(bus, 'publish');
    pipeline.logger.info('nobody listens'); // not published: no listener
    expect(publish).not.toHaveBeenCalled();

    const events: BusEvent[] = [];
    const stop = bus.subscribe(['logs'], (event) => events.push(event));
    pipeline.logger.child({ source: 'agent' }).warn({ step: 2 }, 'listened');
    pipeline.logger.debug('below the level');
    stop();

    expect(events).toEqual([
      {
        topic: 'logs',
        event: 'log',
        data: {
          timestamp: expect.any(String),
          level: 'warning',
          source: 'agent',
          message: 'listened',
          metadata: { step: 2 },
        },
      },
    ]);
    expect(stdout).toHaveLength(2);
    expect(pipeline.buffer.query({}, { limit: 10, offset: 0 }).items.map((e) => e.message)).toEqual([
      'listened',
      'nobody listens',
    ]);
    await pipeline.close();
    const days = await pipeline.files.days();
    expect(days).toHaveLength(1);
    expect(pipeline.files.stats().written).toBe(2);
  });
});
