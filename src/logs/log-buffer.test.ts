import { describe, expect, it } from 'vitest';
import { LogBuffer, TooManyLogListenersError } from './log-buffer.js';
import { parseLogLine, type LogEntry } from './log-entry.js';

const BASE = Date.UTC(2026, 10, 21, 10, 0, 0, 0);

/** One logger-shaped JSON line. */
function line(
  n: number,
  fields: { level?: string; source?: string; at?: number; extra?: Record<string, unknown> } = {},
): string {
  return `${JSON.stringify({
    level: fields.level ?? 'info',
    timestamp: new Date(fields.at ?? BASE + n * 1000).toISOString(),
    source: fields.source ?? 'test',
    message: `m${n}`,
    ...fields.extra,
  })}\n`;
}

const messages = (items: LogEntry[]): string[] => items.map((e) => e.message);
const all = { limit: 1000, offset: 0 };

describe('parseLogLine', () => {
  it('splits the named fields from the metadata', () => {
    const parsed = parseLogLine(
      '{"level":"warning","timestamp":"2026-11-21T10:00:00.000Z","source":"http","request_id":"r1","status":503,"message":"slow"}\n',
    );
    expect(parsed).toEqual({
      time: BASE,
      entry: {
        timestamp: '2026-11-21T10:00:00.000Z',
        level: 'warning',
        source: 'http',
        message: 'slow',
        metadata: { request_id: 'r1', status: 503 },
      },
    });
  });

  it('rejects what is not an entry and shortens over-long lines', () => {
    expect(parseLogLine('not json')).toBeNull();
    expect(parseLogLine('[1,2]')).toBeNull();
    expect(parseLogLine('{"level":"info","message":"no time"}')).toBeNull();
    expect(parseLogLine('{"level":"loud","timestamp":"2026-11-21T10:00:00.000Z"}')).toBeNull();
    const long = parseLogLine(line(1, { extra: { blob: 'x'.repeat(100) } }), 80);
    expect(long?.entry.metadata).toEqual({ truncated: true, original_chars: expect.any(Number) });
    expect(long?.entry.message).toBe('m1');
  });

  it('maps pino level names and defaults a missing source', () => {
    expect(parseLogLine('{"level":"warn","timestamp":"2026-11-21T10:00:00.000Z"}')?.entry).toMatchObject({
      level: 'warning',
      source: 'gateway',
      message: '',
    });
    expect(parseLogLine('{"level":60,"timestamp":"2026-11-21T10:00:00.000Z"}')?.entry.level).toBe('error');
  });
});

describe('LogBuffer', () => {
  it('keeps the newest `capacity` entries, newest first, across wrap-around', () => {
    const buffer = new LogBuffer(5);
    for (let n = 1; n <= 12; n++) buffer.write(line(n));
    const page = buffer.query({}, all);
    expect(messages(page.items)).toEqual(['m12', 'm11', 'm10', 'm9', 'm8']);
    expect(page.total).toBe(5);
    expect(buffer.stats()).toMatchObject({ capacity: 5, size: 5, stored: 12, unparsed: 0 });
    expect(buffer.oldest()).toEqual({ time: BASE + 8000, count: 1 });
  });

  it('answers before it is full', () => {
    const buffer = new LogBuffer(10);
    expect(buffer.query({}, all)).toEqual({ items: [], total: 0 });
    expect(buffer.oldest()).toBeNull();
    buffer.write(line(1));
    buffer.write(line(2));
    expect(messages(buffer.query({}, all).items)).toEqual(['m2', 'm1']);
  });

  it('pages with offset and limit and counts every match', () => {
    const buffer = new LogBuffer(8);
    for (let n = 1; n <= 20; n++) buffer.write(line(n)); // keeps m13..m20
    expect(buffer.query({}, { limit: 3, offset: 0 })).toMatchObject({ total: 8 });
    expect(messages(buffer.query({}, { limit: 3, offset: 0 }).items)).toEqual(['m20', 'm19', 'm18']);
    expect(messages(buffer.query({}, { limit: 3, offset: 3 }).items)).toEqual(['m17', 'm16', 'm15']);
    expect(messages(buffer.query({}, { limit: 3, offset: 6 }).items)).toEqual(['m14', 'm13']);
    expect(buffer.query({}, { limit: 3, offset: 8 })).toEqual({ items: [], total: 8 });
  });

  it('filters by minimum level, source and time range (inclusive)', () => {
    const buffer = new LogBuffer(100);
    const levels = ['debug', 'info', 'warning', 'error'];
    for (let n = 0; n < 12; n++) {
      buffer.write(line(n, { level: levels[n % 4]!, source: n % 3 === 0 ? 'http' : 'agent' }));
    }
    expect(messages(buffer.query({ minLevel: 'warning' }, all).items)).toEqual(['m11', 'm10', 'm7', 'm6', 'm3', 'm2']);
    expect(messages(buffer.query({ minLevel: 'error' }, all).items)).toEqual(['m11', 'm7', 'm3']);
    expect(buffer.query({ minLevel: 'debug' }, all).total).toBe(12);
    expect(messages(buffer.query({ source: 'http' }, all).items)).toEqual(['m9', 'm6', 'm3', 'm0']);
    expect(messages(buffer.query({ since: BASE + 4000, until: BASE + 6000 }, all).items)).toEqual(['m6', 'm5', 'm4']);
    expect(messages(buffer.query({ source: 'http', minLevel: 'warning', since: BASE + 3000 }, all).items)).toEqual([
      'm6',
      'm3',
    ]);
    expect(buffer.query({ source: 'nobody' }, all)).toEqual({ items: [], total: 0 });
  });

  it('skips lines that are not entries and counts them', () => {
    const buffer = new LogBuffer(4);
    buffer.write('garbage\n');
    buffer.write(line(1));
    expect(buffer.stats()).toMatchObject({ size: 1, unparsed: 1 });
  });

  it('reports how many entries share the oldest millisecond', () => {
    const buffer = new LogBuffer(4);
    for (let n = 1; n <= 6; n++) buffer.write(line(n, { at: n <= 4 ? BASE : BASE + 1 }));
    // kept: m3 m4 (BASE) m5 m6 (BASE + 1)
    expect(buffer.oldest()).toEqual({ time: BASE, count: 2 });
  });

  it('tells listeners about new entries, but not about entries a listener logs', () => {
    const buffer = new LogBuffer(10);
    const seen: string[] = [];
    const stop = buffer.subscribe((entry) => {
      seen.push(entry.message);
      buffer.write(line(99)); // a feedback loop: stored, not delivered
    });
    buffer.write(line(1));
    stop();
    stop();
    buffer.write(line(2));
    expect(seen).toEqual(['m1']);
    expect(messages(buffer.query({}, all).items)).toEqual(['m2', 'm99', 'm1']);
    expect(buffer.stats().listeners).toBe(0);
  });

  it('caps its listeners', () => {
    const buffer = new LogBuffer(2, { maxListeners: 1 });
    buffer.subscribe(() => undefined);
    expect(() => buffer.subscribe(() => undefined)).toThrow(TooManyLogListenersError);
  });

  it('survives a throwing listener', () => {
    const buffer = new LogBuffer(2);
    buffer.subscribe(() => {
      throw new Error('boom');
    });
    expect(() => buffer.write(line(1))).not.toThrow();
    expect(buffer.stats().size).toBe(1);
  });

  it('refuses a capacity that is not a positive integer', () => {
    expect(() => new LogBuffer(0)).toThrow(RangeError);
    expect(() => new LogBuffer(1.5)).toThrow(RangeError);
  });
});
