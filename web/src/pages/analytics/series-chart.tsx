/**
 * A small line chart in plain SVG for the series of GET /analytics/summary (one point per hour of today or per
 * UTC day): messages and turns, tokens, cost, turn latency. Drawn at the container's width (a ResizeObserver),
 * so its text keeps its size on a phone; colours are the theme's CSS variables, so it follows light and dark
 * with no redraw. The x labels reuse the cost chart's axis rules (`chart-axes.ts`: one label per day, fewer when
 * they would crowd, dates in the browser's zone and language); hours are labelled in the browser's zone too.
 * For screen readers the SVG is one image with a summary (`aria-label`), and the figures are in a table.
 */
import { useLayoutEffect, useRef, useState } from 'preact/hooks';
import { chooseDayTicks, dayLabel } from './chart-axes';
import './series-chart.css';

/** One line of the chart: its name and one value per point (null: nothing to show there, e.g. no turn). */
export interface SeriesLine {
  label: string;
  values: readonly (number | null)[];
}

/** What a chart shows. */
export interface SeriesChartProps {
  /** The chart's title (a heading is the page's business; this names the figure and its table). */
  title: string;
  /** Start of each point (ISO 8601): hours of today or UTC days. */
  starts: readonly string[];
  unit: 'hour' | 'day';
  /** One or two lines (the second is drawn dashed, in another colour). */
  lines: readonly SeriesLine[];
  /** A value as its axis label and table cell show it (`12`, `1.2 s`, `$0.40`). */
  format: (value: number) => string;
  /** Whole numbers only (counts, milliseconds): no axis label between two integers. */
  integer?: boolean;
}

const HEIGHT = 180;
const PAD = { top: 10, right: 12, bottom: 24 };
const FONT_PX = 12;
/** A rough width of one character of the axis font, for spacing labels (no canvas needed). */
const CHAR_PX = 7;

const hourFormat = new Intl.DateTimeFormat(undefined, { hour: 'numeric' });

/** The label of a point: a local hour (`10 AM`) or the calendar day of a UTC day (`Nov 21`). */
function pointLabel(start: string, unit: 'hour' | 'day'): string {
  return unit === 'hour' ? hourFormat.format(new Date(start)) : dayLabel(start.slice(0, 10), 'day');
}

/** A full name of a point for tables and summaries: the UTC day, or the hour in the browser's zone. */
function pointName(start: string, unit: 'hour' | 'day'): string {
  if (unit === 'day') return start.slice(0, 10);
  return new Date(start).toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit' });
}

/** A round top for the y axis at or above `max` (1, 2 or 5 times a power of ten). */
export function niceMax(max: number): number {
  if (!(max > 0)) return 1;
  const power = 10 ** Math.floor(Math.log10(max));
  for (const step of [1, 2, 5, 10]) if (step * power >= max) return step * power;
  return 10 * power;
}

/** Which points get an x label so that labels `labelPx` wide fit in `plotPx`: indexes, the newest always. */
function labelledPoints(starts: readonly string[], unit: 'hour' | 'day', plotPx: number): number[] {
  const labelPx = (unit === 'hour' ? 6 : 7) * CHAR_PX + 12;
  const room = Math.max(1, Math.floor(plotPx / labelPx));
  if (unit === 'day') {
    const dates = starts.map((s) => s.slice(0, 10));
    const picked = new Set(chooseDayTicks(dates, (u) => (u === 'day' ? room : Math.floor(room * 0.8))).dates);
    return dates.flatMap((date, index) => (picked.has(date) ? [index] : []));
  }
  const last = starts.length - 1;
  const step = [1, 2, 3, 4, 6, 12, 24].find((s) => Math.floor(last / s) + 1 <= room) ?? 24;
  return starts.flatMap((_, index) => ((last - index) % step === 0 ? [index] : []));
}

/** Follows an element's width. */
function useWidth(): [{ current: HTMLDivElement | null }, number] {
  const box = useRef<HTMLDivElement>(null);
  const [width, setWidth] = useState(600);
  useLayoutEffect(() => {
    const element = box.current;
    if (!element) return;
    const measure = () => setWidth(Math.max(240, Math.floor(element.clientWidth)));
    measure();
    const observer = new ResizeObserver(measure);
    observer.observe(element);
    return () => observer.disconnect();
  }, []);
  return [box, width];
}

