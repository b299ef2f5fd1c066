import type { Command } from 'commander';
import { CliError, EXIT, type CliIo } from '../io.js';
import { withClientOptions } from '../options.js';
import { requestApi, resolveTarget, type CallOptions, type ClientOptions, type ClientTarget } from '../target.js';
import { style, type Tone } from '../terminal.js';
import { shorten } from './mcp.js';

/** How many deliveries of a subscription wait, failed for good (dead letters) or arrived. */
export interface SubscriptionStats {
  pending: number;
  failed: number;
  delivered: number;
}

/** One event subscription on the wire (GET /subscriptions, DECISIONS §20). */
export interface SubscriptionInfo {
  id: string;
  url: string;
  events: string[];
  description: string | null;
  enabled: boolean;
  created_at: string;
  updated_at: string;
  stats?: SubscriptionStats;
}

/** The answer of POST /subscriptions: the subscription and its signing secret, shown only in this answer. */
export interface CreatedSubscription extends SubscriptionInfo {
  secret: string;
}

/** The answer of POST /subscriptions/{id}/test: how the one signed attempt went. */
export interface TestResult {
  /** The test delivery's id (its webhook-id header). */
  delivery_id: string;
  /** True when the receiver answered 2xx in time. */
  ok: boolean;
  /** The receiver's HTTP status, or null when none came (refused, timed out, blocked). */
  status: number | null;
  /** Why the attempt failed (the answer's status line, a network error, a refused address), or null. */
  error: string | null;
  duration_ms: number;
}

/** The event types a subscription may name (`*` for all of them), as DECISIONS §20 lists them (for `--help`). */
export const EVENT_TYPES = [
  'message.received',
  'turn.completed',
  'turn.failed',
  'turn.waiting_approval',
  'session.created',
  'task.completed',
  'cron.fired',
  'channel.state_changed',
] as const;

/** What `gatehouse subscriptions list` says when there are none. */
export const NO_SUBSCRIPTIONS = 'No subscriptions: add one with gatehouse subscriptions add <url> --events <type,…>';

/** The line under a new subscription's secret. */
export const SECRET_WARNING =
  'Store this secret now: it is not shown again. Receivers verify each delivery with it (the webhook-signature header).';

/** The widest URL and events cells of the table; the rest is cut with `…` (`--json` has them whole). */
export const URL_WIDTH = 60;
export const EVENTS_WIDTH = 48;

const HEADERS = ['ID', 'URL', 'EVENTS', 'ENABLED', 'PENDING', 'FAILED'] as const;

/** `3`, or `-` when the gateway sent no counts. */
function countCell(stats: SubscriptionStats | undefined, key: keyof SubscriptionStats): string {
  return stats ? String(stats[key]) : '-';
}

/** The cells of one subscription's row, in the order of HEADERS (uncoloured, so they pad to their column). */
function cells(subscription: SubscriptionInfo): string[] {
  return [
    subscription.id,
    shorten(subscription.url, URL_WIDTH),
    shorten(subscription.events.join(','), EVENTS_WIDTH),
    subscription.enabled ? 'yes' : 'no',
    countCell(subscription.stats, 'pending'),
    countCell(subscription.stats, 'failed'),
  ];
}

/**
 * The subscriptions as a table (header, one row each; on a terminal a disabled row's `no` dimmed and a non-zero
 * failed count red), a note when some deliveries failed for good, or the line saying there are none.
 */
export function formatSubscriptions(subscriptions: readonly SubscriptionInfo[], colour: boolean): string {
  if (subscriptions.length === 0) return `${NO_SUBSCRIPTIONS}\n`;
  const rows = subscriptions.map(cells);
  const widths = HEADERS.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i]!.length)));
  const enabledColumn = HEADERS.indexOf('ENABLED');
  const failedColumn = HEADERS.indexOf('FAILED');
  /** The cells padded to their column, two spaces apart (the last one unpadded, trailing blanks dropped). */
  const line = (row: readonly string[], paint: (cell: string, i: number) => string = (cell) => cell): string =>
    row
      .map((cell, i) => paint(i === row.length - 1 ? cell : cell.padEnd(widths[i]!), i))
      .join('  ')
      .trimEnd();
  const out = [style(colour, 'bold', line(HEADERS))];
  for (const [index, row] of rows.entries()) {
    const subscription = subscriptions[index]!;
    out.push(
      line(row, (cell, i) => {
        if (i === enabledColumn) return style(colour, subscription.enabled ? 'green' : 'dim', cell);
        if (i === failedColumn && (subscription.stats?.failed ?? 0) > 0) return style(colour, 'red', cell);
        return cell;
      }),
    );
  }
  if (subscriptions.some((s) => (s.stats?.failed ?? 0) > 0)) {
    out.push(
      style(
        colour,
        'dim',
        'failed deliveries are dead letters: retry them on the dashboard (Subscriptions) or POST /deliveries/{id}/retry',
      ),
    );
  }
  return `${out.join('\n')}\n`;
}

