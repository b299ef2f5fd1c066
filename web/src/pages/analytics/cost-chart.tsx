/**
 * The cost-per-day chart of the Analytics page, drawn by uPlot on a canvas. uPlot sizes its elements through
 * the DOM's style properties (allowed by the `style-src 'self'` policy) and its stylesheet is bundled as a
 * file. The chart follows the container's width and the theme's colours; the figures themselves are also in
 * a table for screen readers and keyboard users. The axes (`chart-axes.ts`): one x label per day, fewer when
 * they would crowd, dates in the browser's zone and language; the y axis as wide as its longest label.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { usd } from '../../ui';
import {
  chooseDayTicks,
  dayLabel,
  localDate,
  localDaySeconds,
  moneyLabel,
  type DayTicks,
  type TickUnit,
} from './chart-axes';

/** One day of the trend (`daily_trend` of the cost summary). */
export interface DayCost {
  date: string;
  cost_usd: number;
}

const CHART_HEIGHT = 260;
/** The font of the axis labels (CSS pixels; uPlot scales it for the screen's pixel ratio). */
const AXIS_FONT = '12px system-ui, -apple-system, "Segoe UI", Roboto, sans-serif';
/** uPlot's tick length and the gap between tick and label, in CSS pixels. */
const TICK_SIZE = 10;
const TICK_GAP = 5;
/** Room kept free between two x labels. */
const LABEL_SPACING = 14;
const HALF_DAY = 43_200;

/** A colour of the page's theme (a CSS custom property), for the canvas, which cannot read variables. */
function themeColour(element: Element, name: string, fallback: string): string {
  return getComputedStyle(element).getPropertyValue(name).trim() || fallback;
}

let measurer: CanvasRenderingContext2D | null | undefined;

/** The width of `text` in the axis font, in CSS pixels (a canvas of its own: uPlot's keeps its font state). */
function textWidth(text: string): number {
  measurer ??= document.createElement('canvas').getContext('2d');
  if (!measurer) return text.length * 7;
  measurer.font = AXIS_FONT;
  return measurer.measureText(text).width;
}

/** The widest label of `dates` at `unit`. */
function widestLabel(dates: readonly string[], unit: TickUnit): number {
  const labels = new Set(dates.map((date) => dayLabel(date, unit)));
  let widest = 0;
  for (const label of labels) widest = Math.max(widest, textWidth(label));
  return widest;
}

/**
 * Bumps on a change of the theme in force (the header's toggle sets `<html data-theme>`; the system's scheme
 * decides until then), so the canvas is drawn again in the theme's colours.
 */
function useColourScheme(): number {
  const [generation, setGeneration] = useState(0);
  useEffect(() => {
    const query = matchMedia('(prefers-color-scheme: dark)');
    const changed = () => setGeneration((n) => n + 1);
    query.addEventListener('change', changed);
    const toggled = new MutationObserver(changed);
    toggled.observe(document.documentElement, { attributes: true, attributeFilter: ['data-theme'] });
    return () => {
      query.removeEventListener('change', changed);
      toggled.disconnect();
    };
  }, []);
  return generation;
}

export function CostChart({ days }: { days: readonly DayCost[] }) {
  const box = useRef<HTMLDivElement>(null);
  const scheme = useColourScheme();
  useEffect(() => {
    const element = box.current;
    if (!element) return;
    const text = themeColour(element, '--text', '#1b1f24');
    const grid = themeColour(element, '--border', '#d0d7de');
    const accent = themeColour(element, '--accent', '#0a58ca');
    const dates = days.map((d) => d.date);
    const xs = dates.map(localDaySeconds);
    const widths = new Map<TickUnit, number>();
    const labelWidth = (unit: TickUnit) => {
      let width = widths.get(unit);
      if (width === undefined) widths.set(unit, (width = widestLabel(dates, unit)));
      return width;
    };
    // The labelled days for the plot's width at the last layout.
    let ticks: DayTicks = { unit: 'day', dates: [] };
    const axis = {
      stroke: text,
      font: AXIS_FONT,
      gap: TICK_GAP,
      grid: { stroke: grid, width: 1 },
      ticks: { stroke: grid, width: 1, size: TICK_SIZE },
    };
    const chart = new uPlot(
      {
        width: Math.max(element.clientWidth, 240),
        height: CHART_HEIGHT,
        legend: { show: false },
        cursor: { show: true, drag: { x: false, y: false } },
        scales: {
          // Each day is drawn in the middle of its own slot, so the first and last labels are not cut off. The
          // range comes from the days themselves: uPlot's own span for a single point is far too wide.
          x: { time: true, range: () => [(xs[0] ?? 0) - HALF_DAY, (xs[xs.length - 1] ?? 0) + HALF_DAY] },
          y: { range: (_u, _min, max) => [0, max > 0 ? max * 1.1 : 1] },
        },
        axes: [
          {
            ...axis,
            splits: (u) => {
              const plotWidth = u.bbox.width / devicePixelRatio;
              ticks = chooseDayTicks(dates, (unit) =>
                Math.max(1, Math.floor(plotWidth / (labelWidth(unit) + LABEL_SPACING))),
              );
              return ticks.dates.map(localDaySeconds);
            },
            values: (_u, splits) => splits.map((s) => dayLabel(localDate(s), ticks.unit)),
          },
          {
            ...axis,
            // As wide as the longest label needs, so none is cut off.
            size: (_u, values) =>
              Math.ceil(TICK_SIZE + TICK_GAP + 4 + Math.max(0, ...(values ?? []).map((v) => textWidth(v)))),
            values: (_u, splits, _axis, _space, step) => splits.map((s) => moneyLabel(s, step)),
          },
        ],
        series: [
          {},
          {
            label: 'Cost (USD)',
            stroke: accent,
            width: 2,
            fill: `${accent}33`,
            points: { show: days.length <= 31 },
          },
        ],
      },
      [xs, days.map((d) => d.cost_usd)],
      element,
    );
    const resize = new ResizeObserver(() => {
      chart.setSize({ width: Math.max(element.clientWidth, 240), height: CHART_HEIGHT });
    });
    resize.observe(element);
    return () => {
      resize.disconnect();
      chart.destroy();
    };
  }, [days, scheme]);

  const total = days.reduce((sum, d) => sum + d.cost_usd, 0);
  const first = days[0]?.date;
  const last = days[days.length - 1]?.date;
  return (
    <figure class="cost-chart">
      <div
        ref={box}
        class="cost-chart-canvas"
        role="img"
        aria-label={`Cost per day from ${first ?? '—'} to ${last ?? '—'} (UTC), ${usd(total)} in all`}
      />
      <figcaption class="muted">Cost per day (UTC days)</figcaption>
      <details>
        <summary>Daily figures</summary>
        <div class="table-wrap" tabIndex={0} role="region" aria-label="Cost per day">
          <table>
            <caption class="visually-hidden">Cost per day</caption>
            <thead>
              <tr>
                <th scope="col">Day (UTC)</th>
                <th scope="col" class="num">
                  Cost
                </th>
              </tr>
            </thead>
            <tbody>
              {days.map((d) => (
                <tr key={d.date}>
                  <td>{d.date}</td>
                  <td class="num">{usd(d.cost_usd)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      </details>
    </figure>
  );
}
