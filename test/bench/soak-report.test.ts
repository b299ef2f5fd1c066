import { describe, expect, it } from 'vitest';
import {
  CSV_HEADER,
  floodCyclePeaks,
  heapSlopeMiBPerHour,
  linearFit,
  memoryChartSvg,
  niceStep,
  samplesCsv,
  summarize,
  summaryLines,
  type SoakSample,
} from '../../bench/soak-report.js';

const sample = (seconds: number, rssMiB: number, heapMiB: number, extra: Partial<SoakSample> = {}): SoakSample => ({
  seconds,
  rssMiB,
  heapMiB,
  rssPeakMiB: rssMiB,
  flood: false,
  turns: 0,
  shed: 0,
  slowClosed: 0,
  ...extra,
});

describe('linearFit', () => {
  it('recovers the line through exact points', () => {
    const fit = linearFit([0, 1, 2, 3].map((x) => ({ x, y: 5 + 2 * x })));
    expect(fit.slope).toBeCloseTo(2, 10);
    expect(fit.intercept).toBeCloseTo(5, 10);
  });

  it('fits the least-squares line through noisy points', () => {
    // Points (0,1) (1,3) (2,2) (3,5): slope = Sxy/Sxx = 5.5/5 = 1.1, intercept = 2.75 − 1.1 × 1.5 = 1.1.
    const fit = linearFit([
      { x: 0, y: 1 },
      { x: 1, y: 3 },
      { x: 2, y: 2 },
      { x: 3, y: 5 },
    ]);
    expect(fit.slope).toBeCloseTo(1.1, 10);
    expect(fit.intercept).toBeCloseTo(1.1, 10);
  });

  it('is flat through a single x and undefined without points', () => {
    expect(linearFit([{ x: 4, y: 7 }])).toEqual({ slope: 0, intercept: 7 });
    expect(Number.isNaN(linearFit([]).slope)).toBe(true);
  });
});

describe('heapSlopeMiBPerHour', () => {
  it('measures MiB per hour over the samples after the warm-up', () => {
    // Warm-up spike at 0 s, then +1 MiB every 10 minutes: 6 MiB/hour.
    const samples = [sample(0, 90, 40), ...[60, 660, 1260, 1860].map((s, i) => sample(s, 90, 20 + i))];
    expect(heapSlopeMiBPerHour(samples, 60)).toBeCloseTo(6, 10);
    // Without skipping the warm-up, the spike at 0 s drags the slope down.
    expect(heapSlopeMiBPerHour(samples, 0)).toBeLessThan(6);
  });

  it('falls back to every sample when fewer than two follow the warm-up', () => {
    expect(heapSlopeMiBPerHour([sample(0, 1, 10), sample(1800, 1, 11)], 3600)).toBeCloseTo(2, 10);
  });
});

describe('samplesCsv', () => {
  it('writes a header and one line per sample', () => {
    const csv = samplesCsv([
      sample(0, 80.04, 20.26),
      sample(30, 101.25, 22, { rssPeakMiB: 180, flood: true, turns: 1500, shed: 42, slowClosed: 3 }),
    ]);
    expect(csv).toBe(`${CSV_HEADER}\n0,80.0,20.3,80.0,0,0,0,0\n30,101.3,22.0,180.0,1,1500,42,3\n`);
    expect(CSV_HEADER.split(',')).toEqual([
      'seconds',
      'rss_mib',
      'heap_after_gc_mib',
      'rss_peak_mib',
      'flood',
      'turns',
      'shed',
      'slow_closed',
    ]);
  });
});

describe('niceStep', () => {
  it('picks 1, 2 or 5 times a power of ten', () => {
    expect(niceStep(30, 8)).toBe(5);
    expect(niceStep(100, 5)).toBe(20);
    expect(niceStep(2, 8)).toBe(0.5);
    expect(niceStep(0, 8)).toBe(1);
  });
});

