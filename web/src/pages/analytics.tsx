/**
 * Analytics (`#/analytics`): spend per day as a chart, the breakdown of cost by model, channel and session, the
 * usage counters, and the period they cover (today, the last 7 or 30 days, or all time; days are UTC days).
 * The analytics routes share a small rate group (10 a minute by default), so one view costs four requests
 * (the cost grouped by model, channel and session, and the usage) and finished turns refresh it at most every
 * 20 seconds.
 */
import { Fragment, type ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import type { GatehouseClient } from '../../../client/index.js';
import type { Schemas } from '../api';
import { must } from '../errors';
import type { PageProps } from '../page';
import { Empty, ErrorBox, useLive, useLoad, useThrottled, usd } from '../ui';
import { CostChart } from './analytics/cost-chart';
import './analytics/analytics.css';

type Period = Schemas['CostSummary']['period'];

const PERIODS: readonly { value: Period; label: string }[] = [
  { value: 'today', label: 'Today' },
  { value: 'week', label: 'Last 7 days' },
  { value: 'month', label: 'Last 30 days' },
  { value: 'all', label: 'All time' },
];

/** Live refreshes at most this often: four analytics requests each. */
const LIVE_REFRESH_MS = 20_000;

type CostSummary = Schemas['CostSummary'];
type Grouping = 'model' | 'channel' | 'session';

/** One row of a breakdown table. */
interface Row {
  key: string;
  input: number;
  output: number;
  cost: number;
}

interface Report {
  byModel: CostSummary;
  byChannel: CostSummary;
  bySession: CostSummary;
  usage: Schemas['UsageStats'];
}

async function loadReport(api: GatehouseClient, period: Period): Promise<Report> {
  const cost = (group_by: Grouping) =>
    must(api.GET('/api/v1/analytics/cost', { params: { query: { period, group_by } } }));
  const [byModel, byChannel, bySession, usage] = await Promise.all([
    cost('model'),
    cost('channel'),
    cost('session'),
    must(api.GET('/api/v1/analytics/usage', { params: { query: { period } } })),
  ]);
  return { byModel, byChannel, bySession, usage };
}

/** The rows of a cost breakdown (most expensive first, as the API sorts them), keyed by `grouping`. */
function rowsOf(summary: CostSummary, grouping: Grouping): Row[] {
  return summary.breakdown.map((item) => ({
    key: item[grouping] ?? '—',
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

function Breakdown({ title, keyName, rows, empty }: { title: string; keyName: string; rows: Row[]; empty: string }) {
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
                  <td class="num">{usd(row.cost)}</td>
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
  const report = useLoad(() => loadReport(api, period), [api, period]);
  const refresh = useThrottled(report.reload, LIVE_REFRESH_MS);
  useLive(live, ['turns'], (event) => {
    if (event.event === 'done') refresh();
  });

  const data = report.data;
  const spent = (data?.byModel.daily_trend ?? []).some((day) => day.cost_usd > 0);
  const tokens = data?.byModel.breakdown.reduce((sum, row) => sum + row.input_tokens + row.output_tokens, 0);
  const label = PERIODS.find((p) => p.value === period)?.label ?? period;

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
          <span data-field="total">{data ? usd(data.byModel.total_usd) : '…'}</span>
        </Counter>
        <Counter label="Tokens">{tokens ?? '…'}</Counter>
        <Counter label="Sessions">{data?.usage.sessions ?? '…'}</Counter>
        <Counter label="Messages">{data?.usage.messages ?? '…'}</Counter>
        <Counter label="Tool calls">{data?.usage.tool_calls ?? '…'}</Counter>
        <Counter label="Tasks completed">{data?.usage.tasks_completed ?? '…'}</Counter>
        <Counter label="Skills used">{data?.usage.skills_used ?? '…'}</Counter>
      </div>

      <h2>Cost per day</h2>
      {data && !spent && <Empty>Nothing spent in this period.</Empty>}
      {data && spent && <CostChart days={data.byModel.daily_trend} />}

      {data && (
        <div class="breakdowns">
          <Breakdown
            title="By model"
            keyName="Model"
            rows={rowsOf(data.byModel, 'model')}
            empty="No model was called in this period."
          />
          <Breakdown
            title="By channel"
            keyName="Channel"
            rows={rowsOf(data.byChannel, 'channel')}
            empty="No channel had a turn in this period."
          />
          <Breakdown
            title="By session"
            keyName="Session"
            rows={rowsOf(data.bySession, 'session')}
            empty="No session spent in this period."
          />
        </div>
      )}
    </section>
  );
}