export function SeriesChart({ title, starts, unit, lines, format, integer = false }: SeriesChartProps) {
  const [box, width] = useWidth();
  const all = lines.flatMap((line) => line.values.filter((v): v is number => v !== null));
  const top = niceMax(Math.max(0, ...all));
  // Nothing above zero: the zero line alone, rather than a scale of nothing.
  const ticks = (all.some((v) => v > 0) ? [0, top / 2, top] : [0]).filter((t) => !integer || Number.isInteger(t));
  const left = Math.max(...ticks.map((t) => format(t).length)) * CHAR_PX + 10;
  const plotWidth = width - left - PAD.right;
  const plotHeight = HEIGHT - PAD.top - PAD.bottom;
  const n = starts.length;
  // Each point sits in the middle of its own slot, so the first and last labels are not cut off.
  const x = (index: number) => left + ((index + 0.5) * plotWidth) / Math.max(n, 1);
  const y = (value: number) => PAD.top + plotHeight - (value / top) * plotHeight;
  const labelled = labelledPoints(starts, unit, plotWidth);
  const first = starts[0];
  const last = starts[n - 1];
  const span =
    first && last ? `${pointName(first, unit)} to ${pointName(last, unit)}${unit === 'day' ? ' (UTC days)' : ''}` : '';
  const summary = `${title}, ${unit === 'hour' ? 'per hour' : 'per day'}, ${span}: ${lines
    .map((line) => {
      const values = line.values.filter((v): v is number => v !== null);
      return values.length === 0 ? `${line.label} none` : `${line.label} at most ${format(Math.max(...values))}`;
    })
    .join('; ')}`;

  return (
    <figure class="series-chart">
      <figcaption class="muted">
        <strong class="series-title">{title}</strong>
        {lines.map((line, which) => (
          <span key={line.label} class={`series-key series-key-${which}`}>
            {line.label}
          </span>
        ))}
      </figcaption>
      <div ref={box} class="series-chart-box">
        <svg role="img" aria-label={summary} width={width} height={HEIGHT} viewBox={`0 0 ${width} ${HEIGHT}`}>
          {ticks.map((tick) => (
            <g key={tick} class="series-grid">
              <line x1={left} x2={width - PAD.right} y1={y(tick)} y2={y(tick)} />
              <text x={left - 6} y={y(tick) + FONT_PX / 3} text-anchor="end">
                {format(tick)}
              </text>
            </g>
          ))}
          {labelled.map((index) => {
            const label = pointLabel(starts[index] ?? '', unit);
            // A label that would stick out at either end is aligned to that end instead of centred.
            const half = (label.length * CHAR_PX) / 2;
            const at = x(index);
            const anchor = at + half > width - 2 ? 'end' : at - half < left ? 'start' : 'middle';
            return (
              <text
                key={index}
                class="series-x"
                x={anchor === 'end' ? width - 2 : at}
                y={HEIGHT - 6}
                text-anchor={anchor}
              >
                {label}
              </text>
            );
          })}
          {lines.map((line, which) => {
            // A null breaks the line: runs of consecutive values are drawn apart.
            const runs: string[] = [];
            let run: string[] = [];
            line.values.forEach((value, index) => {
              if (value === null) {
                if (run.length > 0) runs.push(run.join(' '));
                run = [];
              } else run.push(`${x(index).toFixed(1)},${y(value).toFixed(1)}`);
            });
            if (run.length > 0) runs.push(run.join(' '));
            return (
              <g key={line.label} class={`series-line series-line-${which}`}>
                {runs.map((points) => (
                  <polyline key={points} points={points} />
                ))}
                {n <= 48 &&
                  line.values.map((value, index) =>
                    value === null ? null : <circle key={index} cx={x(index)} cy={y(value)} r={2.5} />,
                  )}
              </g>
            );
          })}
        </svg>
      </div>
      <details>
        <summary>Figures: {title.toLowerCase()}</summary>
        <div class="table-wrap" tabIndex={0} role="region" aria-label={title}>
          <table>
            <caption class="visually-hidden">{title}</caption>
            <thead>
              <tr>
                <th scope="col">{unit === 'hour' ? 'Hour' : 'Day (UTC)'}</th>
                {lines.map((line) => (
                  <th key={line.label} scope="col" class="num">
                    {line.label}
                  </th>
                ))}
              </tr>
            </thead>
            <tbody>
              {starts.map((start, index) => (
                <tr key={start}>
                  <td>{pointName(start, unit)}</td>
                  {lines.map((line) => {
                    const value = line.values[index];
                    return (
                      <td key={line.label} class="num">
                        {value === null || value === undefined ? '—' : format(value)}
                      </td>
                    );
                  })}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      </details>
    </figure>
  );
}
