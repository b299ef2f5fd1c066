import { type Expression, type Kysely, type RawBuilder, type SelectQueryBuilder, type Transaction, sql } from 'kysely';
import type { Database } from '../store/index.js';
import { endedTurnsWithSessions, turnLatencyMs } from '../turns/index.js';
import type { TimeRange } from './analytics.periods.js';

/** `store.db` or a transaction: every query here is a read that composes inside the caller's transaction. */
type Executor = Kysely<Database> | Transaction<Database>;

/*
 * SQL fragments shared by the queries below: the one place where the two
 * dialects could differ. Both forms are portable as written:
 * - timestamps are ISO 8601 UTC text, so `substr(created_at, 1, 10)` is the
 *   UTC day on SQLite and PostgreSQL alike (no date functions needed);
 * - `cast(… as bigint)` keeps sums integers: PostgreSQL's `sum(bigint)` is
 *   `numeric` (a string in the driver) and `count(*)` is `bigint`, both
 *   parsed to exact JS numbers below 2^53 once cast; SQLite sums integers.
 */

/** The UTC day (`YYYY-MM-DD`) of an ISO timestamp column. */
function dayOf(column: string): RawBuilder<string> {
  return sql<string>`substr(${sql.ref(column)}, 1, 10)`;
}

/** `sum(expr)` as an integer, 0 when no row matches. */
function sumInt(expr: Expression<unknown> | RawBuilder<unknown>): RawBuilder<number> {
  return sql<number>`cast(coalesce(sum(${expr}), 0) as bigint)`;
}

/** `count(*)` as an integer. */
function countRows(): RawBuilder<number> {
  return sql<number>`cast(count(*) as bigint)`;
}

/**
 * Whose figures count (DECISIONS §17, §18): the sessions of one principal,
 * of one agent, or both. Empty: every session, and rows of no session too.
 * Every per-session figure below (usage, messages, tool calls, sessions)
 * honours it through `sessions.key = <table>.session_key`.
 */
export interface SessionScope {
  /** Only sessions owned by this principal (`sessions.principal`). */
  principal?: string;
  /** Only sessions run by this agent (`sessions.agent`). */
  agent?: string;
}

/** True when `scope` restricts anything. */
export function isScoped(scope: SessionScope): boolean {
  return scope.principal !== undefined || scope.agent !== undefined;
}

/** The condition on the joined `sessions` row that `scope` asks for; null when it asks for none. */
function sessionCondition(scope: SessionScope): RawBuilder<boolean> | null {
  const parts: Array<RawBuilder<boolean>> = [];
  if (scope.principal !== undefined) parts.push(sql<boolean>`${sql.ref('sessions.principal')} = ${scope.principal}`);
  if (scope.agent !== undefined) parts.push(sql<boolean>`${sql.ref('sessions.agent')} = ${scope.agent}`);
  return parts.length === 0 ? null : sql<boolean>`(${sql.join(parts, sql` and `)})`;
}

/** Restricts `column` (an ISO timestamp) to `[since, until)` and the joined session to `scope`. */
function within<DB, TB extends keyof DB, O>(
  query: SelectQueryBuilder<DB, TB, O>,
  column: string,
  range: TimeRange,
  scope: SessionScope,
): SelectQueryBuilder<DB, TB, O> {
  let filtered = query.where(sql<boolean>`${sql.ref(column)} < ${range.until}`);
  if (range.since !== null) filtered = filtered.where(sql<boolean>`${sql.ref(column)} >= ${range.since}`);
  const condition = sessionCondition(scope);
  return condition === null ? filtered : filtered.where(condition);
}

/*
 * Usage records and messages are read joined to their session: a `left join`
 * on the session's primary key, so each row meets at most one session and
 * sums are unchanged (both planners may drop the join when nothing of
 * `sessions` is used). The tables share column names (`created_at`,
 * `channel`), so every column is qualified. A scope's condition on
 * `sessions` leaves out rows without a session. Plain joins and `=`
 * conditions on bound text values: portable as they stand.
 */

