/**
 * A five-field cron schedule (UTC, DECISIONS §9) in plain English, for the common forms: every minute, every
 * N minutes or hours, hourly at a minute, daily, on weekdays or days of the week, monthly on days of the month,
 * yearly in given months, each at one or a few times. Anything else (steps over ranges, a minute list with an
 * hour list of many values…) answers null, and the page shows the expression alone. Pure.
 */

const DAYS = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];
const MONTHS = [
  'January',
  'February',
  'March',
  'April',
  'May',
  'June',
  'July',
  'August',
  'September',
  'October',
  'November',
  'December',
];
const DAY_NAMES: Record<string, number> = { sun: 0, mon: 1, tue: 2, wed: 3, thu: 4, fri: 5, sat: 6 };
const MONTH_NAMES: Record<string, number> = {
  jan: 1,
  feb: 2,
  mar: 3,
  apr: 4,
  may: 5,
  jun: 6,
  jul: 7,
  aug: 8,
  sep: 9,
  oct: 10,
  nov: 11,
  dec: 12,
};

/** A field's values when it is a plain list of numbers and ranges (`1,3-5`); null for `*`, steps or nonsense. */
function listOf(field: string, min: number, max: number, names: Record<string, number> = {}): number[] | null {
  const values: number[] = [];
  const number = (text: string): number | null => {
    const named = names[text.toLowerCase()];
    if (named !== undefined) return named;
    if (!/^\d{1,2}$/.test(text)) return null;
    const value = Number(text);
    return value >= min && value <= max ? value : null;
  };
  for (const part of field.split(',')) {
    const range = /^([^-]+)-([^-]+)$/.exec(part);
    if (range) {
      const from = number(range[1] ?? '');
      const to = number(range[2] ?? '');
      if (from === null || to === null || from > to) return null;
      for (let value = from; value <= to; value++) values.push(value);
    } else {
      const value = number(part);
      if (value === null) return null;
      values.push(value);
    }
  }
  return [...new Set(values)].sort((a, b) => a - b);
}

/** `a, b and c`. */
function joined(items: string[]): string {
  if (items.length <= 1) return items.join('');
  return `${items.slice(0, -1).join(', ')} and ${items.at(-1) ?? ''}`;
}

const two = (value: number) => String(value).padStart(2, '0');

/** `1st`, `2nd`, `23rd`. */
function ordinal(value: number): string {
  const tens = value % 100;
  const suffix = tens >= 11 && tens <= 13 ? 'th' : (['th', 'st', 'nd', 'rd'][value % 10] ?? 'th');
  return `${value}${suffix}`;
}

/** The days of the week of a field as words (`weekdays`, `Monday and Friday`), or null. */
function weekdays(field: string): string | null {
  const days = listOf(field, 0, 7, DAY_NAMES);
  if (!days) return null;
  const set = [...new Set(days.map((day) => day % 7))].sort((a, b) => a - b);
  if (set.join(',') === '1,2,3,4,5') return 'on weekdays';
  if (set.join(',') === '0,6') return 'on weekends';
  if (set.length === 7) return 'every day';
  return `on ${joined(set.map((day) => DAYS[day] ?? String(day)))}`;
}

/** Describes `schedule`, or null when it is not one of the common forms. */
export function describeSchedule(schedule: string): string | null {
  const fields = schedule.trim().split(/\s+/);
  if (fields.length !== 5) return null;
  const [minute = '', hour = '', dom = '', month = '', dow = ''] = fields;

  // When in the day.
  let when: string;
  const minuteStep = /^(?:\*|0)\/(\d{1,2})$/.exec(minute);
  const hourStep = /^(?:\*|0)\/(\d{1,2})$/.exec(hour);
  if (minute === '*' && hour === '*') when = 'every minute';
  else if (minuteStep && hour === '*')
    when = Number(minuteStep[1]) === 1 ? 'every minute' : `every ${Number(minuteStep[1])} minutes`;
  else {
    const minutes = listOf(minute, 0, 59);
    if (!minutes) return null;
    if (hour === '*') {
      when = `every hour at ${joined(minutes.map((m) => `minute ${m}`))}`;
      if (minutes.length === 1 && minutes[0] === 0) when = 'every hour, on the hour';
    } else if (hourStep) {
      const step = Number(hourStep[1]);
      if (minutes.length !== 1 || step < 1) return null;
      const at = minutes[0] === 0 ? '' : ` at minute ${minutes[0]}`;
      when = step === 1 ? `every hour${at}` : `every ${step} hours${at}`;
    } else {
      const hours = listOf(hour, 0, 23);
      if (!hours || hours.length * minutes.length > 6) return null;
      const times = hours.flatMap((h) => minutes.map((m) => `${two(h)}:${two(m)}`));
      when = `at ${joined(times)} UTC`;
    }
  }

  // Which days.
  let days: string;
  if (dom === '*' && dow === '*') days = '';
  else if (dom === '*') {
    const words = weekdays(dow);
    if (!words) return null;
    days = words === 'every day' ? '' : words;
  } else if (dow === '*') {
    const dates = listOf(dom, 1, 31);
    if (!dates) return null;
    days = `on the ${joined(dates.map(ordinal))}${month === '*' ? ' of the month' : ''}`;
  } else return null;

  // Which months.
  let months = '';
  if (month !== '*') {
    const list = listOf(month, 1, 12, MONTH_NAMES);
    if (!list) return null;
    months = `in ${joined(list.map((m) => MONTHS[m - 1] ?? String(m)))}`;
  }

  const daily = when.startsWith('at ');
  const dayPart = days || (months ? '' : daily ? 'every day' : '');
  const parts = daily ? [dayPart, when, months] : [when, days, months];
  const text = parts.filter(Boolean).join(' ');
  return text.charAt(0).toUpperCase() + text.slice(1);
}
