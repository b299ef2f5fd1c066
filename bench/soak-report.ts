/**
 * What `npm run soak` writes: its samples as CSV, a line chart of them as SVG
 * (time on x, MiB on y, RSS and heap-after-GC lines, flood windows shaded),
 * the least-squares slope of heap after GC, and the summary lines. Pure
 * functions: no clock, no files.
 */

/** One reading of the gateway's memory, right after a full garbage collection. */
export interface SoakSample {
  /** Seconds since the soak started. */
  seconds: number;
  /** Resident set size right after the GC, MiB. */
  rssMiB: number;
  /** The highest RSS seen (sampled every second, no GC) since the sample before, MiB. */
  rssPeakMiB: number;
  /** V8 heap in use after a full GC, MiB. */
  heapMiB: number;
  /** Whether a flood was running when the sample was taken. */
  flood: boolean;
  /** Waited turns completed so far. */
  turns: number;
  /** Requests and WebSocket messages refused so far (503/429 or an error frame). */
  shed: number;
  /** Non-reading clients the gateway closed so far. */
  slowClosed: number;
}

/** A flood, from its start to its end, in seconds since the soak started. */
export interface FloodWindow {
  start: number;
  end: number;
}

/** The header of the CSV. */
export const CSV_HEADER = 'seconds,rss_mib,heap_after_gc_mib,rss_peak_mib,flood,turns,shed,slow_closed';

/** The samples as CSV (one header line, one line per sample, MiB to 0.1, `\n` line ends, a final newline). */
export function samplesCsv(samples: readonly SoakSample[]): string {
  const rows = samples.map((s) =>
    [
      s.seconds.toFixed(0),
      s.rssMiB.toFixed(1),
      s.heapMiB.toFixed(1),
      s.rssPeakMiB.toFixed(1),
      s.flood ? '1' : '0',
      String(s.turns),
      String(s.shed),
      String(s.slowClosed),
    ].join(','),
  );
  return `${[CSV_HEADER, ...rows].join('\n')}\n`;
}

/** A least-squares line `y = intercept + slope × x`. */
export interface LinearFit {
  slope: number;
  intercept: number;
}

/** The least-squares line through the points; slope 0 through the mean for a single x, NaN for no points. */
export function linearFit(points: ReadonlyArray<{ x: number; y: number }>): LinearFit {
  const n = points.length;
  if (n === 0) return { slope: NaN, intercept: NaN };
  const meanX = points.reduce((sum, p) => sum + p.x, 0) / n;
  const meanY = points.reduce((sum, p) => sum + p.y, 0) / n;
  let sxy = 0;
  let sxx = 0;
  for (const p of points) {
    sxy += (p.x - meanX) * (p.y - meanY);
    sxx += (p.x - meanX) ** 2;
  }
  const slope = sxx === 0 ? 0 : sxy / sxx;
  return { slope, intercept: meanY - slope * meanX };
}

/** Heap after GC's trend, MiB per hour, fitted over the samples from `fromSeconds` on (all when fewer than two). */
export function heapSlopeMiBPerHour(samples: readonly SoakSample[], fromSeconds = 0): number {
  const after = samples.filter((s) => s.seconds >= fromSeconds);
  const used = after.length >= 2 ? after : samples;
  return linearFit(used.map((s) => ({ x: s.seconds / 3600, y: s.heapMiB }))).slope;
}

/** A "nice" step (1, 2 or 5 × a power of ten) giving about `count` ticks over `span`. */
export function niceStep(span: number, count: number): number {
  if (!(span > 0) || !(count > 0)) return 1;
  const raw = span / count;
  const power = 10 ** Math.floor(Math.log10(raw));
  const scaled = raw / power;
  const nice = scaled <= 1 ? 1 : scaled <= 2 ? 2 : scaled <= 5 ? 5 : 10;
  return nice * power;
}

const escapeXml = (text: string): string =>
  text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

/** Size and labels of the chart. */
export interface ChartOptions {
  title: string;
  width?: number;
  height?: number;
}

/**
 * A line chart of the samples as a standalone SVG document: x is time
 * (minutes), y is MiB from 0; one polyline for RSS, one for heap after GC;
 * each flood window a shaded band; axes with ticks and a legend.
 */
