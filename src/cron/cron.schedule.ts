import { Cron } from 'croner';

/**
 * Cron schedules (DECISIONS §9): exactly five whitespace-separated fields —
 * minute, hour, day of month, month, day of week — evaluated in UTC by
 * croner. Seconds, years and nicknames (`@daily`) are refused so a schedule
 * means the same here as in any crontab. Pure: every time is passed in, so
 * callers evaluate schedules on their injected clock.
 */

/** The five fields in order, for error messages. */
const FIELD_NAMES = 'minute hour day-of-month month day-of-week';
/**
 * A five-field pattern has no year, so it repeats at least every 28 years: if
 * it matches nothing after this instant it never matches (e.g. `0 0 30 2 *`).
 */
const NEVER_PROBE = new Date(Date.UTC(2000, 0, 1));

/** A parsed, valid schedule. */
export interface CronSchedule {
  /** The fields joined by single spaces: the form stored and shown. */
  readonly expression: string;
  /** The first occurrence strictly after `afterMs` (epoch ms), or null if there is none. */
  nextAfter(afterMs: number): number | null;
  /** The latest occurrence at or before `atMs` (epoch ms), or null if there is none. */
  latestAtOrBefore(atMs: number): number | null;
}

/** The outcome of `parseSchedule`: a schedule, or a message saying what is wrong (for a 400). */
export type ParsedSchedule = { ok: true; schedule: CronSchedule } | { ok: false; error: string };

/**
 * Validates and parses a five-field cron expression. Never throws: an invalid
 * one gives `{ok: false, error}` with a message meant for the API client.
 */
export function parseSchedule(text: string): ParsedSchedule {
  const fields = text.trim().split(/\s+/).filter(Boolean);
  if (fields.length === 0) return { ok: false, error: `must be a five-field cron expression (${FIELD_NAMES})` };
  if (fields[0]!.startsWith('@')) {
    return {
      ok: false,
      error: `nicknames such as ${fields[0]} are not supported; use five fields (${FIELD_NAMES}), e.g. "0 0 * * *" for daily at midnight UTC`,
    };
  }
  if (fields.length !== 5) {
    const hint = fields.length > 5 ? ' (seconds and years are not supported)' : '';
    return {
      ok: false,
      error: `must have exactly five fields (${FIELD_NAMES}), got ${fields.length}${hint}`,
    };
  }
  const expression = fields.join(' ');
  let cron: Cron;
  try {
    cron = new Cron(expression, { timezone: 'UTC', mode: '5-part' });
  } catch (error) {
    return { ok: false, error: `invalid cron expression "${expression}": ${describeCronerError(error)}` };
  }
  if (cron.nextRun(NEVER_PROBE) === null) {
    return { ok: false, error: `"${expression}" never fires (no date matches it)` };
  }
  return {
    ok: true,
    schedule: {
      expression,
      nextAfter: (afterMs) => cron.nextRun(new Date(afterMs))?.getTime() ?? null,
      // croner's previousRuns excludes its reference; one millisecond later includes `atMs` itself.
      latestAtOrBefore: (atMs) => cron.previousRuns(1, new Date(atMs + 1))[0]?.getTime() ?? null,
    },
  };
}

/** Like `parseSchedule`, for schedules already validated (stored ones); throws on an invalid one. */
export function scheduleOf(text: string): CronSchedule {
  const parsed = parseSchedule(text);
  if (!parsed.ok) throw new Error(`invalid stored cron schedule "${text}": ${parsed.error}`);
  return parsed.schedule;
}

/** croner's entry numbers (0 is the seconds it adds in 5-part mode) to our field names. */
const CRONER_ENTRIES = ['second', 'minute', 'hour', 'day-of-month', 'month', 'day-of-week'];

/**
 * croner's message in our terms: no class prefix, field names as in the
 * error messages above ("invalid value for day-of-week: 8", "the hour field
 * (x) contains illegal characters"), starting lower case, no final period.
 */
function describeCronerError(error: unknown): string {
  const message = (error instanceof Error ? error.message : String(error))
    .replace(/^CronPattern:\s*/, '')
    .replace(/configuration entry (\d+) \((.*?)\)/, (whole, index: string, value: string) => {
      const field = CRONER_ENTRIES[Number(index)];
      return field ? `the ${field} field (${value})` : whole;
    })
    .replace(/\bdayOfWeek\b/g, 'day-of-week')
    .replace(/\bfor day:/, 'for day-of-month:')
    .trim()
    .replace(/\.$/, '');
  return message.length > 0 ? message.charAt(0).toLowerCase() + message.slice(1) : 'not a valid cron pattern';
}