/** What `add` prints: the new subscription, its secret once, and the warning that it is not shown again. */
export function formatCreated(created: CreatedSubscription, colour: boolean): string {
  const lines = [
    `Created subscription ${created.id}: ${created.url}`,
    `  events: ${created.events.join(', ')}`,
    ...(created.description ? [`  description: ${created.description}`] : []),
    ...(created.enabled ? [] : ['  disabled: nothing is sent until it is enabled']),
    '',
    `Secret: ${style(colour, 'bold', created.secret)}`,
    style(colour, 'yellow', SECRET_WARNING),
  ];
  return `${lines.join('\n')}\n`;
}

/** What `test` prints: whether the signed test delivery arrived, the receiver's status, the time and the error. */
export function formatTestResult(id: string, result: TestResult, colour: boolean): string {
  const tone: Tone = result.ok ? 'green' : 'red';
  const verdict = style(colour, tone, result.ok ? 'delivered' : 'failed');
  const facts = [
    result.status === null ? 'no answer' : `HTTP ${result.status}`,
    `${Math.round(result.duration_ms)} ms`,
  ];
  // The error of a plain non-2xx answer says no more than its status.
  const said = result.error === null || result.error === `HTTP ${result.status}`;
  const error = said ? '' : `\n  error: ${shorten(result.error!, 300)}`;
  return `Test delivery of ${id}: ${verdict} (${facts.join(', ')})${error}\n`;
}

/** `a, b,,c ,a` → `['a', 'b', 'c']`: the event types of `--events`, trimmed, without blanks or repeats. */
export function parseEvents(text: string): string[] {
  return [
    ...new Set(
      text
        .split(',')
        .map((word) => word.trim())
        .filter(Boolean),
    ),
  ];
}

/** The error envelope's parts, as far as these commands read them. */
interface Envelope {
  error?: { code?: string; message?: string; request_id?: string; details?: unknown };
}

/** The lines of an envelope's details: each field problem `path: message`, or a `reason` string. */
function detailLines(details: unknown): string[] {
  if (Array.isArray(details)) {
    return details.flatMap((issue: unknown) => {
      if (!issue || typeof issue !== 'object') return [];
      const { path, message } = issue as { path?: unknown; message?: unknown };
      if (typeof message !== 'string') return [];
      const field = typeof path === 'string' ? path.replace(/^body\.?/, '') : '';
      return [field ? `${field}: ${message}` : message];
    });
  }
  if (details && typeof details === 'object') {
    const { reason } = details as { reason?: unknown };
    if (typeof reason === 'string') return [reason];
  }
  return [];
}

/** Options of `call`: those of `callApi`, plus what a 404 and a 400 are about. */
interface SubscriptionCall extends CallOptions {
  /** The subscription the path names: a 404 says no subscription has this id. */
  id?: string;
  /** What a 400 prefixes its reason with (`not added`). */
  refused?: string;
}

/**
 * Calls the API like `callApi`, but a 400 says what was refused with the gateway's reason and each field problem
 * of the details (a refused URL's reason, an unknown event type), and a 404 names the subscription and the
 * command that lists them.
 */
async function call<T>(target: ClientTarget, path: string, options: SubscriptionCall = {}): Promise<T> {
  const response = await requestApi(target, path, options);
  const text = await response.text();
  let parsed: unknown = null;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch {
    parsed = null;
  }
  if (response.ok) return parsed as T;
  const error = (parsed as Envelope | null)?.error ?? {};
  const requestId = error.request_id ? ` [request ${error.request_id}]` : '';
  const message = error.message ?? response.statusText;
  if (response.status === 404 && options.id !== undefined) {
    throw new CliError(
      `no subscription has the id ${JSON.stringify(options.id)} (gatehouse subscriptions list shows them)`,
    );
  }
  if (response.status === 400) {
    // A problem the message already says (`subscription URL refused: loopback`) is not repeated under it.
    const reasons = detailLines(error.details).filter((line) => !message.includes(line.replace(/^[\w.]+: /, '')));
    const more = reasons.map((line) => `\n  ${line}`).join('');
    throw new CliError(`${options.refused ?? 'refused'}: ${message}${requestId}${more}`);
  }
  const code = error.code ?? `HTTP_${response.status}`;
  const hint =
    response.status === 401
      ? ' (pass --token or set GATEHOUSE_TOKEN)'
      : response.status === 403
        ? ' (this needs an admin token)'
        : '';
  throw new CliError(`${code}: ${message}${hint}${requestId}`);
}

