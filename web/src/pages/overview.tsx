/**
 * Overview (`#/overview`, the default page) answers "is it OK?": the status and why (each component that is
 * not ok, with its message, from GET /health; on the `echo` provider a first-run checklist instead), version,
 * uptime, provider and model, the turns waiting for a person, today's usage and spend against the daily budget
 * (`budget.daily_usd`; none means unlimited), charts of today's messages, turns, tokens and turn latency, the
 * channels, and today's spend by model.
 *
 * Today's figures come from one request, GET /analytics/summary (ADR 0045): the analytics routes share a small
 * rate group (10 a minute by default), so live events refresh them at most every 20 seconds, while the health
 * report (the `read` group) follows them within half a second.
 */
import type { ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { must } from '../errors';
import type { PageProps } from '../page';
import { usePendingApprovals } from '../pending';
import { Badge, Empty, ErrorBox, useLive, useLoad, useNow, useThrottled, usd } from '../ui';
import { ModelCost, PriceHint, unpriced } from './analytics/cost-cell';
import { ActivityCharts } from './analytics/summary-charts';
import { FirstRunChecklist, HealthWhy, onEcho, providerParts } from './overview/health-why';
import './overview/overview.css';

/** Today's analytics refresh on live events at most this often: one request of the analytics group each. */
const ANALYTICS_REFRESH_MS = 20_000;

/** One figure of the overview. */
function Stat({ label, field, children }: { label: string; field?: string; children: ComponentChildren }) {
  return (
    <div class="card stat" data-stat={field}>
      <div class="label">{label}</div>
      <div class="value">{children}</div>
    </div>
  );
}

/** `3 d 4 h`, `2 h 5 min`, `4 min 10 s`, `12 s`. */
export function uptimeText(totalSeconds: number): string {
  const s = Math.max(0, Math.floor(totalSeconds));
  const days = Math.floor(s / 86_400);
  const hours = Math.floor((s % 86_400) / 3600);
  const minutes = Math.floor((s % 3600) / 60);
  if (days > 0) return `${days} d ${hours} h`;
  if (hours > 0) return `${hours} h ${minutes} min`;
  if (minutes > 0) return `${minutes} min ${s % 60} s`;
  return `${s} s`;
}

export default function OverviewPage({ api, live, role }: PageProps) {
  const health = useLoad(() => must(api.GET('/api/v1/health')), [api]);
  const today = useLoad(
    () => must(api.GET('/api/v1/analytics/summary', { params: { query: { period: 'today' } } })),
    [api],
  );
  const config = useLoad(() => must(api.GET('/api/v1/config')), [api]);
  const pending = usePendingApprovals({ api, role, live });
  const refreshHealth = useThrottled(health.reload, 500);
  const refreshToday = useThrottled(today.reload, ANALYTICS_REFRESH_MS);
  useLive(live, ['sessions', 'turns', 'channels'], (event) => {
    if (event.topic !== 'turns' || event.event === 'done' || event.event === 'status') refreshHealth();
    if (event.topic === 'turns' && event.event === 'done') refreshToday();
  });

  // The uptime counts on between reloads of the report: seconds since it arrived are added to its figure.
  const report = health.data;
  const [loadedAt, setLoadedAt] = useState(() => Date.now());
  useEffect(() => setLoadedAt(Date.now()), [report]);
  const now = useNow(report !== undefined);
  const uptime = report ? report.uptime_seconds + Math.max(0, Math.floor((now - loadedAt) / 1000)) : undefined;

  const summary = today.data;
  const spent = summary?.totals.cost_usd;
  const budget = config.data?.budget.daily_usd ?? null;
  const channels = Object.entries(report?.active_channels ?? {});
  const share = budget && spent !== undefined ? Math.min(spent / budget, 1) : undefined;
  const provider = report ? providerParts(report.provider) : undefined;
  const noPrice = (summary?.by_model ?? []).filter(unpriced).map((row) => row.model);

  return (
    <section aria-labelledby="overview-title">
      <h1 id="overview-title">Overview</h1>
      {[health, today, config].map(
        (load, index) => load.error !== undefined && <ErrorBox key={index} error={load.error} />,
      )}

      <div class="overview-status card" aria-labelledby="overview-status-title">
        <h2 id="overview-status-title" class="overview-status-title">
          Status {report ? <Badge status={report.status} /> : <span class="muted">…</span>}
        </h2>
        {report && (
          <p class="muted overview-answering">
            Answering with <code data-field="provider-model">{report.provider}</code>.
          </p>
        )}
        {report && <HealthWhy report={report} />}
      </div>
      {report && onEcho(report) && <FirstRunChecklist />}

      <div class="grid overview-facts" aria-label="Gateway">
        <Stat label="Version" field="version">
          {report?.version ?? '…'}
        </Stat>
        <Stat label="Uptime" field="uptime">
          {uptime === undefined ? '…' : uptimeText(uptime)}
        </Stat>
        <Stat label="Provider" field="provider">
          {provider?.type ?? '…'}
        </Stat>
        <Stat label="Model" field="model">
          {provider?.model ?? '…'}
        </Stat>
        {role === 'admin' && (
          <Stat label="Waiting for a person" field="pending">
            {pending === null ? (
              '…'
            ) : (
              <a href="#/approvals" aria-label={`${pending} turns waiting for approval or an answer: open Approvals`}>
                {pending}
              </a>
            )}
          </Stat>
        )}
        <Stat label="WebSocket clients">{report?.ws_clients ?? '…'}</Stat>
        <Stat label="Sessions (active / total)">
          {report ? `${report.active_sessions} / ${report.total_sessions}` : '…'}
        </Stat>
      </div>

      <h2>Today</h2>
      <div class="grid" aria-label="Today">
        <Stat label="Spend today">
          <span data-field="spend">{usd(spent)}</span>
          <span class="muted">{budget === null ? ' (no budget set)' : ` of ${usd(budget)}`}</span>
          {share !== undefined && (
            <meter
              class="meter"
              min={0}
              max={1}
              low={0.7}
              high={0.9}
              optimum={0}
              value={share}
              aria-label="Share of the daily budget spent"
            />
          )}
        </Stat>
        <Stat label="Messages today" field="messages">
          {summary?.totals.messages ?? '…'}
        </Stat>
        <Stat label="Turns today" field="turns">
          {summary?.totals.turns ?? '…'}
        </Stat>
        <Stat label="Tokens today" field="tokens">
          {summary?.totals.tokens ?? '…'}
        </Stat>
        <Stat label="Tool calls today">{summary?.totals.tool_calls ?? '…'}</Stat>
      </div>
      {summary && (
        <section aria-labelledby="overview-activity" class="overview-activity">
          <h3 id="overview-activity" class="visually-hidden">
            Today by hour
          </h3>
          <ActivityCharts summary={summary} />
        </section>
      )}

      <h2>Channels</h2>
      {report && channels.length === 0 && <Empty>No channel is running.</Empty>}
      {channels.length > 0 && (
        <div class="table-wrap">
          <table>
            <caption class="visually-hidden">Channels and their state</caption>
            <thead>
              <tr>
                <th scope="col">Channel</th>
                <th scope="col">State</th>
              </tr>
            </thead>
            <tbody>
              {channels.map(([name, state]) => (
                <tr key={name}>
                  <td>{name}</td>
                  <td>
                    <Badge status={state} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}

      <h2>Spend today by model</h2>
      {summary && summary.by_model.length === 0 && <Empty>Nothing spent today.</Empty>}
      {summary && summary.by_model.length > 0 && (
        <div class="table-wrap">
          <table>
            <caption class="visually-hidden">Today's cost by model</caption>
            <thead>
              <tr>
                <th scope="col">Model</th>
                <th scope="col">Input tokens</th>
                <th scope="col">Output tokens</th>
                <th scope="col">Cost</th>
              </tr>
            </thead>
            <tbody>
              {summary.by_model.map((row) => (
                <tr key={row.model}>
                  <td>{row.model}</td>
                  <td>{row.input_tokens}</td>
                  <td>{row.output_tokens}</td>
                  <td>
                    <ModelCost model={row.model} row={row} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <PriceHint models={noPrice} />
    </section>
  );
}
