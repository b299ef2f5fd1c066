/**
 * Analytics periods as UTC day ranges (DECISIONS §9: `today` = the UTC day,
 * `week` = the last 7 days, `month` = the last 30 days, `all`). Pure: the
 * caller passes "now" from its injected Clock.
 */

/** Periods of GET /analytics/cost (spec: today, week, month, all). */
export const COST_PERIODS = ['today', 'week', 'month', 'all'] as const;
/** Periods of GET /analytics/usage and the variant GET /analytics (spec: today, week, month). */
export const STAT_PERIODS = ['today', 'week', 'month', 'all'] as const;

/** A period of the cost summary. */
export type CostPeriod = (typeof COST_PERIODS)[number];
/** A period of the usage statistics and the variant analytics response. */
export type StatPeriod = (typeof STAT_PERIODS)[number];

/** The period used when the query names none (all three endpoints). */
export const DEFAULT_PERIOD = 'today' satisfies StatPeriod;

/** Most rows of `daily_trend` for period `all`: the latest 366 days (a leap year). */
export const MAX_TREND_DAYS = 366;

const DAY_MS = 86_400_000;
const DAYS_OF: Record<Exclude<StatPeriod, 'all'>, number> = { today: 1, week: 7, month: 30 };

/**
 * A half-open range of `created_at` values, `[since, until)`, as ISO 8601 UTC
 * text (timestamps are stored that way, so text comparison is time order).
 */
export interface TimeRange {
  /** Inclusive lower bound; null = since the beginning (period `all`). */
  since: string | null;
  /** Exclusive upper bound: the start of tomorrow (UTC). */
  until: string;
}

/** A period resolved against "now": its time range and the UTC days it covers. */
export interface PeriodWindow extends TimeRange {
  /** First day of the period, `YYYY-MM-DD`; null for `all` (the data decides, see `trendDays`). */
  firstDay: string | null;
  /** Today (UTC), `YYYY-MM-DD`: the last day of every period. */
  today: string;
}

/** `YYYY-MM-DD` of the UTC day containing `ms`. */
export function utcDay(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

/** Start (00:00:00.000Z) of the UTC day containing `ms`, in epoch milliseconds. */
export function startOfUtcDay(ms: number): number {
  return Math.floor(ms / DAY_MS) * DAY_MS;
}

/** ISO timestamp of the start of UTC day `day` (`YYYY-MM-DD`). */
export function dayStartIso(day: string): string {
  return `${day}T00:00:00.000Z`;
}

/**
 * Resolves `period` at `nowMs`: `today` = [00:00 today, 00:00 tomorrow),
 * `week` = the 7 UTC days ending today, `month` = the 30 UTC days ending
 * today, `all` = everything before 00:00 tomorrow.
 */
export function periodWindow(period: CostPeriod, nowMs: number): PeriodWindow {
  const todayStart = startOfUtcDay(nowMs);
  const until = new Date(todayStart + DAY_MS).toISOString();
  const today = utcDay(todayStart);
  if (period === 'all') return { since: null, until, firstDay: null, today };
  const first = todayStart - (DAYS_OF[period] - 1) * DAY_MS;
  return { since: new Date(first).toISOString(), until, firstDay: utcDay(first), today };
}

/** The earliest day a trend ending on `lastDay` may show: `cap - 1` days before it. */
export function earliestTrendDay(lastDay: string, cap: number = MAX_TREND_DAYS): string {
  return utcDay(Date.parse(dayStartIso(lastDay)) - (cap - 1) * DAY_MS);
}

/**
 * Every UTC day from `firstDay` to `lastDay` inclusive, ascending, keeping
 * at most the latest `cap` days. A `firstDay` after `lastDay` gives
 * `[lastDay]`, so a trend always has at least today's row.
 */
export function trendDays(firstDay: string, lastDay: string, cap: number = MAX_TREND_DAYS): string[] {
  const last = Date.parse(dayStartIso(lastDay));
  const earliest = Date.parse(dayStartIso(earliestTrendDay(lastDay, cap)));
  const first = Math.max(Math.min(Date.parse(dayStartIso(firstDay)), last), earliest);
  const days: string[] = [];
  for (let ms = first; ms <= last; ms += DAY_MS) days.push(utcDay(ms));
  return days;
}

const HOUR_MS = 3_600_000;

/** Every hour of the UTC day containing `nowMs`, from 00 up to the current one, as `YYYY-MM-DDTHH`, ascending. */
export function hoursSoFar(nowMs: number): string[] {
  const hours: string[] = [];
  for (let ms = startOfUtcDay(nowMs); ms <= nowMs; ms += HOUR_MS) hours.push(new Date(ms).toISOString().slice(0, 13));
  return hours;
}

/** The start of a series bucket (`YYYY-MM-DDTHH` or `YYYY-MM-DD`) as an ISO timestamp. */
export function bucketStartIso(bucket: string): string {
  return bucket.length === 13 ? `${bucket}:00:00.000Z` : dayStartIso(bucket);
}
