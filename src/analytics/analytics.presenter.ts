import type { UsageBreakdown, UsageGroup } from './analytics.repo.js';
import type { CostSummary, UsageStats, VariantAnalytics } from './analytics.service.js';

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