/** Usage records of `range` and `scope`, each with its session's columns. */
function usageRows(ex: Executor, range: TimeRange, scope: SessionScope) {
  const joined = ex.selectFrom('usage_records').leftJoin('sessions', 'sessions.key', 'usage_records.session_key');
  return within(joined, 'usage_records.created_at', range, scope);
}

/** Messages of `range` and `scope`, each with its session's columns. */
function messageRows(ex: Executor, range: TimeRange, scope: SessionScope) {
  const joined = ex.selectFrom('messages').leftJoin('sessions', 'sessions.key', 'messages.session_key');
  return within(joined, 'messages.created_at', range, scope);
}

/** What usage can be grouped by: the cost breakdown's `group_by` (and the variant's `by_model`/`by_channel`/`by_agent`). */
export type UsageGroup = 'model' | 'channel' | 'session' | 'day' | 'agent';

/** One group of usage records; token and cost sums are exact integers. */
export interface UsageGroupRow {
  /** The model, channel, session key, day (`YYYY-MM-DD`) or agent. */
  key: string;
  /** Model calls (usage records) in the group. */
  requests: number;
  inputTokens: number;
  outputTokens: number;
  /** Cost in nano-USD (1e-9 USD). */
  costNanoUsd: number;
}

/** The totals over every usage record of a range. */
export type UsageTotals = Omit<UsageGroupRow, 'key'>;

/** Usage of a range grouped one way, with the grand totals of the same snapshot. */
export interface UsageBreakdown {
  /** Most expensive first; equal costs by key (code-unit order, the same on both databases). */
  groups: UsageGroupRow[];
  totals: UsageTotals;
}

/**
 * The grouping expressions, over `usageRows`. `channel` is the usage
 * record's (the channel the model call was made for), not the session's. A
 * usage record whose session has no row (none is ever removed, so only data
 * written without one) counts under the agent `unknown`, so the groups still
 * add up to the totals. The literal is written into the SQL text, not bound:
 * PostgreSQL matches the select list to the `group by` expression by text.
 */
const GROUP_KEY: Record<UsageGroup, () => RawBuilder<string>> = {
  model: () => sql<string>`${sql.ref('usage_records.model')}`,
  channel: () => sql<string>`${sql.ref('usage_records.channel')}`,
  session: () => sql<string>`${sql.ref('usage_records.session_key')}`,
  day: () => dayOf('usage_records.created_at'),
  agent: () => sql<string>`coalesce(${sql.ref('sessions.agent')}, 'unknown')`,
};

/**
 * Usage records of `range` and `scope` grouped by `group`, summed in the
 * database. The grand totals come from the same statement (window sums over
 * the groups), so they always equal the sum of the groups even while turns
 * are writing.
 */
