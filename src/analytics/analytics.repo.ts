import { type Expression, type Kysely, type RawBuilder, type SelectQueryBuilder, type Transaction, sql } from 'kysely';
import type { Database } from '../store/index.js';
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

/** Restricts `created_at` of the query's table to `[since, until)`. */
function inRange<T extends 'usage_records' | 'messages', O>(
  query: SelectQueryBuilder<Database, T, O>,
  range: TimeRange,
): SelectQueryBuilder<Database, T, O> {
  const bounded = query.where(sql.ref<string>('created_at'), '<', range.until);
  return range.since === null ? bounded : bounded.where(sql.ref<string>('created_at'), '>=', range.since);
}

/** What usage can be grouped by: the cost breakdown's `group_by` (and the variant's `by_model`/`by_channel`). */
export type UsageGroup = 'model' | 'channel' | 'session' | 'day';

/** One group of usage records; token and cost sums are exact integers. */
export interface UsageGroupRow {
  /** The model, channel, session key or day (`YYYY-MM-DD`). */
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

const GROUP_KEY: Record<UsageGroup, () => RawBuilder<string>> = {
  model: () => sql<string>`${sql.ref('model')}`,
  channel: () => sql<string>`${sql.ref('channel')}`,
  session: () => sql<string>`${sql.ref('session_key')}`,
  day: () => dayOf('created_at'),
};

/**
 * Usage records of `range` grouped by `group`, summed in the database. The
 * grand totals come from the same statement (window sums over the groups),
 * so they always equal the sum of the groups even while turns are writing.
 */
export async function usageBreakdown(ex: Executor, range: TimeRange, group: UsageGroup): Promise<UsageBreakdown> {
  const key = GROUP_KEY[group]();
  const rows = await inRange(ex.selectFrom('usage_records'), range)
    .select([
      key.as('key'),
      countRows().as('requests'),
      sumInt(sql.ref('input_tokens')).as('input_tokens'),
      sumInt(sql.ref('output_tokens')).as('output_tokens'),
      sumInt(sql.ref('cost_nano_usd')).as('cost_nano_usd'),
      sql<number>`cast(sum(count(*)) over () as bigint)`.as('total_requests'),
      sql<number>`cast(sum(sum(input_tokens)) over () as bigint)`.as('total_input_tokens'),
      sql<number>`cast(sum(sum(output_tokens)) over () as bigint)`.as('total_output_tokens'),
      sql<number>`cast(sum(sum(cost_nano_usd)) over () as bigint)`.as('total_cost_nano_usd'),
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

/** Cost in nano-USD per UTC day (`YYYY-MM-DD`) of `range`; days without usage are absent (the caller zero-fills). */
export async function dailyCostNanoUsd(ex: Executor, range: TimeRange): Promise<Map<string, number>> {
  const day = dayOf('created_at');
  const rows = await inRange(ex.selectFrom('usage_records'), range)
    .select([day.as('day'), sumInt(sql.ref('cost_nano_usd')).as('cost_nano_usd')])
    .groupBy(day)
    .execute();
  return new Map(rows.map((row) => [row.day, Number(row.cost_nano_usd)]));
}

/** The UTC day (`YYYY-MM-DD`) of the earliest usage record before `until`, or null when there is none. */
export async function firstUsageDay(ex: Executor, until: string): Promise<string | null> {
  const row = await ex
    .selectFrom('usage_records')
    .select((eb) => eb.fn.min('created_at').as('first'))
    .where('created_at', '<', until)
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
 * Messages created in `range`: user + assistant, and tool results. Messages
 * of deleted sessions are gone (deletion removes them) and are not counted.
 */
export async function messageCounts(ex: Executor, range: TimeRange): Promise<MessageCounts> {
  const row = await inRange(ex.selectFrom('messages'), range)
    .select([
      sql<number>`cast(count(case when role in ('user', 'assistant') then 1 end) as bigint)`.as('messages'),
      sql<number>`cast(count(case when role = 'tool' then 1 end) as bigint)`.as('tool_calls'),
    ])
    .executeTakeFirstOrThrow();
  return { messages: Number(row.messages), toolCalls: Number(row.tool_calls) };
}

/** Tool results of `range` counted per tool name, most used first (equal counts by name). */
export async function toolCallCounts(ex: Executor, range: TimeRange): Promise<Array<{ tool: string; count: number }>> {
  const tool = sql<string>`coalesce(${sql.ref('name')}, 'unknown')`;
  const rows = await inRange(ex.selectFrom('messages'), range)
    .where('role', '=', 'tool')
    .select([tool.as('tool'), countRows().as('count')])
    .groupBy(tool)
    .execute();
  return rows
    .map((row) => ({ tool: row.tool, count: Number(row.count) }))
    .sort((a, b) => b.count - a.count || (a.tool < b.tool ? -1 : a.tool > b.tool ? 1 : 0));
}

/**
 * Live (not deleted) sessions active in `range`: created or last active in
 * it. `last_active` only moves forward, so a session with any activity in
 * the range up to now has `last_active` in it.
 */
export async function activeSessionCount(ex: Executor, range: TimeRange): Promise<number> {
  const within = (column: 'created_at' | 'last_active') =>
    range.since === null
      ? sql<boolean>`${sql.ref(column)} < ${range.until}`
      : sql<boolean>`(${sql.ref(column)} >= ${range.since} and ${sql.ref(column)} < ${range.until})`;
  const row = await ex
    .selectFrom('sessions')
    .select(countRows().as('n'))
    .where('deleted_at', 'is', null)
    .where(sql<boolean>`(${within('last_active')} or ${within('created_at')})`)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}
