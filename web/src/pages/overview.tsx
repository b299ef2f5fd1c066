/**
 * Overview (`#/overview`, the default page): the gateway's health (status, provider, channels, WebSocket
 * clients, sessions), today's usage, and today's spend against the daily budget (`budget.daily_usd` of the
 * config; none means unlimited). Refreshes on live session, turn and channel events.
 */
import type { ComponentChildren } from 'preact';
import { must } from '../errors';
import type { PageProps } from '../page';
import { Badge, Empty, ErrorBox, useLive, useLoad, useThrottled, usd } from '../ui';

/** One figure of the overview. */
function Stat({ label, children }: { label: string; children: ComponentChildren }) {
  return (
    <div class="card stat">
      <div class="label">{label}</div>
      <div class="value">{children}</div>
    </div>
  );
}

export default function OverviewPage({ api, live }: PageProps) {
  const health = useLoad(() => must(api.GET('/api/v1/health')), [api]);
  const cost = useLoad(
    () => must(api.GET('/api/v1/analytics/cost', { params: { query: { period: 'today' } } })),
    [api],
  );
  const usage = useLoad(
    () => must(api.GET('/api/v1/analytics/usage', { params: { query: { period: 'today' } } })),
    [api],
  );
  const config = useLoad(() => must(api.GET('/api/v1/config')), [api]);
  const refresh = useThrottled(() => {
    health.reload();
    cost.reload();
    usage.reload();
  }, 500);
  useLive(live, ['sessions', 'turns', 'channels'], (event) => {
    if (event.topic !== 'turns' || event.event === 'done' || event.event === 'status') refresh();
  });

  const report = health.data;
  const spent = cost.data?.total_usd;
  const budget = config.data?.budget.daily_usd ?? null;
  const channels = Object.entries(report?.active_channels ?? {});
  const share = budget && spent !== undefined ? Math.min(spent / budget, 1) : undefined;

  return (
    <section aria-labelledby="overview-title">
      <h1 id="overview-title">Overview</h1>
      {[health, cost, usage, config].map(
        (load, index) => load.error !== undefined && <ErrorBox key={index} error={load.error} />,
      )}
      <div class="grid" aria-label="Health">
        <Stat label="Status">{report ? <Badge status={report.status} /> : '…'}</Stat>
        <Stat label="Provider">{report?.provider ?? '…'}</Stat>
        <Stat label="WebSocket clients">{report?.ws_clients ?? '…'}</Stat>
        <Stat label="Sessions (active / total)">
          {report ? `${report.active_sessions} / ${report.total_sessions}` : '…'}
        </Stat>
        <Stat label="Spend today">
          <span data-field="spend">{usd(spent)}</span>
          <span class="muted"> of {budget === null ? 'no budget' : usd(budget)}</span>
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
        <Stat label="Messages today">{usage.data?.messages ?? '…'}</Stat>
        <Stat label="Tool calls today">{usage.data?.tool_calls ?? '…'}</Stat>
      </div>
      {report?.error && (
        <p class="error-box" role="alert">
          {report.error.message}
        </p>
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
      {cost.data && cost.data.breakdown.length === 0 && <Empty>Nothing spent today.</Empty>}
      {cost.data && cost.data.breakdown.length > 0 && (
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
              {cost.data.breakdown.map((row) => (
                <tr key={row.model ?? 'unknown'}>
                  <td>{row.model ?? '—'}</td>
                  <td>{row.input_tokens}</td>
                  <td>{row.output_tokens}</td>
                  <td>{usd(row.cost_usd)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}
