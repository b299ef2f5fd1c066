/**
 * The next run times of a schedule as typed, computed in the browser with croner under the server's rules
 * (DECISIONS §9): exactly five fields, evaluated in UTC, no nicknames. Pure apart from the clock passed in.
 */
import { Cron } from 'croner';

/** The next `count` run times, or the reason the schedule is not valid (the server says it more precisely). */
export type NextRuns = { ok: true; times: Date[] } | { ok: false; error: string };

/** The next `count` times `schedule` fires after `from`. */
export function nextRuns(schedule: string, count: number, from: Date): NextRuns {
  const fields = schedule.trim().split(/\s+/).filter(Boolean);
  if (fields.length === 0) return { ok: false, error: 'Type a five-field schedule.' };
  if (fields[0]?.startsWith('@')) return { ok: false, error: 'Nicknames are not supported; use five fields.' };
  if (fields.length !== 5) return { ok: false, error: `Five fields are needed; this has ${fields.length}.` };
  try {
    const cron = new Cron(fields.join(' '), { timezone: 'UTC', mode: '5-part' });
    const times = cron.nextRuns(count, from);
    if (times.length === 0) return { ok: false, error: 'This schedule never fires.' };
    return { ok: true, times };
  } catch (error) {
    return { ok: false, error: error instanceof Error ? error.message.replace(/^CronPattern:\s*/, '') : String(error) };
  }
}
