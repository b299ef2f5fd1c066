import { z } from 'zod';
import { defineRoute, type RouteDef } from '../http/route.js';
import { q } from '../http/validation.js';
import { COST_PERIODS, DEFAULT_PERIOD, STAT_PERIODS } from './analytics.periods.js';
import { presentCostSummary, presentUsageStats, presentVariant } from './analytics.presenter.js';
import { costSummarySchema, usageStatsSchema, variantAnalyticsSchema } from './analytics.schema.js';
import { type AnalyticsServiceDeps, createAnalyticsService } from './analytics.service.js';

/** `group_by` of GET /analytics/cost (spec: model, channel, session, day). */
const COST_GROUPS = ['model', 'channel', 'session', 'day'] as const;
/** `group_by` of the variant GET /analytics (spec: model, tool, channel). */
const VARIANT_GROUPS = ['model', 'tool', 'channel'] as const;

const costQuery = z.object({ period: q.oneOf(COST_PERIODS, DEFAULT_PERIOD), group_by: q.oneOf(COST_GROUPS, 'model') });
const usageQuery = z.object({ period: q.oneOf(STAT_PERIODS, DEFAULT_PERIOD) });
const variantQuery = z.object({
  period: q.oneOf(STAT_PERIODS, DEFAULT_PERIOD),
  group_by: q.oneOf(VARIANT_GROUPS, 'model'),
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
      responses: [{ status: 200, description: 'The cost summary', schema: costSummarySchema }],
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
      responses: [{ status: 200, description: 'The usage statistics', schema: usageStatsSchema }],
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
      responses: [
        { status: 200, description: 'Totals, per model, per tool (per channel)', schema: variantAnalyticsSchema },
      ],
      handler: async (_ctx, { query }) => presentVariant(await service.variant(query.period, query.group_by)),
    }),
  ];
}
