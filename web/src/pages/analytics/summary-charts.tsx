/**
 * The activity charts drawn from one answer of GET /analytics/summary (ADR 0045), shared by Overview and
 * Analytics: messages and turns, tokens, and turn latency (p50 and p99) per hour of today or per UTC day.
 */
import type { AnalyticsSummary } from '../../api';
import { SeriesChart } from './series-chart';

/** A count as an axis label: whole numbers plain, a half step with one decimal. */
export function countText(value: number): string {
  return Number.isInteger(value) ? value.toLocaleString() : value.toFixed(1);
}

/** Milliseconds as a latency reads best: `850 ms`, `1.2 s`, `2 min`. */
export function latencyText(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(ms < 10_000 ? 1 : 0)} s`;
  return `${(ms / 60_000).toFixed(1)} min`;
}

/** Messages and turns, tokens, and turn latency of a summary, each its own chart. */
export function ActivityCharts({ summary }: { summary: AnalyticsSummary }) {
  const starts = summary.series.map((point) => point.start);
  const unit = summary.bucket;
  return (
    <div class="series-charts">
      <SeriesChart
        title="Messages and turns"
        starts={starts}
        unit={unit}
        format={countText}
        integer
        lines={[
          { label: 'Messages', values: summary.series.map((p) => p.messages) },
          { label: 'Turns', values: summary.series.map((p) => p.turns) },
        ]}
      />
      <SeriesChart
        title="Tokens"
        starts={starts}
        unit={unit}
        format={countText}
        integer
        lines={[
          { label: 'Input tokens', values: summary.series.map((p) => p.input_tokens) },
          { label: 'Output tokens', values: summary.series.map((p) => p.output_tokens) },
        ]}
      />
      <SeriesChart
        title="Turn latency"
        starts={starts}
        unit={unit}
        format={latencyText}
        integer
        lines={[
          { label: 'p50', values: summary.series.map((p) => p.latency_p50_ms) },
          { label: 'p99', values: summary.series.map((p) => p.latency_p99_ms) },
        ]}
      />
    </div>
  );
}
