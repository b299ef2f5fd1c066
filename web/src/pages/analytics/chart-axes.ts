/**
 * The axes of the cost-per-day chart, apart from uPlot so they can be tested alone. The x axis has one tick per
 * day of the trend, or every 2nd, 3rd, 7th or 14th day when the labels would crowd (counted back from the newest
 * day, which always has one), then the first day of every 1, 2, 3 or 6 months, then of years. A day of the
 * trend is a calendar day (`YYYY-MM-DD`, a UTC day of the API) drawn at the browser's midnight of that date,
 * so its label, formatted in the browser's zone and language, names the same date. The y axis shows dollars
 * with as many decimals as its step needs, so no two labels read the same.
 */

/** How far apart the labels of an axis are. */
export type TickUnit = 'day' | 'month' | 'year';

/** The labelled days of the x axis and what they stand for. */
export interface DayTicks {
  unit: TickUnit;
  dates: string[];
}

const DAY_STEPS = [1, 2, 3, 7, 14];
const MONTH_STEPS = [1, 2, 3, 6];
const YEAR_STEPS = [1, 2, 5, 10, 20, 50];

/** The parts of `YYYY-MM-DD`. */
function parts(date: string): [number, number, number] {
  const [year = 1970, month = 1, day = 1] = date.split('-').map(Number);
  return [year, month, day];
}

/** The browser's midnight at the start of the calendar day `YYYY-MM-DD`, in seconds since the epoch. */
export function localDaySeconds(date: string): number {
  const [year, month, day] = parts(date);
  return new Date(year, month - 1, day).getTime() / 1000;
}

/** The calendar day (`YYYY-MM-DD`) of the browser's time `seconds`. */
export function localDate(seconds: number): string {
  const date = new Date(seconds * 1000);
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())}`;
}

const FORMATS: Record<TickUnit, Intl.DateTimeFormat> = {
  day: new Intl.DateTimeFormat(undefined, { month: 'short', day: 'numeric' }),
  month: new Intl.DateTimeFormat(undefined, { month: 'short', year: 'numeric' }),
  year: new Intl.DateTimeFormat(undefined, { year: 'numeric' }),
};

/** The label of a calendar day at `unit` (`Nov 23`, `Nov 2026`, `2026` in English). */
export function dayLabel(date: string, unit: TickUnit): string {
  const [year, month, day] = parts(date);
  return FORMATS[unit].format(new Date(year, month - 1, day));
}

/**
 * The days of `dates` (consecutive, oldest first) that get a label, the finest that fit: `fits(unit)` is how
 * many labels of that unit the width holds.
 */
export function chooseDayTicks(dates: readonly string[], fits: (unit: TickUnit) => number): DayTicks {
  const last = dates.length - 1;
  if (last < 0) return { unit: 'day', dates: [] };
  const dayRoom = fits('day');
  for (const step of DAY_STEPS) {
    const picked = dates.filter((_, index) => (last - index) % step === 0);
    if (picked.length <= dayRoom) return { unit: 'day', dates: picked };
  }
  const monthRoom = fits('month');
  for (const step of MONTH_STEPS) {
    const picked = dates.filter((date) => {
      const [, month, day] = parts(date);
      return day === 1 && (month - 1) % step === 0;
    });
    if (picked.length > 0 && picked.length <= monthRoom) return { unit: 'month', dates: picked };
  }
  const yearRoom = fits('year');
  for (const step of YEAR_STEPS) {
    const picked = dates.filter((date) => {
      const [year, month, day] = parts(date);
      return month === 1 && day === 1 && year % step === 0;
    });
    if (picked.length > 0 && picked.length <= yearRoom) return { unit: 'year', dates: picked };
  }
  // Nothing finer fits: the newest day alone.
  return { unit: 'day', dates: dates.slice(last) };
}

/** The decimals a step of dollars needs: none for whole dollars, cents at least otherwise (`$2.50`, `$0.005`). */
export function moneyDecimals(step: number): number {
  if (!(step > 0) || !Number.isFinite(step)) return 2;
  const [mantissa = '', exponent = '0'] = String(Number(step.toPrecision(6))).split('e');
  const decimals = Math.max(0, (mantissa.split('.')[1] ?? '').length - Number(exponent));
  return decimals === 0 ? 0 : Math.max(2, decimals);
}

/** A y-axis label: dollars with the decimals of the axis step. */
export function moneyLabel(amount: number, step: number): string {
  const decimals = moneyDecimals(step);
  const text = Math.abs(amount).toLocaleString('en-US', {
    minimumFractionDigits: decimals,
    maximumFractionDigits: decimals,
  });
  return `${amount < 0 ? '-' : ''}$${text}`;
}
