/**
 * Analytics (`#/analytics`): spend per day (per hour for today) as a chart, messages and turns, tokens and turn
 * latency as charts, the breakdown of cost by model, channel and session, the usage counters, and the period
 * they cover (today, the last 7 or 30 days, or all time; days are UTC days). The analytics routes share a small
 * rate group (10 a minute by default), so a view is one request, GET /analytics/summary (ADR 0045), and finished
 * turns refresh it at most every 20 seconds.
 */
import { Fragment, type ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import type { AnalyticsSummary } from '../api';
import { must } from '../errors';
import type { PageProps } from '../page';
import { Empty, ErrorBox, useLive, useLoad, useThrottled, usd } from '../ui';
import { ModelCost, PriceHint, unpriced } from './analytics/cost-cell';
import { CostChart } from './analytics/cost-chart';
import { SeriesChart } from './analytics/series-chart';
import { ActivityCharts } from './analytics/summary-charts';
import './analytics/analytics.css';

type Period = AnalyticsSummary['period'];

const PERIODS: readonly { value: Period; label: string }[] = [
  { value: 'today', label: 'Today' },
  { value: 'week', label: 'Last 7 days' },
  { value: 'month', label: 'Last 30 days' },
  { value: 'all', label: 'All time' },
];

/** Live refreshes at most this often: one analytics request each. */
const LIVE_REFRESH_MS = 20_000;

type Grouping = 'model' | 'channel' | 'session';

/** One row of a breakdown table. */
interface Row {
  key: string;
  input: number;
  output: number;
  cost: number;
}

/** The rows of a breakdown (most expensive first, as the API sorts them), keyed by `grouping`. */
function rowsOf(summary: AnalyticsSummary, grouping: Grouping): Row[] {
  const items: readonly ({ input_tokens: number; output_tokens: number; cost_usd: number } & Record<
    string,
    unknown
  >)[] = grouping === 'model' ? summary.by_model : grouping === 'channel' ? summary.by_channel : summary.by_session;
  return items.map((item) => ({
    key: typeof item[grouping] === 'string' ? item[grouping] : '—',
    input: item.input_tokens,
    output: item.output_tokens,
    cost: item.cost_usd,
  }));
}

/** A key with line-break opportunities after its `:` and `/` separators (`gateway:api:…` on a phone). */
function breakable(key: string) {
  return key.split(/(?<=[:/])/).map((part, index) => (
    <Fragment key={index}>
      {index > 0 && <wbr />}
      {part}
    </Fragment>
  ));
}

function Counter({ label, children }: { label: string; children: ComponentChildren }) {
  return (
    <div class="card stat">
      <div class="label">{label}</div>
      <div class="value">{children}</div>
    </div>
  );
}

function Breakdown({
  title,
  keyName,
  rows,
  empty,
}: {
  title: string;
  keyName: 'Model' | 'Channel' | 'Session';
  rows: Row[];
  empty: string;
}) {
  const id = `breakdown-${keyName.toLowerCase()}`;
  return (
    <section aria-labelledby={id}>
      <h2 id={id}>{title}</h2>
      {rows.length === 0 ? (
        <Empty>{empty}</Empty>
      ) : (
        <div class="table-wrap" tabIndex={0} role="region" aria-label={title}>
          <table data-breakdown={keyName.toLowerCase()}>
            <caption class="visually-hidden">{title}</caption>
            <thead>
              <tr>
                <th scope="col">{keyName}</th>
                <th scope="col" class="num">
                  Input tokens
                </th>
                <th scope="col" class="num">
                  Output tokens
                </th>
                <th scope="col" class="num">
                  Cost
                </th>
              </tr>
            </thead>
            <tbody>
              {rows.map((row) => (
                <tr key={row.key}>
                  <td class="key">{breakable(row.key)}</td>
                  <td class="num">{row.input}</td>
                  <td class="num">{row.output}</td>
                  <td class="num">
                    {keyName === 'Model' ? (
                      <ModelCost
                        model={row.key}
                        row={{ input_tokens: row.input, output_tokens: row.output, cost_usd: row.cost }}
                      />
                    ) : (
                      usd(row.cost)
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}

export default function AnalyticsPage({ api, live }: PageProps) {
  const [period, setPeriod] = useState<Period>('week');
  const report = useLoad(
    () => must(api.GET('/api/v1/analytics/summary', { params: { query: { period } } })),
    [api, period],
  );
  const refresh = useThrottled(report.reload, LIVE_REFRESH_MS);
  useLive(live, ['turns'], (event) => {
    if (event.event === 'done') refresh();
  });

  const data = report.data;
  const spent = (data?.series ?? []).some((point) => point.cost_usd > 0);
  const label = PERIODS.find((p) => p.value === period)?.label ?? period;
  const noPrice = (data?.by_model ?? []).filter(unpriced).map((row) => row.model);

  return (
    <section aria-labelledby="analytics-title">
      <h1 id="analytics-title">Analytics</h1>
      <div class="toolbar">
        <div class="field">
          <label for="analytics-period">Period</label>
          <select id="analytics-period" value={period} onChange={(e) => setPeriod(e.currentTarget.value as Period)}>
            {PERIODS.map((p) => (
              <option key={p.value} value={p.value}>
                {p.label}
              </option>
            ))}
          </select>
        </div>
        <button type="button" class="secondary" onClick={report.reload} disabled={report.loading}>
          Refresh
        </button>
        {report.loading && <span class="loading">Loading…</span>}
      </div>
      {report.error !== undefined && <ErrorBox error={report.error} />}

      <div class="grid" aria-label="Totals">
        <Counter label={`Spend (${label.toLowerCase()})`}>
          <span data-field="total">{data ? usd(data.totals.cost_usd) : '…'}</span>
        </Counter>
        <Counter label="Tokens">{data?.totals.tokens ?? '…'}</Counter>
        <Counter label="Sessions">{data?.totals.sessions ?? '…'}</Counter>
        <Counter label="Messages">{data?.totals.messages ?? '…'}</Counter>
        <Counter label="Turns">{data?.totals.turns ?? '…'}</Counter>
        <Counter label="Tool calls">{data?.totals.tool_calls ?? '…'}</Counter>
        <Counter label="Tasks completed">{data?.totals.tasks_completed ?? '…'}</Counter>
        <Counter label="Skills used">{data?.totals.skills_used ?? '…'}</Counter>
      </div>

      <h2>{data?.bucket === 'hour' ? 'Cost per hour' : 'Cost per day'}</h2>
      {data && !spent && <Empty>Nothing spent in this period.</Empty>}
      {data && spent && data.bucket === 'day' && (
        <CostChart days={data.series.map((point) => ({ date: point.start.slice(0, 10), cost_usd: point.cost_usd }))} />
      )}
      {data && spent && data.bucket === 'hour' && (
        <SeriesChart
          title="Cost"
          starts={data.series.map((point) => point.start)}
          unit="hour"
          format={usd}
          lines={[{ label: 'Cost', values: data.series.map((point) => point.cost_usd) }]}
        />
      )}

      {data && (
        <section aria-labelledby="analytics-activity">
          <h2 id="analytics-activity">Activity</h2>
          <ActivityCharts summary={data} />
        </section>
      )}

      {data && (
        <div class="breakdowns">
          <div>
            <Breakdown
              title="By model"
              keyName="Model"
              rows={rowsOf(data, 'model')}
              empty="No model was called in this period."
            />
            <PriceHint models={noPrice} />
          </div>
          <Breakdown
            title="By channel"
            keyName="Channel"
            rows={rowsOf(data, 'channel')}
            empty="No channel had a turn in this period."
          />
          <Breakdown
            title="By session"
            keyName="Session"
            rows={rowsOf(data, 'session')}
            empty="No session spent in this period."
          />
        </div>
      )}
    </section>
  );
}
