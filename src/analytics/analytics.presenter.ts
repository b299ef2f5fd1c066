import type { UsageBreakdown, UsageGroup } from './analytics.repo.js';
import { bucketStartIso } from './analytics.periods.js';
import type { AnalyticsSummary, CostSummary, UsageStats, VariantAnalytics } from './analytics.service.js';

/**
 * USD from integer nano-USD. Sums stay integers until this single division,
 * so a total equals the sum of the recorded costs to the nano-dollar (and the
 * USD value is the double nearest to it).
 */
export function usdOf(nanoUsd: number): number {
  return nanoUsd / 1e9;
}

/** Wire name of each grouping key in a cost breakdown item (DECISIONS §9: the key under its own name). */
const GROUP_FIELD: Record<UsageGroup, string> = {
  model: 'model',
  channel: 'channel',
  session: 'session',
  day: 'day',
  agent: 'agent',
};

/** One cost breakdown item on the wire: the grouping key under its own name, then tokens and cost. */
export type CostBreakdownItemView = { [group: string]: string | number } & {
  input_tokens: number;
  output_tokens: number;
  cost_usd: number;
};

/** The Cost summary on the wire (spec: Cost summary). */
export interface CostSummaryView {
  period: string;
  total_usd: number;
  breakdown: CostBreakdownItemView[];
  daily_trend: Array<{ date: string; cost_usd: number }>;
}

/** The Usage statistics on the wire (spec: Usage statistics). */
export interface UsageStatsView {
  period: string;
  sessions: number;
  messages: number;
  tool_calls: number;
  tasks_completed: number;
  skills_used: number;
}

/** Per-model (per-channel, per-agent) figures of the variant response. */
export interface UsageGroupView {
  requests: number;
  tokens: number;
  cost_usd: number;
}

/** The Variant analytics response on the wire; `by_channel` (`by_agent`) only when grouped by channel (agent). */
export interface VariantAnalyticsView {
  period: string;
  total_messages: number;
  total_tokens: number;
  total_cost_usd: number;
  by_model: Record<string, UsageGroupView>;
  by_tool: Record<string, number>;
  by_channel?: Record<string, UsageGroupView>;
  by_agent?: Record<string, UsageGroupView>;
}

/** Presents a cost summary: breakdown most expensive first, `daily_trend` one row per day ascending. */
export function presentCostSummary(summary: CostSummary): CostSummaryView {
  const field = GROUP_FIELD[summary.groupBy];
  return {
    period: summary.period,
    total_usd: usdOf(summary.breakdown.totals.costNanoUsd),
    breakdown: summary.breakdown.groups.map((group) => ({
      [field]: group.key,
      input_tokens: group.inputTokens,
      output_tokens: group.outputTokens,
      cost_usd: usdOf(group.costNanoUsd),
    })),
    daily_trend: summary.dailyTrend.map((entry) => ({ date: entry.day, cost_usd: usdOf(entry.costNanoUsd) })),
  };
}

/** Presents usage statistics. */
export function presentUsageStats(stats: UsageStats): UsageStatsView {
  return {
    period: stats.period,
    sessions: stats.sessions,
    messages: stats.messages,
    tool_calls: stats.toolCalls,
    tasks_completed: stats.tasksCompleted,
    skills_used: stats.skillsUsed,
  };
}

/** Presents the variant analytics response; map keys keep the service's order (most expensive / most used first). */
export function presentVariant(analytics: VariantAnalytics): VariantAnalyticsView {
  const totals = analytics.byModel.totals;
  const view: VariantAnalyticsView = {
    period: analytics.period,
    total_messages: analytics.totalMessages,
    total_tokens: totals.inputTokens + totals.outputTokens,
    total_cost_usd: usdOf(totals.costNanoUsd),
    by_model: groupMap(analytics.byModel),
    by_tool: Object.fromEntries(analytics.byTool.map((entry) => [entry.tool, entry.count])),
  };
  if (analytics.byChannel) view.by_channel = groupMap(analytics.byChannel);
  if (analytics.byAgent) view.by_agent = groupMap(analytics.byAgent);
  return view;
}

/** Keys are data (a model named `__proto__` included): `fromEntries` defines own properties, never touching the prototype. */
function groupMap(breakdown: UsageBreakdown): Record<string, UsageGroupView> {
  return Object.fromEntries(
    breakdown.groups.map((group) => [
      group.key,
      { requests: group.requests, tokens: group.inputTokens + group.outputTokens, cost_usd: usdOf(group.costNanoUsd) },
    ]),
  );
}

/** One row of a summary breakdown on the wire. */
export type SummaryRowView = { [key: string]: string | number } & {
  requests: number;
  input_tokens: number;
  output_tokens: number;
  cost_usd: number;
};

/** The summary on the wire (GET /analytics/summary). */
export interface AnalyticsSummaryView {
  period: string;
  bucket: 'hour' | 'day';
  totals: {
    cost_usd: number;
    requests: number;
    input_tokens: number;
    output_tokens: number;
    tokens: number;
    sessions: number;
    messages: number;
    tool_calls: number;
    turns: number;
    tasks_completed: number;
    skills_used: number;
  };
  by_model: SummaryRowView[];
  by_channel: SummaryRowView[];
  by_session: SummaryRowView[];
  series: Array<{
    start: string;
    messages: number;
    turns: number;
    input_tokens: number;
    output_tokens: number;
    cost_usd: number;
    latency_p50_ms: number | null;
    latency_p99_ms: number | null;
  }>;
}

/** The rows of a breakdown, the key under `field`. */
function summaryRows(breakdown: UsageBreakdown, field: string): SummaryRowView[] {
  return breakdown.groups.map((group) => ({
    [field]: group.key,
    requests: group.requests,
    input_tokens: group.inputTokens,
    output_tokens: group.outputTokens,
    cost_usd: usdOf(group.costNanoUsd),
  }));
}

/** Presents the summary: totals, breakdowns most expensive first, the series ascending with zeros. */
export function presentSummary(summary: AnalyticsSummary): AnalyticsSummaryView {
  const totals = summary.byModel.totals;
  return {
    period: summary.period,
    bucket: summary.unit,
    totals: {
      cost_usd: usdOf(totals.costNanoUsd),
      requests: totals.requests,
      input_tokens: totals.inputTokens,
      output_tokens: totals.outputTokens,
      tokens: totals.inputTokens + totals.outputTokens,
      sessions: summary.usage.sessions,
      messages: summary.usage.messages,
      tool_calls: summary.usage.toolCalls,
      turns: summary.turns,
      tasks_completed: summary.usage.tasksCompleted,
      skills_used: summary.usage.skillsUsed,
    },
    by_model: summaryRows(summary.byModel, 'model'),
    by_channel: summaryRows(summary.byChannel, 'channel'),
    by_session: summaryRows(summary.bySession, 'session'),
    series: summary.series.map((point) => ({
      start: bucketStartIso(point.bucket),
      messages: point.messages,
      turns: point.turns?.turns ?? 0,
      input_tokens: point.usage.inputTokens,
      output_tokens: point.usage.outputTokens,
      cost_usd: usdOf(point.usage.costNanoUsd),
      latency_p50_ms: point.turns?.p50Ms ?? null,
      latency_p99_ms: point.turns?.p99Ms ?? null,
    })),
  };
}