export async function usageBreakdown(
  ex: Executor,
  range: TimeRange,
  group: UsageGroup,
  scope: SessionScope = {},
): Promise<UsageBreakdown> {
  const key = GROUP_KEY[group]();
  const input = sql.ref('usage_records.input_tokens');
  const output = sql.ref('usage_records.output_tokens');
  const cost = sql.ref('usage_records.cost_nano_usd');
  const rows = await usageRows(ex, range, scope)
    .select([
      key.as('key'),
      countRows().as('requests'),
      sumInt(input).as('input_tokens'),
      sumInt(output).as('output_tokens'),
      sumInt(cost).as('cost_nano_usd'),
      sql<number>`cast(sum(count(*)) over () as bigint)`.as('total_requests'),
      sql<number>`cast(sum(sum(${input})) over () as bigint)`.as('total_input_tokens'),
      sql<number>`cast(sum(sum(${output})) over () as bigint)`.as('total_output_tokens'),
      sql<number>`cast(sum(sum(${cost})) over () as bigint)`.as('total_cost_nano_usd'),
    ])
    .groupBy(key)
    .execute();
  const groups = rows
    .map((row) => ({
      key: row.key,
      requests: Number(row.requests),
      inputTokens: Number(row.input_tokens),
      outputTokens: Number(row.output_tokens),
      costNanoUsd: Number(row.cost_nano_usd),
    }))
    .sort((a, b) => b.costNanoUsd - a.costNanoUsd || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  const first = rows[0];
  const totals: UsageTotals = first
    ? {
        requests: Number(first.total_requests),
        inputTokens: Number(first.total_input_tokens),
        outputTokens: Number(first.total_output_tokens),
        costNanoUsd: Number(first.total_cost_nano_usd),
      }
    : { requests: 0, inputTokens: 0, outputTokens: 0, costNanoUsd: 0 };
  return { groups, totals };
}

/** Cost in nano-USD per UTC day (`YYYY-MM-DD`) of `range` and `scope`; days without usage are absent (the caller zero-fills). */
export async function dailyCostNanoUsd(
  ex: Executor,
  range: TimeRange,
  scope: SessionScope = {},
): Promise<Map<string, number>> {
  const day = dayOf('usage_records.created_at');
  const rows = await usageRows(ex, range, scope)
    .select([day.as('day'), sumInt(sql.ref('usage_records.cost_nano_usd')).as('cost_nano_usd')])
    .groupBy(day)
    .execute();
  return new Map(rows.map((row) => [row.day, Number(row.cost_nano_usd)]));
}

/** The UTC day (`YYYY-MM-DD`) of the earliest usage record of `scope` before `until`, or null when there is none. */
export async function firstUsageDay(ex: Executor, until: string, scope: SessionScope = {}): Promise<string | null> {
  const row = await usageRows(ex, { since: null, until }, scope)
    .select(sql<string | null>`min(${sql.ref('usage_records.created_at')})`.as('first'))
    .executeTakeFirst();
  const first = row?.first;
  return typeof first === 'string' ? first.slice(0, 10) : null;
}

/** Conversation counts of a range. */
export interface MessageCounts {
  /** User and assistant messages. */
  messages: number;
  /** Tool results (role `tool`): one per executed tool call. */
  toolCalls: number;
}

/**
 * Messages created in `range` in sessions of `scope`: user + assistant, and
 * tool results. Messages of deleted sessions are gone (deletion removes
 * them) and are not counted.
 */
export async function messageCounts(ex: Executor, range: TimeRange, scope: SessionScope = {}): Promise<MessageCounts> {
  const role = sql.ref('messages.role');
  const row = await messageRows(ex, range, scope)
    .select([
      sql<number>`cast(count(case when ${role} in ('user', 'assistant') then 1 end) as bigint)`.as('messages'),
      sql<number>`cast(count(case when ${role} = 'tool' then 1 end) as bigint)`.as('tool_calls'),
    ])
    .executeTakeFirstOrThrow();
  return { messages: Number(row.messages), toolCalls: Number(row.tool_calls) };
}

/** Tool results of `range` in sessions of `scope` counted per tool name, most used first (equal counts by name). */
export async function toolCallCounts(
  ex: Executor,
  range: TimeRange,
  scope: SessionScope = {},
): Promise<Array<{ tool: string; count: number }>> {
  const tool = sql<string>`coalesce(${sql.ref('messages.name')}, 'unknown')`;
  const rows = await messageRows(ex, range, scope)
    .where(sql<boolean>`${sql.ref('messages.role')} = 'tool'`)
    .select([tool.as('tool'), countRows().as('count')])
    .groupBy(tool)
    .execute();
  return rows
    .map((row) => ({ tool: row.tool, count: Number(row.count) }))
    .sort((a, b) => b.count - a.count || (a.tool < b.tool ? -1 : a.tool > b.tool ? 1 : 0));
}

/**
 * Live (not deleted) sessions of `scope` active in `range`: created or last
 * active in it. `last_active` only moves forward, so a session with any
 * activity in the range up to now has `last_active` in it.
 */
export async function activeSessionCount(ex: Executor, range: TimeRange, scope: SessionScope = {}): Promise<number> {
  const inRange = (column: 'sessions.created_at' | 'sessions.last_active') =>
    range.since === null
      ? sql<boolean>`${sql.ref(column)} < ${range.until}`
      : sql<boolean>`(${sql.ref(column)} >= ${range.since} and ${sql.ref(column)} < ${range.until})`;
  const condition = sessionCondition(scope);
  let query = ex
    .selectFrom('sessions')
    .select(countRows().as('n'))
    .where('deleted_at', 'is', null)
    .where(sql<boolean>`(${inRange('sessions.last_active')} or ${inRange('sessions.created_at')})`);
  if (condition !== null) query = query.where(condition);
  const row = await query.executeTakeFirstOrThrow();
  return Number(row.n);
}

/**
 * Tasks completed since `sinceIso` whose turn ran in a session of `scope`
 * (`sessions.key = tasks.session_key`; the runner's `gateway:task:<id>`
 * session, owned by the task's principal and run by the agent its binding
 * picks). Only for a scoped answer: tasks have no agent of their own, and a
 * task finished by a person (never run, no session) is reachable through no
 * session, so it is not counted here, while the unscoped figure (the tasks
 * capability's own counter) counts every completed task. Reads the tasks
 * capability's table (migration 008_tasks) as the analytics read the
 * sessions': read-only, one aggregate.
 */
export async function tasksCompletedInScope(ex: Executor, sinceIso: string, scope: SessionScope): Promise<number> {
  const condition = sessionCondition(scope);
  let query = ex
    .selectFrom('tasks')
    .innerJoin('sessions', 'sessions.key', 'tasks.session_key')
    .select(countRows().as('n'))
    .where('tasks.status', '=', 'completed')
    .where('tasks.finished_at', '>=', sinceIso);
  if (condition !== null) query = query.where(condition);
  const row = await query.executeTakeFirstOrThrow();
  return Number(row.n);
}

/** The width of one point of a time series: an hour (period `today`) or a UTC day. */
export type BucketUnit = 'hour' | 'day';

/**
 * The bucket of an ISO timestamp column: `YYYY-MM-DDTHH` (hour) or `YYYY-MM-DD` (day). The length is
 * written into the SQL text (PostgreSQL matches the select list to the `group by` expression by text).
 */
function bucketOf(column: string, unit: BucketUnit): RawBuilder<string> {
  return unit === 'hour' ? sql<string>`substr(${sql.ref(column)}, 1, 13)` : dayOf(column);
}

/** Usage of one bucket; sums are exact integers. */
export interface UsageBucket {
  inputTokens: number;
  outputTokens: number;
  costNanoUsd: number;
}

/** Usage records of `range` and `scope` summed per bucket; buckets without usage are absent (the caller zero-fills). */
export async function usageSeries(
  ex: Executor,
  range: TimeRange,
  unit: BucketUnit,
  scope: SessionScope = {},
): Promise<Map<string, UsageBucket>> {
  const bucket = bucketOf('usage_records.created_at', unit);
  const rows = await usageRows(ex, range, scope)
    .select([
      bucket.as('bucket'),
      sumInt(sql.ref('usage_records.input_tokens')).as('input_tokens'),
      sumInt(sql.ref('usage_records.output_tokens')).as('output_tokens'),
      sumInt(sql.ref('usage_records.cost_nano_usd')).as('cost_nano_usd'),
    ])
    .groupBy(bucket)
    .execute();
  return new Map(
    rows.map((row) => [
      row.bucket,
      {
        inputTokens: Number(row.input_tokens),
        outputTokens: Number(row.output_tokens),
        costNanoUsd: Number(row.cost_nano_usd),
      },
    ]),
  );
}

/** User and assistant messages of `range` and `scope` per bucket (as `messageCounts`); empty buckets are absent. */
export async function messageSeries(
  ex: Executor,
  range: TimeRange,
  unit: BucketUnit,
  scope: SessionScope = {},
): Promise<Map<string, number>> {
  const bucket = bucketOf('messages.created_at', unit);
  const rows = await messageRows(ex, range, scope)
    .where(sql<boolean>`${sql.ref('messages.role')} in ('user', 'assistant')`)
    .select([bucket.as('bucket'), countRows().as('n')])
    .groupBy(bucket)
    .execute();
  return new Map(rows.map((row) => [row.bucket, Number(row.n)]));
}

/** Which SQL dialect a query is written for: the one place the turn latency differs between the databases. */
export type Dialect = 'sqlite' | 'postgres';

/** The turns that ended in one bucket and how long they took, from acceptance to their end. */
export interface TurnBucket {
  turns: number;
  /** Median latency in ms (nearest rank). */
  p50Ms: number;
  /** 99th percentile latency in ms (nearest rank: the slowest turn of a bucket with fewer than 100). */
  p99Ms: number;
}

/** Turns of `scope` that ended (`finished_at`) in `range`, with their session's columns. */
function finishedTurns(ex: Executor, range: TimeRange, scope: SessionScope) {
  return within(endedTurnsWithSessions(ex), 'turns.finished_at', range, scope);
}

/**
 * Turns of `range` and `scope` that ended, per bucket of their end, with the p50 and p99 of their latency
 * (accepted → finished, so a turn that waited for an approval counts its wait). The percentiles are nearest
 * ranks computed by the database: each turn is numbered within its bucket by latency (`row_number`), and a
 * percentile p is the smallest latency whose number reaches p % of the bucket's count (integer arithmetic,
 * the same on both databases). Empty buckets are absent.
 */
export async function turnSeries(
  ex: Executor,
  dialect: Dialect,
  range: TimeRange,
  unit: BucketUnit,
  scope: SessionScope = {},
): Promise<Map<string, TurnBucket>> {
  const durations = finishedTurns(ex, range, scope).select([
    bucketOf('turns.finished_at', unit).as('bucket'),
    turnLatencyMs(dialect).as('ms'),
  ]);
  const ranked = ex
    .selectFrom(durations.as('d'))
    .select([
      sql<string>`${sql.ref('d.bucket')}`.as('bucket'),
      sql<number>`${sql.ref('d.ms')}`.as('ms'),
      sql<number>`row_number() over (partition by ${sql.ref('d.bucket')} order by ${sql.ref('d.ms')})`.as('rn'),
      sql<number>`count(*) over (partition by ${sql.ref('d.bucket')})`.as('n'),
    ]);
  const bucket = sql<string>`${sql.ref('r.bucket')}`;
  const percentile = (p: number) =>
    sql<number>`min(case when ${sql.ref('r.rn')} * 100 >= ${sql.ref('r.n')} * ${sql.lit(p)} then ${sql.ref('r.ms')} end)`;
  const rows = await ex
    .selectFrom(ranked.as('r'))
    .select([bucket.as('bucket'), countRows().as('turns'), percentile(50).as('p50'), percentile(99).as('p99')])
    .groupBy(bucket)
    .execute();
  return new Map(
    rows.map((row) => [
      row.bucket,
      { turns: Number(row.turns), p50Ms: Math.max(0, Number(row.p50)), p99Ms: Math.max(0, Number(row.p99)) },
    ]),
  );
}

/** Turns of `range` and `scope` that ended (`finished_at` in the range). */
export async function finishedTurnCount(ex: Executor, range: TimeRange, scope: SessionScope = {}): Promise<number> {
  const row = await finishedTurns(ex, range, scope).select(countRows().as('n')).executeTakeFirstOrThrow();
  return Number(row.n);
}
