import { describe, expect, it } from 'vitest';
import { earliestTrendDay, periodWindow, startOfUtcDay, trendDays, utcDay } from './analytics.periods.js';

const NOW = Date.UTC(2026, 10, 21, 10, 30, 0, 0);

describe('analytics periods', () => {
  it('today is the UTC day [00:00, next 00:00)', () => {
    expect(periodWindow('today', NOW)).toEqual({
      since: '2026-11-21T00:00:00.000Z',
      until: '2026-11-22T00:00:00.000Z',
      firstDay: '2026-11-21',
      today: '2026-11-21',
    });
    // the last millisecond of a day is still that day
    expect(periodWindow('today', Date.UTC(2026, 10, 21, 23, 59, 59, 999)).since).toBe('2026-11-21T00:00:00.000Z');
    expect(periodWindow('today', Date.UTC(2026, 10, 22)).since).toBe('2026-11-22T00:00:00.000Z');
  });

  it('week is the 7 UTC days ending today, month the 30, all is unbounded below', () => {
    expect(periodWindow('week', NOW)).toMatchObject({ since: '2026-11-15T00:00:00.000Z', firstDay: '2026-11-15' });
    expect(periodWindow('month', NOW)).toMatchObject({ since: '2026-10-23T00:00:00.000Z', firstDay: '2026-10-23' });
    expect(periodWindow('all', NOW)).toEqual({
      since: null,
      until: '2026-11-22T00:00:00.000Z',
      firstDay: null,
      today: '2026-11-21',
    });
  });

  it('crosses month, year and leap-day boundaries', () => {
    expect(periodWindow('week', Date.UTC(2027, 0, 3, 1)).firstDay).toBe('2026-12-28');
    expect(trendDays('2028-02-27', '2028-03-01')).toEqual(['2028-02-27', '2028-02-28', '2028-02-29', '2028-03-01']);
  });

  it('trendDays: every day inclusive, ascending; capped to the latest days; never empty', () => {
    expect(trendDays('2026-11-19', '2026-11-21')).toEqual(['2026-11-19', '2026-11-20', '2026-11-21']);
    expect(trendDays('2026-11-21', '2026-11-21')).toEqual(['2026-11-21']);
    expect(trendDays('2026-11-25', '2026-11-21')).toEqual(['2026-11-21']);
    expect(trendDays('2020-01-01', '2026-11-21', 3)).toEqual(['2026-11-19', '2026-11-20', '2026-11-21']);
    expect(trendDays('2020-01-01', '2026-11-21')).toHaveLength(366);
    expect(earliestTrendDay('2026-11-21')).toBe('2025-11-21');
  });

  it('utcDay and startOfUtcDay ignore the local time zone', () => {
    expect(utcDay(Date.UTC(2026, 10, 21, 23, 59, 59, 999))).toBe('2026-11-21');
    expect(startOfUtcDay(NOW)).toBe(Date.UTC(2026, 10, 21));
  });
});