export function memoryChartSvg(
  samples: readonly SoakSample[],
  floods: readonly FloodWindow[],
  options: ChartOptions,
): string {
  const width = options.width ?? 800;
  const height = options.height ?? 400;
  const margin = { left: 56, right: 16, top: 36, bottom: 44 };
  const plotW = width - margin.left - margin.right;
  const plotH = height - margin.top - margin.bottom;
  const lastSecond = Math.max(1, ...samples.map((s) => s.seconds), ...floods.map((f) => f.end));
  const maxMiB = Math.max(1, ...samples.map((s) => Math.max(s.rssMiB, s.heapMiB, s.rssPeakMiB)));
  const xStep = niceStep(lastSecond / 60, 8);
  const yStep = niceStep(maxMiB, 5);
  const xMax = Math.ceil(lastSecond / 60 / xStep) * xStep;
  const yMax = Math.ceil(maxMiB / yStep) * yStep;
  const x = (seconds: number): number => margin.left + (seconds / 60 / xMax) * plotW;
  const y = (mib: number): number => margin.top + plotH - (mib / yMax) * plotH;
  const num = (value: number): string => value.toFixed(1);
  const tickLabel = (value: number): string => String(Number(value.toPrecision(6)));

  const parts: string[] = [];
  parts.push(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" ` +
      `font-family="sans-serif" font-size="12">`,
  );
  parts.push(`<rect width="${width}" height="${height}" fill="#ffffff"/>`);
  parts.push(`<text x="${width / 2}" y="20" text-anchor="middle" font-size="14">${escapeXml(options.title)}</text>`);
  for (const flood of floods) {
    const x0 = x(Math.max(0, flood.start));
    const x1 = x(Math.min(xMax * 60, flood.end));
    parts.push(
      `<rect class="flood" x="${num(x0)}" y="${margin.top}" width="${num(Math.max(1, x1 - x0))}" height="${plotH}" ` +
        `fill="#f4a261" fill-opacity="0.25"/>`,
    );
  }
  for (let v = 0; v <= yMax + yStep / 2; v += yStep) {
    const py = num(y(v));
    parts.push(`<line x1="${margin.left}" y1="${py}" x2="${margin.left + plotW}" y2="${py}" stroke="#e0e0e0"/>`);
    parts.push(`<text x="${margin.left - 6}" y="${py}" text-anchor="end" dy="4">${tickLabel(v)}</text>`);
  }
  for (let v = 0; v <= xMax + xStep / 2; v += xStep) {
    const px = num(x(v * 60));
    parts.push(`<line x1="${px}" y1="${margin.top + plotH}" x2="${px}" y2="${margin.top + plotH + 4}" stroke="#333"/>`);
    parts.push(`<text x="${px}" y="${margin.top + plotH + 18}" text-anchor="middle">${tickLabel(v)}</text>`);
  }
  parts.push(
    `<polyline points="${margin.left},${margin.top} ${margin.left},${margin.top + plotH} ${margin.left + plotW},${margin.top + plotH}" ` +
      `fill="none" stroke="#333"/>`,
  );
  parts.push(
    `<text x="${margin.left + plotW / 2}" y="${height - 8}" text-anchor="middle">minutes</text>`,
    `<text x="14" y="${margin.top + plotH / 2}" text-anchor="middle" transform="rotate(-90 14 ${margin.top + plotH / 2})">MiB</text>`,
  );
  const line = (cls: string, color: string, value: (s: SoakSample) => number, dashed = false): void => {
    if (samples.length === 0) return;
    const points = samples.map((s) => `${num(x(s.seconds))},${num(y(value(s)))}`).join(' ');
    const style = dashed ? 'stroke-width="1" stroke-dasharray="4 3"' : 'stroke-width="2"';
    parts.push(`<polyline class="${cls}" points="${points}" fill="none" stroke="${color}" ${style}/>`);
  };
  line('rss-peak', '#1d4ed8', (s) => s.rssPeakMiB, true);
  line('rss', '#1d4ed8', (s) => s.rssMiB);
  line('heap', '#15803d', (s) => s.heapMiB);
  const legendX = margin.left + 10;
  const legend: Array<[string, string, 'line' | 'dashed' | 'band']> = [
    ['RSS after full GC', '#1d4ed8', 'line'],
    ['RSS peak between samples (no GC)', '#1d4ed8', 'dashed'],
    ['V8 heap after full GC', '#15803d', 'line'],
    ['flood', '#f4a261', 'band'],
  ];
  legend.forEach(([label, color, kind], i) => {
    const ly = margin.top + 14 + i * 16;
    const mark =
      kind === 'band'
        ? `<rect x="${legendX}" y="${ly - 8}" width="18" height="10" fill="${color}" fill-opacity="0.25"/>`
        : `<line x1="${legendX}" y1="${ly - 3}" x2="${legendX + 18}" y2="${ly - 3}" stroke="${color}" ` +
          (kind === 'dashed' ? 'stroke-width="1" stroke-dasharray="4 3"/>' : 'stroke-width="2"/>');
    parts.push(mark, `<text x="${legendX + 24}" y="${ly}">${escapeXml(label)}</text>`);
  });
  parts.push('</svg>');
  return `${parts.join('\n')}\n`;
}

