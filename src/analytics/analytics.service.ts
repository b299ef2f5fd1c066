import type { Clock } from '../lib/clock.js';
import type { Store } from '../store/index.js';
import {
  type CostPeriod,
  type StatPeriod,
  dayStartIso,
  earliestTrendDay,
  hoursSoFar,
  periodWindow,
  trendDays,
} from './analytics.periods.js';
import {
  type BucketUnit,
  type SessionScope,
  type TurnBucket,
  type UsageBreakdown,
  type UsageBucket,
  type UsageGroup,
  activeSessionCount,
  dailyCostNanoUsd,
  finishedTurnCount,
  firstUsageDay,
  isScoped,
  messageCounts,
  messageSeries,
  tasksCompletedInScope,
  toolCallCounts,
  turnSeries,
  usageBreakdown,
  usageSeries,
} from './analytics.repo.js';

/**
 * Counts owned by other capabilities (tasks, skills), filled in by them
 * through `gateway.ts`; `sinceIso` is the start of the period (ISO 8601 UTC).
 */
export type ExtraCounts = (sinceIso: string) => Promise<{ tasks_completed: number; skills_used: number }>;

/** What the analytics service reads from. */
export interface AnalyticsServiceDeps {
  /** The store: `db` for reads, read at each call; `driver` picks the SQL of the turn latency (default sqlite). */
  store: Pick<Store, 'db'> & Partial<Pick<Store, 'driver'>>;
  /** "Today" comes from here. */
  clock: Clock;
  /** Tasks completed and skills used since a time; absent → both 0. */
  extraCounts?: ExtraCounts;
}

/** The cost summary in integer nano-USD, before presentation. */
export interface CostSummary {
  period: CostPeriod;
  groupBy: UsageGroup;
  breakdown: UsageBreakdown;
  /** One entry per UTC day of the period, ascending, zeros included. */
  dailyTrend: Array<{ day: string; costNanoUsd: number }>;
}

/** The usage statistics of a period. */
export interface UsageStats {
  period: StatPeriod;
  sessions: number;
  messages: number;
  toolCalls: number;
  tasksCompleted: number;
  skillsUsed: number;
}

/** What the variant GET /analytics groups by (spec: model, tool, channel; DECISIONS §17: agent). */
export type VariantGroup = 'model' | 'tool' | 'channel' | 'agent';

/** The variant analytics of a period, before presentation. */
export interface VariantAnalytics {
  period: StatPeriod;
  totalMessages: number;
  byModel: UsageBreakdown;
  byTool: Array<{ tool: string; count: number }>;
  /** Present when grouped by channel. */
  byChannel: UsageBreakdown | null;
  /** Present when grouped by agent. */
  byAgent: UsageBreakdown | null;
}

/** One point of the summary's time series: everything that happened in one hour or UTC day. */
export interface SeriesPoint {
  /** `YYYY-MM-DDTHH` (hour) or `YYYY-MM-DD` (day). */
  bucket: string;
  messages: number;
  usage: UsageBucket;
  /** Null when no turn ended in the bucket. */
  turns: TurnBucket | null;
}

/** What the dashboard's views need of a period, in one answer (GET /analytics/summary, ADR 0045). */
export interface AnalyticsSummary {
  period: StatPeriod;
  usage: UsageStats;
  /** Turns that ended in the period. */
  turns: number;
  byModel: UsageBreakdown;
  byChannel: UsageBreakdown;
  bySession: UsageBreakdown;
  unit: BucketUnit;
  /** Hours of today so far (`today`), else one entry per UTC day as the cost trend (at most the latest 366). */
  series: SeriesPoint[];
}

/**
 * Read-only analytics over usage, messages and sessions; every figure is an
 * aggregate computed by the database. `scope` (default: none) restricts every
 * figure to the sessions of one principal and/or one agent (DECISIONS §17,
 * §18); see `usageStats` for the figures that are not per session.
 */
export interface AnalyticsService {
  /** Cost of `period` grouped by `groupBy`, with the daily trend. */
  costSummary(period: CostPeriod, groupBy: UsageGroup, scope?: SessionScope): Promise<CostSummary>;
  /**
   * Sessions, messages and tool calls of `period` (plus tasks and skills from
   * `extraCounts`). Scoped, the two figures that are not per session are
   * counted through sessions or not at all: `tasks_completed` counts the
   * completed tasks whose turn ran in a session of the scope
   * (`tasksCompletedInScope`), and `skills_used` is 0, since a skill's use
   * is recorded on the skill alone (`last_used`), reachable through no
   * session: an unscoped count would show another principal's activity.
   */
  usageStats(period: StatPeriod, scope?: SessionScope): Promise<UsageStats>;
  /** The variant response: totals, per model, per tool, and per channel (agent) when `groupBy` is `channel` (`agent`). */
  variant(period: StatPeriod, groupBy: VariantGroup, scope?: SessionScope): Promise<VariantAnalytics>;
  /** Totals, cost by model, channel and session, and the hourly or daily series of `period`, at once. */
  summary(period: StatPeriod, scope?: SessionScope): Promise<AnalyticsSummary>;
}

