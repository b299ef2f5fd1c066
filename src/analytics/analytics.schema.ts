import { z } from 'zod';

/**
 * The wire shapes of the analytics answers (spec: Analytics endpoints;
 * DECISIONS §9), exactly as `analytics.presenter.ts` writes them. They
 * describe responses in the OpenAPI document (ADR 0016).
 */

const tokens = z.number().int().min(0);
const usd = z.number().min(0).meta({ description: 'US dollars' });
const period = z.enum(['today', 'week', 'month', 'all']);

/** One cost breakdown item: the grouping key under its own name (the one `group_by` names), tokens, cost. */
const costBreakdownItem = z.object({
  model: z.string().optional(),
  channel: z.string().optional(),
  session: z.string().optional(),
  agent: z.string().optional(),
  day: z.string().optional().meta({ description: 'YYYY-MM-DD (UTC)' }),
  input_tokens: tokens,
  output_tokens: tokens,
  cost_usd: usd,
});

/** GET /analytics/cost. */
export const costSummarySchema = z
  .object({
    period,
    total_usd: usd,
    breakdown: z.array(costBreakdownItem).meta({ description: 'Most expensive first' }),
    daily_trend: z
      .array(z.object({ date: z.string().meta({ description: 'YYYY-MM-DD (UTC)' }), cost_usd: usd }))
      .meta({ description: 'One row per day of the period, ascending, zeros included' }),
  })
  .meta({ id: 'CostSummary' });

/** GET /analytics/usage. */
export const usageStatsSchema = z
  .object({
    period,
    sessions: tokens,
    messages: tokens,
    tool_calls: tokens,
    tasks_completed: tokens,
    skills_used: tokens,
  })
  .meta({ id: 'UsageStats' });

const usageGroup = z.object({ requests: tokens, tokens, cost_usd: usd });

/** The variant GET /analytics; `by_channel` only with `group_by=channel`, `by_agent` only with `group_by=agent`. */
export const variantAnalyticsSchema = z
  .object({
    period,
    total_messages: tokens,
    total_tokens: tokens,
    total_cost_usd: usd,
    by_model: z.record(z.string(), usageGroup),
    by_tool: z.record(z.string(), tokens).meta({ description: 'Calls per tool' }),
    by_channel: z.record(z.string(), usageGroup).optional(),
    by_agent: z.record(z.string(), usageGroup).optional(),
  })
  .meta({ id: 'VariantAnalytics' });

/** The figures of one row of a summary breakdown: model calls, tokens, cost. */
const summaryFigures = z.object({
  requests: tokens.meta({ description: 'Model calls' }),
  input_tokens: tokens,
  output_tokens: tokens,
  cost_usd: usd,
});

const latency = z
  .number()
  .int()
  .min(0)
  .nullable()
  .meta({ description: 'Milliseconds from acceptance to the end of the turns that ended in the bucket; null: none' });

/** GET /analytics/summary: what the dashboard's Overview and each Analytics view need, in one request (ADR 0045). */
export const analyticsSummarySchema = z
  .object({
    period,
    bucket: z.enum(['hour', 'day']).meta({ description: '`hour` for period `today`, else `day` (UTC)' }),
    totals: z.object({
      cost_usd: usd,
      requests: tokens.meta({ description: 'Model calls' }),
      input_tokens: tokens,
      output_tokens: tokens,
      tokens,
      sessions: tokens,
      messages: tokens,
      tool_calls: tokens,
      turns: tokens.meta({ description: 'Turns that ended in the period' }),
      tasks_completed: tokens,
      skills_used: tokens,
    }),
    by_model: z.array(summaryFigures.extend({ model: z.string() })).meta({ description: 'Most expensive first' }),
    by_channel: z.array(summaryFigures.extend({ channel: z.string() })).meta({ description: 'Most expensive first' }),
    by_session: z.array(summaryFigures.extend({ session: z.string() })).meta({ description: 'Most expensive first' }),
    series: z
      .array(
        z.object({
          start: z.string().meta({ description: 'Start of the hour or UTC day (ISO 8601)' }),
          messages: tokens,
          turns: tokens,
          input_tokens: tokens,
          output_tokens: tokens,
          cost_usd: usd,
          latency_p50_ms: latency,
          latency_p99_ms: latency,
        }),
      )
      .meta({
        description:
          'Ascending, zeros included: the hours of today so far (period `today`), else one entry per UTC day ' +
          'of the period (for `all`, from the first usage, at most the latest 366 days)',
      }),
  })
  .meta({ id: 'AnalyticsSummary' });