describe('memoryChartSvg', () => {
  const samples = [sample(0, 80, 20), sample(60, 120, 30, { rssPeakMiB: 200 }), sample(120, 100, 25)];
  const svg = memoryChartSvg(samples, [{ start: 30, end: 90 }], { title: 'soak <test> & co', width: 800, height: 400 });
  const points = (cls: string): Array<[number, number]> => {
    const match = new RegExp(`<polyline class="${cls}" points="([^"]+)"`).exec(svg);
    expect(match).not.toBeNull();
    return match![1]!.split(' ').map((p) => p.split(',').map(Number) as [number, number]);
  };

  it('is a standalone SVG document with an escaped title', () => {
    expect(svg.startsWith('<svg xmlns="http://www.w3.org/2000/svg" width="800" height="400"')).toBe(true);
    expect(svg.trimEnd().endsWith('</svg>')).toBe(true);
    expect(svg).toContain('soak &lt;test&gt; &amp; co');
  });

  it('draws one point per sample for RSS and heap, time left to right, more MiB higher up', () => {
    const rss = points('rss');
    const heap = points('heap');
    expect(rss).toHaveLength(3);
    expect(heap).toHaveLength(3);
    expect(rss[0]![0]).toBeLessThan(rss[1]![0]);
    expect(rss[1]![0]).toBeLessThan(rss[2]![0]);
    // SVG y grows downwards: 120 MiB is above 80 MiB, and RSS above heap at the same time.
    expect(rss[1]![1]).toBeLessThan(rss[0]![1]);
    expect(rss[0]![1]).toBeLessThan(heap[0]![1]);
    // The peak between samples is drawn above the RSS after GC where it was higher.
    const peak = points('rss-peak');
    expect(peak).toHaveLength(3);
    expect(peak[1]![1]).toBeLessThan(rss[1]![1]);
    expect(peak[0]![1]).toBe(rss[0]![1]);
    // Every point lies inside the plot.
    for (const [px, py] of [...rss, ...heap]) {
      expect(px).toBeGreaterThanOrEqual(0);
      expect(px).toBeLessThanOrEqual(800);
      expect(py).toBeGreaterThanOrEqual(0);
      expect(py).toBeLessThanOrEqual(400);
    }
  });

  it('shades each flood window between its start and end', () => {
    const band = /<rect class="flood" x="([\d.]+)" y="[\d.]+" width="([\d.]+)"/.exec(svg);
    expect(band).not.toBeNull();
    const rss = points('rss');
    const x0 = Number(band![1]);
    const x1 = x0 + Number(band![2]);
    // The band spans 30 s to 90 s: between the first and last sample, around the one at 60 s.
    expect(x0).toBeGreaterThan(rss[0]![0]);
    expect(x0).toBeLessThan(rss[1]![0]);
    expect(x1).toBeGreaterThan(rss[1]![0]);
    expect(x1).toBeLessThan(rss[2]![0]);
    expect(svg.match(/class="flood"/g)).toHaveLength(1);
  });
});

describe('summarize', () => {
  it('reports start, end and peak, the slope after the warm-up and the last counters', () => {
    const samples = [
      sample(0, 90, 30),
      sample(60, 140, 22, { flood: true, shed: 10 }),
      sample(120, 100, 23, { turns: 900, shed: 10, slowClosed: 4 }),
      sample(180, 101, 24, { turns: 1800, shed: 25, slowClosed: 8 }),
    ];
    const summary = summarize(samples, 60, 150);
    expect(summary.rss).toEqual({ start: 90, end: 101, peak: 150 });
    // A peak between samples above the high-water mark given counts too.
    expect(summarize([...samples, sample(240, 100, 24, { rssPeakMiB: 170 })], 60, 150).rss.peak).toBe(170);
    expect(summary.heap).toEqual({ start: 30, end: 24, peak: 30 });
    // 22 → 24 over two minutes: 60 MiB/hour.
    expect(summary.heapSlopeMiBPerHour).toBeCloseTo(60, 8);
    expect(summary).toMatchObject({ minutes: 3, turns: 1800, shed: 25, slowClosed: 8 });
    const lines = summaryLines(summary).join('\n');
    expect(lines).toContain('peak 150.0');
    expect(lines).toContain('+60.00 MiB/hour');
    expect(lines).toContain('slow clients closed 8');
    // One flood: one cycle, from its sample to the end.
    expect(summary.cyclePeaks).toEqual([24]);
    expect(lines).toContain('highest of each flood cycle: 24.0 MiB');
  });

  it('takes the highest heap of each flood cycle, not counting the part before the first flood', () => {
    const heap = [50, 40, 44, 48, 41, 45, 52, 43, 47];
    const floods = new Set([1, 4, 7]);
    const samples = heap.map((mib, i) => sample(i * 30, 150, mib, { flood: floods.has(i) }));
    expect(floodCyclePeaks(samples)).toEqual([48, 52, 47]);
    // A flood over two samples is one cycle's start.
    const long = heap.map((mib, i) => sample(i * 30, 150, mib, { flood: i === 1 || i === 2 }));
    expect(floodCyclePeaks(long)).toEqual([52]);
    expect(floodCyclePeaks(heap.map((mib, i) => sample(i * 30, 150, mib)))).toEqual([]);
  });

  it('refuses an empty run', () => {
    expect(() => summarize([], 0)).toThrow('no samples');
  });
});