/** Builds the analytics service. Store failures reject with the store's errors (the HTTP layer maps them to 503). */
export function createAnalyticsService(deps: AnalyticsServiceDeps): AnalyticsService {
  const service: AnalyticsService = {
    async costSummary(period, groupBy, scope = {}) {
      const db = deps.store.db;
      const window = periodWindow(period, deps.clock.now());
      const [breakdown, daily, firstDay] = await Promise.all([
        usageBreakdown(db, window, groupBy, scope),
        dailyCostNanoUsd(
          db,
          window.since === null ? { since: dayStartIso(earliestTrendDay(window.today)), until: window.until } : window,
          scope,
        ),
        window.firstDay ?? firstUsageDay(db, window.until, scope),
      ]);
      const dailyTrend = trendDays(firstDay ?? window.today, window.today).map((day) => ({
        day,
        costNanoUsd: daily.get(day) ?? 0,
      }));
      return { period, groupBy, breakdown, dailyTrend };
    },

    async usageStats(period, scope = {}) {
      const db = deps.store.db;
      const window = periodWindow(period, deps.clock.now());
      const since = window.since ?? '1970-01-01T00:00:00.000Z';
      const [sessions, counts, extra] = await Promise.all([
        activeSessionCount(db, window, scope),
        messageCounts(db, window, scope),
        isScoped(scope)
          ? // Scoped: only what is reachable through the scope's sessions (see `usageStats` above).
            tasksCompletedInScope(db, since, scope).then((tasks) => ({ tasks_completed: tasks, skills_used: 0 }))
          : // Tasks and skills are other capabilities' tables: until one injects its counter they are 0.
            deps.extraCounts
            ? deps.extraCounts(since)
            : Promise.resolve({ tasks_completed: 0, skills_used: 0 }),
      ]);
      return {
        period,
        sessions,
        messages: counts.messages,
        toolCalls: counts.toolCalls,
        tasksCompleted: extra.tasks_completed,
        skillsUsed: extra.skills_used,
      };
    },

    async variant(period, groupBy, scope = {}) {
      const db = deps.store.db;
      const window = periodWindow(period, deps.clock.now());
      const [byModel, byTool, counts, byChannel, byAgent] = await Promise.all([
        usageBreakdown(db, window, 'model', scope),
        toolCallCounts(db, window, scope),
        messageCounts(db, window, scope),
        groupBy === 'channel' ? usageBreakdown(db, window, 'channel', scope) : Promise.resolve(null),
        groupBy === 'agent' ? usageBreakdown(db, window, 'agent', scope) : Promise.resolve(null),
      ]);
      return { period, totalMessages: counts.messages, byModel, byTool, byChannel, byAgent };
    },

    async summary(period, scope = {}) {
      const db = deps.store.db;
      const dialect = deps.store.driver ?? 'sqlite';
      const now = deps.clock.now();
      const window = periodWindow(period, now);
      const unit: BucketUnit = period === 'today' ? 'hour' : 'day';
      // The series of `all` covers the trend's days (the latest 366 at most), as the cost summary's trend.
      const seriesRange =
        window.since === null ? { since: dayStartIso(earliestTrendDay(window.today)), until: window.until } : window;
      const [usage, turns, byModel, byChannel, bySession, usageByBucket, messagesByBucket, turnsByBucket, firstDay] =
        await Promise.all([
          service.usageStats(period, scope),
          finishedTurnCount(db, window, scope),
          usageBreakdown(db, window, 'model', scope),
          usageBreakdown(db, window, 'channel', scope),
          usageBreakdown(db, window, 'session', scope),
          usageSeries(db, seriesRange, unit, scope),
          messageSeries(db, seriesRange, unit, scope),
          turnSeries(db, dialect, seriesRange, unit, scope),
          window.firstDay ?? firstUsageDay(db, window.until, scope),
        ]);
      const buckets = unit === 'hour' ? hoursSoFar(now) : trendDays(firstDay ?? window.today, window.today);
      const series = buckets.map((bucket) => ({
        bucket,
        messages: messagesByBucket.get(bucket) ?? 0,
        usage: usageByBucket.get(bucket) ?? { inputTokens: 0, outputTokens: 0, costNanoUsd: 0 },
        turns: turnsByBucket.get(bucket) ?? null,
      }));
      return { period, usage, turns, byModel, byChannel, bySession, unit, series };
    },
  };
  return service;
}