/** How many single reads `withStats` makes at once. */
const STATS_CONCURRENCY = 8;

/**
 * The subscriptions with their delivery counts: the list answers none, so each one without `stats` is read on its
 * own (GET /subscriptions/{id}), a few at a time. One that cannot be read (deleted meanwhile) stays as listed.
 */
async function withStats(target: ClientTarget, items: readonly SubscriptionInfo[]): Promise<SubscriptionInfo[]> {
  const out = [...items];
  const missing = out.flatMap((item, index) => (item.stats ? [] : [index]));
  for (let start = 0; start < missing.length; start += STATS_CONCURRENCY) {
    await Promise.all(
      missing.slice(start, start + STATS_CONCURRENCY).map(async (index) => {
        const item = out[index]!;
        try {
          const one = await call<SubscriptionInfo>(target, `/subscriptions/${encodeURIComponent(item.id)}`);
          if (one.stats) out[index] = { ...item, stats: one.stats };
        } catch {
          // As listed, its counts shown as `-`.
        }
      }),
    );
  }
  return out;
}

/**
 * `gatehouse subscriptions list|add|test`: the event subscriptions (signed outbound webhooks, DECISIONS §20) of a
 * running gateway (admin token). `add` prints the signing secret once; `test` sends one signed test delivery and
 * exits 1 when it did not arrive.
 */
export function registerSubscriptions(program: Command, io: CliIo): void {
  const subscriptions = program
    .command('subscriptions')
    .description('the event subscriptions (signed outbound webhooks) of a running gateway (needs an admin token)');
  withClientOptions(
    subscriptions
      .command('list', { isDefault: true })
      .description('each subscription: id, URL, events, enabled, pending and failed (dead-letter) deliveries')
      .option('--json', 'print JSON'),
  ).action(async (options: ClientOptions & { json?: boolean }) => {
    const target = await resolveTarget(io, options);
    const body = await call<{ items: SubscriptionInfo[] }>(target, '/subscriptions');
    const items = await withStats(target, body.items);
    io.out(options.json ? `${JSON.stringify({ ...body, items })}\n` : formatSubscriptions(items, io.stdoutIsTTY));
  });
  const add = withClientOptions(
    subscriptions
      .command('add')
      .description('subscribe a URL to events; prints the signing secret, once')
      .argument('<url>', 'where the deliveries are POSTed (https, a public address unless the gateway allows others)')
      .requiredOption('--events <types>', `comma-separated event types, or * for all: ${EVENT_TYPES.join(', ')}`)
      .option('--description <text>', 'a note on what the receiver is')
      .option('--json', 'print JSON (the secret included)'),
  );
  add.action(async (url: string, options: ClientOptions & { events: string; description?: string; json?: boolean }) => {
    const events = parseEvents(options.events);
    if (events.length === 0) {
      add.error('error: --events needs at least one event type (or * for all)', { exitCode: EXIT.usage });
    }
    const target = await resolveTarget(io, options);
    const body: Record<string, unknown> = { url, events };
    if (options.description !== undefined) body.description = options.description;
    const created = await call<CreatedSubscription>(target, '/subscriptions', {
      method: 'POST',
      body,
      refused: 'not added',
    });
    io.out(options.json ? `${JSON.stringify(created)}\n` : formatCreated(created, io.stdoutIsTTY));
  });
  withClientOptions(
    subscriptions
      .command('test')
      .description('send one signed test delivery now and print how it went (exit 1 when it failed)')
      .argument('<id>', 'the subscription (gatehouse subscriptions list shows the ids)')
      .option('--json', 'print JSON'),
  ).action(async (id: string, options: ClientOptions & { json?: boolean }) => {
    const target = await resolveTarget(io, options);
    const result = await call<TestResult>(target, `/subscriptions/${encodeURIComponent(id)}/test`, {
      method: 'POST',
      id,
      timeoutMs: 60_000,
    });
    io.out(options.json ? `${JSON.stringify(result)}\n` : formatTestResult(id, result, io.stdoutIsTTY));
    if (!result.ok) throw new CliError(`the test delivery to subscription ${id} failed`);
  });
}
