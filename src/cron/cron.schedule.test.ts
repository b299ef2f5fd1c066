import { describe, expect, it } from 'vitest';
import { ManualClock } from '../lib/clock.js';
import { parseSchedule, scheduleOf, type CronSchedule } from './cron.schedule.js';

const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

function valid(text: string): CronSchedule {
  const parsed = parseSchedule(text);
  if (!parsed.ok) throw new Error(`expected ${JSON.stringify(text)} to be valid: ${parsed.error}`);
  return parsed.schedule;
}

function invalid(text: string): string {
  const parsed = parseSchedule(text);
  if (parsed.ok) throw new Error(`expected ${JSON.stringify(text)} to be refused`);
  return parsed.error;
}

describe('parseSchedule: five-field cron, UTC', () => {
  it.each([
    '* * * * *',
    '0 0 * * *',
    '*/15 * * * *',
    '0 9 * * MON-FRI',
    '30 2 1,15 * *',
    '0 0 1 JAN *',
    '0 0 29 2 *',
    '5-10/2 8-18 * * 1-5',
  ])('accepts %s', (text) => {
    expect(valid(text).expression).toBe(text);
  });

  it('normalises surrounding and repeated whitespace (tabs too) to single spaces', () => {
    expect(valid('  0\t9  * *   1 ').expression).toBe('0 9 * * 1');
  });

  it('refuses four and six fields, saying how many it got', () => {
    expect(invalid('* * * *')).toMatch(/exactly five fields.*got 4/);
    expect(invalid('0 * * * * *')).toMatch(/exactly five fields.*got 6.*seconds and years are not supported/);
    expect(invalid('0 0 0 1 1 * 2030')).toMatch(/got 7/);
  });

  it('refuses the empty and blank schedule', () => {
    expect(invalid('')).toMatch(/five-field cron expression/);
    expect(invalid('   ')).toMatch(/five-field cron expression/);
  });

  it('refuses nicknames, suggesting the five-field form', () => {
    expect(invalid('@daily')).toMatch(/nicknames such as @daily are not supported.*"0 0 \* \* \*"/);
    expect(invalid('@reboot')).toMatch(/not supported/);
  });

  it.each([
    ['61 * * * *', /invalid value for minute: 61/],
    ['* 24 * * *', /hour/],
    ['* * 32 * *', /day-of-month/],
    ['* * 0 * *', /day-of-month/],
    ['* * * 13 *', /month/],
    ['* * * * 8', /invalid value for day-of-week: 8/],
    ['5-1 * * * *', /larger than/],
    ['*/0 * * * *', /stepping/],
  ])('refuses out-of-range or malformed %s with the reason', (text, reason) => {
    const error = invalid(text);
    expect(error).toContain(`invalid cron expression "${text}"`);
    expect(error).toMatch(reason);
  });

  it('refuses text', () => {
    expect(invalid('every day at noon')).toMatch(/exactly five fields.*got 4/);
    expect(invalid('hello world foo bar baz')).toMatch(/the minute field \(hello\) contains illegal characters$/);
    expect(invalid('0 x * * *')).toMatch(/the hour field \(x\) contains illegal characters$/);
    expect(invalid('0 0 * * FOO')).toMatch(/the day-of-week field \(FOO\)/);
  });

  it('refuses a schedule that never fires', () => {
    expect(invalid('0 0 30 2 *')).toMatch(/never fires/);
    expect(invalid('0 0 31 4 *')).toMatch(/never fires/);
  });

  it('scheduleOf throws on what parseSchedule refuses', () => {
    expect(() => scheduleOf('@hourly')).toThrow(/invalid stored cron schedule/);
    expect(scheduleOf('0 * * * *').expression).toBe('0 * * * *');
  });
});

describe('next and latest occurrence on a ManualClock (UTC)', () => {
  it('the next slot is strictly after now', () => {
    const clock = new ManualClock(Date.UTC(2026, 10, 21, 10, 0, 0, 0));
    const every5 = valid('*/5 * * * *');
    expect(iso(every5.nextAfter(clock.now()))).toBe('2026-11-21T10:05:00.000Z');
    clock.advance(5 * 60_000);
    expect(iso(every5.nextAfter(clock.now()))).toBe('2026-11-21T10:10:00.000Z');
    clock.advance(-1);
    expect(iso(every5.nextAfter(clock.now()))).toBe('2026-11-21T10:05:00.000Z');
  });

  it('crosses day, month and year boundaries', () => {
    const clock = new ManualClock(Date.UTC(2026, 10, 30, 23, 59, 30, 0));
    expect(iso(valid('0 0 * * *').nextAfter(clock.now()))).toBe('2026-12-01T00:00:00.000Z');
    expect(iso(valid('30 23 * * *').nextAfter(clock.now()))).toBe('2026-12-01T23:30:00.000Z');
    clock.set(Date.UTC(2026, 11, 31, 23, 59, 59, 999));
    expect(iso(valid('0 0 1 * *').nextAfter(clock.now()))).toBe('2027-01-01T00:00:00.000Z');
    expect(iso(valid('* * * * *').nextAfter(clock.now()))).toBe('2027-01-01T00:00:00.000Z');
  });

  it('skips months without the day, and finds the next leap day', () => {
    const clock = new ManualClock(Date.UTC(2027, 0, 31, 12, 0, 0, 0));
    expect(iso(valid('0 12 31 * *').nextAfter(clock.now()))).toBe('2027-03-31T12:00:00.000Z');
    expect(iso(valid('0 0 29 2 *').nextAfter(clock.now()))).toBe('2028-02-29T00:00:00.000Z');
  });

  it('is UTC whatever the process time zone', () => {
    const clock = new ManualClock(Date.UTC(2026, 2, 28, 12, 0, 0, 0)); // the eve of the EU DST change
    expect(iso(valid('30 2 * * *').nextAfter(clock.now()))).toBe('2026-03-29T02:30:00.000Z');
  });

  it('day of month and day of week combine with OR, as in crontab', () => {
    const clock = new ManualClock(Date.UTC(2026, 10, 21, 0, 0, 0, 0)); // a Saturday
    // The 1st of the month or any Monday: Monday the 23rd comes first.
    expect(iso(valid('0 0 1 * 1').nextAfter(clock.now()))).toBe('2026-11-23T00:00:00.000Z');
  });

  it('the latest slot at or before now includes now itself', () => {
    const hourly = valid('0 * * * *');
    expect(iso(hourly.latestAtOrBefore(Date.UTC(2026, 10, 21, 10, 0, 0, 0)))).toBe('2026-11-21T10:00:00.000Z');
    expect(iso(hourly.latestAtOrBefore(Date.UTC(2026, 10, 21, 10, 59, 59, 999)))).toBe('2026-11-21T10:00:00.000Z');
    expect(iso(hourly.latestAtOrBefore(Date.UTC(2026, 10, 21, 9, 59, 59, 999)))).toBe('2026-11-21T09:00:00.000Z');
    expect(iso(valid('0 0 1 * *').latestAtOrBefore(Date.UTC(2027, 2, 15)))).toBe('2027-03-01T00:00:00.000Z');
  });
});