/** What the soak's last lines say. */
export interface SoakSummary {
  minutes: number;
  rss: { start: number; end: number; peak: number };
  heap: { start: number; end: number; peak: number };
  /** Heap after GC's least-squares trend over the run after the warm-up, MiB per hour. */
  heapSlopeMiBPerHour: number;
  /**
   * The highest heap after GC of each flood cycle (from one flood's start to the next; the part before the first
   * flood is not a cycle). Caches that fill between floods and empty at each make the heap a saw-tooth whose
   * overall slope depends on where the run stops; growth from cycle to cycle is what a leak shows.
   */
  cyclePeaks: number[];
  turns: number;
  shed: number;
  slowClosed: number;
}

/** The highest heap after GC of each flood cycle: the samples from a flood's first sample up to the next one's. */
export function floodCyclePeaks(samples: readonly SoakSample[]): number[] {
  const peaks: number[] = [];
  let current: number | null = null;
  samples.forEach((s, i) => {
    const starts = s.flood && !(samples[i - 1]?.flood ?? false);
    if (starts) {
      if (current !== null) peaks.push(current);
      current = s.heapMiB;
    } else if (current !== null) current = Math.max(current, s.heapMiB);
  });
  if (current !== null) peaks.push(current);
  return peaks;
}

/**
 * The summary of a run: start, end and peak of RSS and heap after GC (the
 * RSS peak is the larger of the samples' and `rssHighWaterMiB`, the
 * process's own high-water mark), and the heap's slope after `warmupSeconds`.
 */
export function summarize(samples: readonly SoakSample[], warmupSeconds: number, rssHighWaterMiB = 0): SoakSummary {
  if (samples.length === 0) throw new Error('no samples');
  const first = samples[0]!;
  const last = samples.at(-1)!;
  return {
    minutes: last.seconds / 60,
    rss: {
      start: first.rssMiB,
      end: last.rssMiB,
      peak: Math.max(rssHighWaterMiB, ...samples.map((s) => Math.max(s.rssMiB, s.rssPeakMiB))),
    },
    heap: { start: first.heapMiB, end: last.heapMiB, peak: Math.max(...samples.map((s) => s.heapMiB)) },
    heapSlopeMiBPerHour: heapSlopeMiBPerHour(samples, warmupSeconds),
    cyclePeaks: floodCyclePeaks(samples),
    turns: last.turns,
    shed: last.shed,
    slowClosed: last.slowClosed,
  };
}

/** The summary as printed lines. */
export function summaryLines(summary: SoakSummary): string[] {
  const f = (v: number): string => v.toFixed(1);
  const slope = summary.heapSlopeMiBPerHour;
  return [
    `soak: ${f(summary.minutes)} min`,
    `  RSS MiB (after GC): start ${f(summary.rss.start)}, end ${f(summary.rss.end)}; peak ${f(summary.rss.peak)} (any time)`,
    `  heap after GC MiB:  start ${f(summary.heap.start)}, end ${f(summary.heap.end)}, peak ${f(summary.heap.peak)}`,
    `  heap after GC slope (least squares, after warm-up): ${slope >= 0 ? '+' : ''}${slope.toFixed(2)} MiB/hour`,
    ...(summary.cyclePeaks.length > 0
      ? [`  heap after GC, highest of each flood cycle: ${summary.cyclePeaks.map(f).join(', ')} MiB`]
      : []),
    `  waited turns ${summary.turns}, refused (503/429, error frames) ${summary.shed}, slow clients closed ${summary.slowClosed}`,
  ];
}
