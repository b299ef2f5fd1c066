import type { Command } from 'commander';
import { CliError, type CliIo } from '../io.js';
import { withClientOptions } from '../options.js';
import { ApiCallError, callApi, requestApi, resolveTarget, type ApiResponse, type ClientOptions } from '../target.js';
import { formatDuration, style } from '../terminal.js';

/** The health report, as far as `status` reads it. */
interface Health {
  status: string;
  message?: string;
  version?: string;
  uptime_seconds?: number;
  provider: string;
  active_sessions: number;
  total_sessions: number;
  ws_clients: number;
  active_channels: Record<string, string>;
  components?: Record<string, { status: string; message?: string } | string>;
  error?: { message: string };
}

/** The health report of an answer, or a CliError when the answer is not one (another server, a wrong --url). */
async function readHealth(response: ApiResponse, url: string): Promise<Health> {
  const text = await response.text();
  let body: unknown = null;
  try {
    body = JSON.parse(text);
  } catch {
    /* judged below */
  }
  const health = body as Partial<Health> | null;
  if (!health || typeof health.status !== 'string' || typeof health.active_channels !== 'object') {
    throw new CliError(
      `${url} answered GET /health with HTTP ${response.status} and no health report; is it a Gatehouse gateway? ` +
        '(check --url, including the API prefix if it is not /api/v1)',
    );
  }
  return health as Health;
}

/** `gatehouse status`: health, version, uptime, sessions and spend today. */
export function registerStatus(program: Command, io: CliIo): void {
  withClientOptions(
    program
      .command('status')
      .description('health, version, uptime, sessions and spend today of a running gateway')
      .option('--json', 'print JSON'),
  ).action(async (options: ClientOptions & { json?: boolean }) => {
    const target = await resolveTarget(io, options);
    // Health answers 503 with the report when unhealthy: read the body whatever the status.
    const response = requestApi(target, '/health');
    // Spend and budget are asked for at the same time: three round trips in the time of one.
    const spendRead = Promise.all([
      callApi<{ total_usd: number }>(target, '/analytics/cost', { query: { period: 'today' } }),
      callApi<{ budget?: { daily_usd?: number | null } }>(target, '/config'),
    ]);
    spendRead.catch(() => undefined); // its failure is reported below, or moot when health fails first
    const health = await readHealth(await response, target.url);
    let spend: number | null = null;
    let budget: number | null = null;
    let spendNote = '';
    let refused: ApiCallError | null = null;
    try {
      const [cost, config] = await spendRead;
      spend = cost.total_usd;
      budget = config.budget?.daily_usd ?? null;
    } catch (err) {
      spendNote = (err as Error).message;
      // Health answers anyone; the rest needs the token. A refused token is the run's failure, said last.
      if (err instanceof ApiCallError && err.status === 401) refused = err;
    }
    if (options.json) {
      io.out(`${JSON.stringify({ url: target.url, health, spend_today_usd: spend, daily_budget_usd: budget })}\n`);
    } else {
      const colour = io.stdoutIsTTY;
      const tone = health.status === 'healthy' ? 'green' : health.status === 'degraded' ? 'yellow' : 'red';
      /** ` · <state> (<message>)` for a component that is not ok, else nothing. */
      const note = (name: string): string => {
        const component = health.components?.[name];
        if (component === undefined) return '';
        const state = typeof component === 'string' ? component : component.status;
        if (state === 'ok' || state === 'healthy') return '';
        const message = typeof component === 'string' || !component.message ? '' : ` (${component.message})`;
        return ` · ${style(colour, state === 'unknown' ? 'dim' : 'yellow', state)}${message}`;
      };
      const channels =
        Object.entries(health.active_channels)
          .map(([name, state]) => `${name} ${state}`)
          .join(', ') || 'none';
      const lines = [
        `Gatehouse at ${target.url}: ${style(colour, tone, health.status)}${
          health.error ? ` (${health.error.message})` : ''
        }`,
        `  version      ${health.version ?? 'unknown'}`,
        `  uptime       ${health.uptime_seconds === undefined ? 'unknown' : formatDuration(health.uptime_seconds)}`,
        `  provider     ${health.provider}${note('provider')}`,
        `  sessions     ${health.active_sessions} active, ${health.total_sessions} in all; ${health.ws_clients} WebSocket client(s)`,
        `  channels     ${channels}${note('channels')}`,
      ];
      // The components without a line of their own (store, bus), when they are not ok.
      for (const name of Object.keys(health.components ?? {})) {
        if (name !== 'provider' && name !== 'channels' && note(name))
          lines.push(`  ${name.padEnd(12)} ${note(name).slice(3)}`);
      }
      if (spend !== null) {
        lines.push(
          `  spend today  $${spend.toFixed(4)}${budget !== null ? ` of a $${budget.toFixed(2)} daily budget` : ' (no daily budget set)'}`,
        );
      } else {
        lines.push(`  spend today  unavailable: ${spendNote}`);
      }
      io.out(`${lines.join('\n')}\n`);
    }
    if (refused) {
      throw new CliError(
        `the gateway refused the token${target.tokenSource ? ` from ${target.tokenSource}` : ' (none given)'}: ` +
          `${refused.message}. Pass --token, set GATEHOUSE_TOKEN, or see gatehouse token show.`,
      );
    }
    if (health.status === 'unhealthy')
      throw new CliError(`the gateway is unhealthy${health.error ? `: ${health.error.message}` : ''}`);
  });
}
