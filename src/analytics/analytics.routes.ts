import { z } from 'zod';
import { defineRoute, type RouteDef } from '../http/route.js';
import { COST_PERIODS, DEFAULT_PERIOD, STAT_PERIODS } from './analytics.periods.js';
import { presentCostSummary, presentUsageStats, presentVariant } from './analytics.presenter.js';
import { type AnalyticsServiceDeps, createAnalyticsService } from './analytics.service.js';

/** `group_by` of GET /analytics/cost (spec: model, channel, session, day). */
const COST_GROUPS = ['model', 'channel', 'session', 'day'] as const;
/** `group_by` of the variant GET /analytics (spec: model, tool, channel). */
const VARIANT_GROUPS = ['model', 'tool', 'channel'] as const;

/** A closed set of query values; absent → `fallback`; anything else → 400 naming the allowed values. */
function oneOf<const T extends readonly [string, ...string[]]>(values: T, fallback: T[number]) {
  return z
    .enum(values, { message: `must be one of ${values.join(', ')}` })
    .optional()
    .transform((v) => v ?? fallback);
}

const costQuery = z.object({ period: oneOf(COST_PERIODS, DEFAULT_PERIOD), group_by: oneOf(COST_GROUPS, 'model') });
const usageQuery = z.object({ period: oneOf(STAT_PERIODS, DEFAULT_PERIOD) });
const variantQuery = z.object({
  period: oneOf(STAT_PERIODS, DEFAULT_PERIOD),
  group_by: oneOf(VARIANT_GROUPS, 'model'),
});

/**
 * Analytics API (spec: Analytics endpoints; DECISIONS §9): GET
 * /analytics/cost, /analytics/usage and the variant /analytics. Permission
 * `api`, rate group `analytics` (DECISIONS §4). `period` defaults to `today`
 * on all three; `group_by` to `model`. Every figure is an aggregate computed by
 * the database; a store failure answers 503.
 */
export function analyticsRoutes(deps: AnalyticsServiceDeps): RouteDef[] {
  const service = createAnalyticsService(deps);
  return [
    defineRoute({
      method: 'GET',
      path: '/analytics/cost',
      permission: 'api',
      rateGroup: 'analytics',
      summary: 'Cost summary: total, breakdown by model, channel, session or day, and the daily trend',
      tags: ['analytics'],
      query: costQuery,
      handler: async (_ctx, { query }) => presentCostSummary(await service.costSummary(query.period, query.group_by)),
    }),
    defineRoute({
      method: 'GET',
      path: '/analytics/usage',
      permission: 'api',
      rateGroup: 'analytics',
      summary: 'Usage statistics: active sessions, messages, tool calls, tasks completed, skills used',
      tags: ['analytics'],
      query: usageQuery,
      handler: async (_ctx, { query }) => presentUsageStats(await service.usageStats(query.period)),
    }),
    defineRoute({
      method: 'GET',
      path: '/analytics',
      permission: 'api',
      rateGroup: 'analytics',
      summary: 'Variant analytics: totals, per model, per tool (and per channel)',
      tags: ['analytics'],
      query: variantQuery,
      handler: async (_ctx, { query }) => presentVariant(await service.variant(query.period, query.group_by)),
    }),
  ];
}
