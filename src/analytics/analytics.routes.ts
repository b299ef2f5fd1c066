import { z } from 'zod';
import { defineRoute, type Principal, type RouteDef } from '../http/route.js';
import { q } from '../http/validation.js';
import { isolatedPrincipal } from '../sessions/index.js';
import { COST_PERIODS, DEFAULT_PERIOD, STAT_PERIODS } from './analytics.periods.js';
import { presentCostSummary, presentSummary, presentUsageStats, presentVariant } from './analytics.presenter.js';
import {
  analyticsSummarySchema,
  costSummarySchema,
  usageStatsSchema,
  variantAnalyticsSchema,
} from './analytics.schema.js';
import type { SessionScope } from './analytics.repo.js';
import { type AnalyticsServiceDeps, createAnalyticsService } from './analytics.service.js';

/** `group_by` of GET /analytics/cost (spec: model, channel, session, day; DECISIONS §17: agent). */
const COST_GROUPS = ['model', 'channel', 'session', 'day', 'agent'] as const;
/** `group_by` of the variant GET /analytics (spec: model, tool, channel; DECISIONS §17: agent). */
const VARIANT_GROUPS = ['model', 'tool', 'channel', 'agent'] as const;

/** The filters every analytics route takes (DECISIONS §17, §18). */
const scopeQuery = {
  agent: z.string().min(1).max(64).optional().describe('Only the sessions of this agent (DECISIONS §17)'),
  principal: z
    .string()
    .min(1)
    .optional()
    .describe("Only this principal's sessions; a configured api principal always sees only its own (DECISIONS §18)"),
};

const costQuery = z.object({
  period: q.oneOf(COST_PERIODS, DEFAULT_PERIOD),
  group_by: q.oneOf(COST_GROUPS, 'model'),
  ...scopeQuery,
});
const usageQuery = z.object({ period: q.oneOf(STAT_PERIODS, DEFAULT_PERIOD), ...scopeQuery });
const summaryQuery = z.object({ period: q.oneOf(STAT_PERIODS, DEFAULT_PERIOD), ...scopeQuery });
const variantQuery = z.object({
  period: q.oneOf(STAT_PERIODS, DEFAULT_PERIOD),
  group_by: q.oneOf(VARIANT_GROUPS, 'model'),
  ...scopeQuery,
});

/**
 * Whose figures a caller gets (DECISIONS §18): a configured api principal
 * only its own sessions', whatever it asks (`?principal=` cannot widen it);
 * an admin, the default principal and a gateway without tokens every
 * session's, or one principal's with `?principal=` (narrowing shows them
 * nothing they could not see already). `?agent=` narrows either (§17).
 */
function scopeOf(
  principal: Principal,
  query: { agent?: string | undefined; principal?: string | undefined },
): SessionScope {
  const owner = isolatedPrincipal(principal) ?? query.principal;
  return {
    ...(owner !== undefined ? { principal: owner } : {}),
    ...(query.agent !== undefined ? { agent: query.agent } : {}),
  };
}

/**
 * Analytics API (spec: Analytics endpoints; DECISIONS §9): GET
 * /analytics/cost, /analytics/usage and the variant /analytics, and GET
 * /analytics/summary, everything a dashboard view shows in one request of
 * the small analytics rate group (ADR 0045). Permission
 * `api`, rate group `analytics` (DECISIONS §4). `period` defaults to `today`
 * on all four; `group_by` to `model`; `agent` and `principal` filter (see
 * `scopeOf`). Every figure is an aggregate computed by the database; a store
 * failure answers 503.
 */
export function analyticsRoutes(deps: AnalyticsServiceDeps): RouteDef[] {
  const service = createAnalyticsService(deps);
  return [
    defineRoute({
      method: 'GET',
      path: '/analytics/cost',
      permission: 'api',
      rateGroup: 'analytics',
      summary: 'Cost summary: total, breakdown by model, channel, session, day or agent, and the daily trend',
      tags: ['analytics'],
      query: costQuery,
      responses: [{ status: 200, description: 'The cost summary', schema: costSummarySchema }],
      handler: async (ctx, { query }) =>
        presentCostSummary(await service.costSummary(query.period, query.group_by, scopeOf(ctx.principal, query))),
    }),
    defineRoute({
      method: 'GET',
      path: '/analytics/usage',
      permission: 'api',
      rateGroup: 'analytics',
      summary: 'Usage statistics: active sessions, messages, tool calls, tasks completed, skills used',
      tags: ['analytics'],
      query: usageQuery,
      responses: [{ status: 200, description: 'The usage statistics', schema: usageStatsSchema }],
      handler: async (ctx, { query }) =>
        presentUsageStats(await service.usageStats(query.period, scopeOf(ctx.principal, query))),
    }),
    defineRoute({
      method: 'GET',
      path: '/analytics',
      permission: 'api',
      rateGroup: 'analytics',
      summary: 'Variant analytics: totals, per model, per tool (and per channel or agent)',
      tags: ['analytics'],
      query: variantQuery,
      responses: [
        {
          status: 200,
          description: 'Totals, per model, per tool (per channel or agent)',
          schema: variantAnalyticsSchema,
        },
      ],
      handler: async (ctx, { query }) =>
        presentVariant(await service.variant(query.period, query.group_by, scopeOf(ctx.principal, query))),
    }),
    defineRoute({
      method: 'GET',
      path: '/analytics/summary',
      permission: 'api',
      rateGroup: 'analytics',
      summary:
        'Everything a dashboard view shows in one request: totals, cost by model, channel and session, and the ' +
        'hourly (today) or daily series of messages, turns, tokens, cost and turn latency (p50, p99)',
      tags: ['analytics'],
      query: summaryQuery,
      responses: [{ status: 200, description: 'The summary of the period', schema: analyticsSummarySchema }],
      handler: async (ctx, { query }) =>
        presentSummary(await service.summary(query.period, scopeOf(ctx.principal, query))),
    }),
  ];
}
