import { type Kysely, sql } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../lib/clock.js';
import type { Database } from '../store/database.js';
import { type TestStore, describeBackends } from '../../test/helpers/stores.js';
import { appendMessage, createSession, deleteSession, touchSession } from '../sessions/sessions.repo.js';
import { type UsageInput, recordUsage } from '../usage/usage.repo.js';
import { periodWindow } from './analytics.periods.js';
import { presentCostSummary, presentUsageStats, presentVariant } from './analytics.presenter.js';
import {
  activeSessionCount,
  dailyCostNanoUsd,
  firstUsageDay,
  messageCounts,
  tasksCompletedInScope,
  toolCallCounts,
  usageBreakdown,
} from './analytics.repo.js';
import { type AnalyticsService, createAnalyticsService } from './analytics.service.js';

/** "Now" of every test: 2026-11-21 10:00 UTC. */
const NOW = Date.UTC(2026, 10, 21, 10, 0, 0, 0);
const DAY = 86_400_000;
const TODAY_START = Date.UTC(2026, 10, 21);
/** ISO timestamp `days` days before today's 00:00 UTC plus `ms`. */
const dayAt = (days: number, ms = 0): string => new Date(TODAY_START - days * DAY + ms).toISOString();
/** 23:59:59.999 yesterday: the last instant outside `today`. */
const LAST_MS_OF_YESTERDAY = dayAt(0, -1);

let seq = 0;
/** A usage record builder; each call gets a fresh id. */
function usage(costNanoUsd: number, createdAt: string, extra: Partial<UsageInput> = {}): UsageInput {
  seq++;
  return {
    id: `use_${String(seq).padStart(6, '0')}`,
    eventId: `evt_${seq}`,
    sessionKey: 'gateway:api:s1',
    channel: 'api',
    model: 'gpt-4o-mini',
    inputTokens: 10,
    outputTokens: 5,
    costNanoUsd,
    now: createdAt,
    ...extra,
  };
}

describeBackends('analytics repository', (backend) => {
  let t: TestStore;
  let db: Kysely<Database>;
  let clock: ManualClock;
  let service: AnalyticsService;

  beforeEach(async () => {
    t = await backend.open();
    db = t.store.db;
    clock = new ManualClock(NOW);
    service = createAnalyticsService({ store: t.store, clock });
  });
  afterEach(async () => {
    await t.cleanup();
  });

  const record = async (...inputs: UsageInput[]): Promise<void> => {
    for (const input of inputs) await recordUsage(db, input);
  };

  it('answers zeros and a zero-filled trend when nothing was recorded', async () => {
    const week = presentCostSummary(await service.costSummary('week', 'model'));
    expect(week.total_usd).toBe(0);
    expect(week.breakdown).toEqual([]);
    expect(week.daily_trend).toHaveLength(7);
    expect(week.daily_trend.every((d) => d.cost_usd === 0)).toBe(true);
    const all = presentCostSummary(await service.costSummary('all', 'model'));
    expect(all.daily_trend).toEqual([{ date: '2026-11-21', cost_usd: 0 }]);
    expect(await firstUsageDay(db, periodWindow('all', NOW).until)).toBeNull();
    expect(presentUsageStats(await service.usageStats('month'))).toEqual({
      period: 'month',
      sessions: 0,
      messages: 0,
      tool_calls: 0,
      tasks_completed: 0,
      skills_used: 0,
    });
    expect(presentVariant(await service.variant('today', 'channel'))).toEqual({
      period: 'today',
      total_messages: 0,
      total_tokens: 0,
      total_cost_usd: 0,
      by_model: {},
      by_tool: {},
      by_channel: {},
    });
  });

  it('sums exactly to the nano-dollar: 1 nano-dollar, 0.1 cent and amounts beyond 32 bits', async () => {
    const amounts = [1, 1_000_000, 999_999_999, 2 ** 40 + 3, 150, 600];
    await record(...amounts.map((nano, i) => usage(nano, dayAt(0, 1000 * i))));
    const exact = amounts.reduce((a, b) => a + b, 0);
    const { totals, groups } = await usageBreakdown(db, periodWindow('today', NOW), 'model');
    expect(totals.costNanoUsd).toBe(exact);
    expect(Number.isInteger(totals.costNanoUsd)).toBe(true);
    expect(groups).toEqual([
      { key: 'gpt-4o-mini', requests: 6, inputTokens: 60, outputTokens: 30, costNanoUsd: exact },
    ]);
    const view = presentCostSummary(await service.costSummary('today', 'model'));
    expect(view.total_usd).toBe(exact / 1e9);
    expect(Math.round(view.total_usd * 1e9)).toBe(exact);
  });

  it('a single nano-dollar and a single 0.1 cent survive conversion', async () => {
    await record(usage(1, dayAt(0, 1)), usage(1_000_000, dayAt(1, 1)));
    const today = presentCostSummary(await service.costSummary('today', 'model'));
    expect(today.total_usd).toBe(1e-9);
    const week = presentCostSummary(await service.costSummary('week', 'day'));
    expect(week.total_usd).toBe(0.001000001);
    expect(week.breakdown).toEqual([
      { day: '2026-11-20', input_tokens: 10, output_tokens: 5, cost_usd: 0.001 },
      { day: '2026-11-21', input_tokens: 10, output_tokens: 5, cost_usd: 1e-9 },
    ]);
  });

  it('breaks down by model, channel, session and day, most expensive first, ties by key', async () => {
    await record(
      usage(300, dayAt(0, 1), { model: 'gpt-4o', channel: 'webhook', sessionKey: 'gateway:webhook:a' }),
      usage(200, dayAt(0, 2), { model: 'gpt-4o-mini', channel: 'api', sessionKey: 'gateway:api:b' }),
      usage(200, dayAt(1, 3), { model: 'claude-haiku-4-5', channel: 'api', sessionKey: 'gateway:api:b' }),
      usage(50, dayAt(2, 4), { model: 'gpt-4o', channel: 'ws', sessionKey: 'gateway:ws:c', inputTokens: 7 }),
    );
    const week = periodWindow('week', NOW);
    const byModel = await usageBreakdown(db, week, 'model');
    expect(byModel.groups.map((g) => [g.key, g.costNanoUsd, g.requests, g.inputTokens])).toEqual([
      ['gpt-4o', 350, 2, 17],
      ['claude-haiku-4-5', 200, 1, 10],
      ['gpt-4o-mini', 200, 1, 10],
    ]);
    expect(byModel.totals).toEqual({ requests: 4, inputTokens: 37, outputTokens: 20, costNanoUsd: 750 });
    const byChannel = await usageBreakdown(db, week, 'channel');
    expect(byChannel.groups.map((g) => [g.key, g.costNanoUsd])).toEqual([
      ['api', 400],
      ['webhook', 300],
      ['ws', 50],
    ]);
    const bySession = presentCostSummary(await service.costSummary('week', 'session'));
    expect(bySession.breakdown).toEqual([
      { session: 'gateway:api:b', input_tokens: 20, output_tokens: 10, cost_usd: 400e-9 },
      { session: 'gateway:webhook:a', input_tokens: 10, output_tokens: 5, cost_usd: 300e-9 },
      { session: 'gateway:ws:c', input_tokens: 7, output_tokens: 5, cost_usd: 50e-9 },
    ]);
    const byDay = presentCostSummary(await service.costSummary('week', 'day'));
    expect(byDay.breakdown.map((b) => [b.day, b.cost_usd])).toEqual([
      ['2026-11-21', 500e-9],
      ['2026-11-20', 200e-9],
      ['2026-11-19', 50e-9],
    ]);
    const model = presentCostSummary(await service.costSummary('week', 'model'));
    expect(model.breakdown[0]).toEqual({ model: 'gpt-4o', input_tokens: 17, output_tokens: 10, cost_usd: 350e-9 });
    expect(model.total_usd).toBe(750e-9);
  });

  it('daily_trend has one row per day of the period, ascending, zeros included', async () => {
    await record(usage(10, dayAt(0, 5)), usage(20, dayAt(3, 5)), usage(5, dayAt(3, 6)), usage(7, dayAt(29, 0)));
    await record(usage(1000, dayAt(30, 0))); // 31 days ago: outside month
    const week = presentCostSummary(await service.costSummary('week', 'model'));
    expect(week.daily_trend).toEqual([
      { date: '2026-11-15', cost_usd: 0 },
      { date: '2026-11-16', cost_usd: 0 },
      { date: '2026-11-17', cost_usd: 0 },
      { date: '2026-11-18', cost_usd: 25e-9 },
      { date: '2026-11-19', cost_usd: 0 },
      { date: '2026-11-20', cost_usd: 0 },
      { date: '2026-11-21', cost_usd: 10e-9 },
    ]);
    expect(week.total_usd).toBe(35e-9);
    const month = presentCostSummary(await service.costSummary('month', 'model'));
    expect(month.daily_trend).toHaveLength(30);
    expect(month.daily_trend[0]).toEqual({ date: '2026-10-23', cost_usd: 7e-9 });
    expect(month.daily_trend.at(-1)).toEqual({ date: '2026-11-21', cost_usd: 10e-9 });
    expect(month.total_usd).toBe(42e-9);
    const days = month.daily_trend.map((d) => d.date);
    expect([...days].sort()).toEqual(days);
    expect(new Set(days).size).toBe(30);
    const today = presentCostSummary(await service.costSummary('today', 'model'));
    expect(today.daily_trend).toEqual([{ date: '2026-11-21', cost_usd: 10e-9 }]);
  });

  it('period boundaries: 23:59:59.999 yesterday is not today, 00:00:00.000 today is', async () => {
    await record(usage(1, LAST_MS_OF_YESTERDAY), usage(1_000, dayAt(0)));
    // week: 00:00 six days ago is in, the millisecond before it is out
    await record(usage(1_000_000, dayAt(6)), usage(1_000_000_000, dayAt(6, -1)));
    const today = await usageBreakdown(db, periodWindow('today', NOW), 'model');
    expect(today.totals.costNanoUsd).toBe(1_000);
    const week = await usageBreakdown(db, periodWindow('week', NOW), 'model');
    expect(week.totals.costNanoUsd).toBe(1_001_001);
    const daily = await dailyCostNanoUsd(db, periodWindow('week', NOW));
    expect(Object.fromEntries(daily)).toEqual({ '2026-11-15': 1_000_000, '2026-11-20': 1, '2026-11-21': 1_000 });
    const all = await usageBreakdown(db, periodWindow('all', NOW), 'model');
    expect(all.totals.costNanoUsd).toBe(1_001_001_001);
  });

  it('today ends at midnight: a record from tomorrow (clock skew) is not counted', async () => {
    await record(usage(5, dayAt(0, DAY - 1)), usage(7, dayAt(-1)));
    expect((await usageBreakdown(db, periodWindow('today', NOW), 'model')).totals.costNanoUsd).toBe(5);
    clock.set(TODAY_START + DAY); // the next day: yesterday's and today's records move
    const summary = presentCostSummary(await service.costSummary('week', 'model'));
    expect(summary.total_usd).toBe(12e-9);
    expect(summary.daily_trend.slice(-2)).toEqual([
      { date: '2026-11-21', cost_usd: 5e-9 },
      { date: '2026-11-22', cost_usd: 7e-9 },
    ]);
  });

  it('period all: every record, trend from the first recorded day to today', async () => {
    await record(usage(3, dayAt(40)), usage(4, dayAt(2)), usage(5, dayAt(0, 1)));
    const all = presentCostSummary(await service.costSummary('all', 'model'));
    expect(all.period).toBe('all');
    expect(all.total_usd).toBe(12e-9);
    expect(all.daily_trend).toHaveLength(41);
    expect(all.daily_trend[0]).toEqual({ date: '2026-10-12', cost_usd: 3e-9 });
    expect(all.daily_trend.at(-1)).toEqual({ date: '2026-11-21', cost_usd: 5e-9 });
    expect(all.daily_trend.reduce((sum, d) => sum + Math.round(d.cost_usd * 1e9), 0)).toBe(12);
  });

  it('period all: the trend is capped at the latest 366 days; the total still covers everything', async () => {
    await record(usage(1_000, dayAt(800)), usage(20, dayAt(365)), usage(3, dayAt(366)));
    const all = presentCostSummary(await service.costSummary('all', 'day'));
    expect(all.total_usd).toBe(1_023e-9);
    expect(all.breakdown).toHaveLength(3);
    expect(all.daily_trend).toHaveLength(366);
    expect(all.daily_trend[0]).toEqual({ date: dayAt(365).slice(0, 10), cost_usd: 20e-9 });
    expect(all.daily_trend.at(-1)?.date).toBe('2026-11-21');
  });

  it('counts sessions active in the period, user+assistant messages and tool results', async () => {
    const session = (key: string, createdAt: string) =>
      createSession(db, { key, channel: 'api', metadata: {}, now: createdAt });
    await session('gateway:api:old', dayAt(40)); // created and idle long ago
    await session('gateway:api:revived', dayAt(40));
    await touchSession(db, 'gateway:api:revived', { now: dayAt(0, 10), messagesAdded: 0 }); // active today
    await session('gateway:api:yesterday', LAST_MS_OF_YESTERDAY);
    await session('gateway:api:today', dayAt(0));
    await session('gateway:api:deleted', dayAt(0, 5));
    let n = 0;
    const message = async (key: string, role: string, createdAt: string, name: string | null = null) =>
      appendMessage(db, {
        id: `msg_${String(++n).padStart(4, '0')}`,
        sessionKey: key,
        contextEpoch: 0,
        role,
        content: 'x',
        toolCalls: role === 'assistant' && name ? [{ id: `c${n}`, name }] : null,
        toolCallId: role === 'tool' ? `c${n}` : null,
        name: role === 'tool' ? name : null,
        eventId: `evt_${n}`,
        createdAt,
      });
    await message('gateway:api:today', 'user', dayAt(0, 1));
    await message('gateway:api:today', 'assistant', dayAt(0, 2), 'memory_search');
    await message('gateway:api:today', 'tool', dayAt(0, 3), 'memory_search');
    await message('gateway:api:today', 'tool', dayAt(0, 4), 'memory_search');
    await message('gateway:api:today', 'tool', dayAt(0, 5), 'knowledge_search');
    await message('gateway:api:today', 'tool', dayAt(0, 6), null);
    await message('gateway:api:today', 'assistant', dayAt(0, 7));
    await message('gateway:api:today', 'system', dayAt(0, 8));
    await message('gateway:api:yesterday', 'user', LAST_MS_OF_YESTERDAY);
    await message('gateway:api:yesterday', 'tool', LAST_MS_OF_YESTERDAY, 'memory_search');
    await message('gateway:api:deleted', 'user', dayAt(0, 9));
    await deleteSession(db, 'gateway:api:deleted', dayAt(0, 10));

    const today = periodWindow('today', NOW);
    const week = periodWindow('week', NOW);
    expect(await activeSessionCount(db, today)).toBe(2); // revived + today; deleted not counted
    expect(await activeSessionCount(db, week)).toBe(3);
    expect(await activeSessionCount(db, periodWindow('all', NOW))).toBe(4); // every live one
    expect(await messageCounts(db, today)).toEqual({ messages: 3, toolCalls: 4 });
    expect(await messageCounts(db, week)).toEqual({ messages: 4, toolCalls: 5 });
    expect(await toolCallCounts(db, today)).toEqual([
      { tool: 'memory_search', count: 2 },
      { tool: 'knowledge_search', count: 1 },
      { tool: 'unknown', count: 1 },
    ]);

    const extraCalls: string[] = [];
    const withExtra = createAnalyticsService({
      store: t.store,
      clock,
      extraCounts: async (since) => {
        extraCalls.push(since);
        return { tasks_completed: 4, skills_used: 2 };
      },
    });
    expect(presentUsageStats(await withExtra.usageStats('week'))).toEqual({
      period: 'week',
      sessions: 3,
      messages: 4,
      tool_calls: 5,
      tasks_completed: 4,
      skills_used: 2,
    });
    expect(extraCalls).toEqual([dayAt(6)]);
    expect(presentUsageStats(await service.usageStats('today'))).toMatchObject({
      tasks_completed: 0,
      skills_used: 0,
    });
  });

  it('variant: totals, by_model, by_tool, and by_channel only when grouped by channel', async () => {
    await record(
      usage(300, dayAt(0, 1), { model: 'gpt-4o', channel: 'webhook', inputTokens: 100, outputTokens: 20 }),
      usage(1, dayAt(0, 2), { model: 'gpt-4o-mini', channel: 'api', inputTokens: 1, outputTokens: 2 }),
      usage(2, dayAt(0, 3), { model: 'gpt-4o-mini', channel: 'api', inputTokens: 3, outputTokens: 4 }),
      usage(9_999, LAST_MS_OF_YESTERDAY, { model: 'gpt-4o' }),
    );
    await createSession(db, { key: 'gateway:api:v', channel: 'api', metadata: {}, now: dayAt(0) });
    await appendMessage(db, {
      id: 'msg_0001',
      sessionKey: 'gateway:api:v',
      contextEpoch: 0,
      role: 'tool',
      content: '{}',
      toolCalls: null,
      toolCallId: 'c1',
      name: '__proto__',
      eventId: 'evt_1',
      createdAt: dayAt(0, 1),
    });
    const byModel = presentVariant(await service.variant('today', 'model'));
    expect(byModel).toEqual({
      period: 'today',
      total_messages: 0,
      total_tokens: 130,
      total_cost_usd: 303e-9,
      by_model: {
        'gpt-4o': { requests: 1, tokens: 120, cost_usd: 300e-9 },
        'gpt-4o-mini': { requests: 2, tokens: 10, cost_usd: 3e-9 },
      },
      by_tool: JSON.parse('{"__proto__": 1}') as Record<string, number>,
    });
    expect(Object.keys(byModel.by_tool)).toEqual(['__proto__']);
    expect('by_channel' in byModel).toBe(false);
    expect(presentVariant(await service.variant('today', 'tool'))).not.toHaveProperty('by_channel');
    const byChannel = presentVariant(await service.variant('today', 'channel'));
    expect(byChannel.by_channel).toEqual({
      webhook: { requests: 1, tokens: 120, cost_usd: 300e-9 },
      api: { requests: 2, tokens: 10, cost_usd: 3e-9 },
    });
    expect(presentVariant(await service.variant('week', 'model')).total_cost_usd).toBe(10_302e-9);
  });
  describe('by agent and principal (DECISIONS §17, §18)', () => {
    const ALICE_MAIN = 'gateway:api@alice:a1';
    const ALICE_SUPPORT = 'gateway:api@alice:s1';
    const BOB_SUPPORT = 'gateway:api@bob:s2';
    const DEFAULT_MAIN = 'gateway:api:m1';
    /** A usage record of no session row (data written without one): counted unscoped only, as agent `unknown`. */
    const ORPHAN = 'gateway:api:gone';

    let n = 0;
    const message = async (key: string, role: string, name: string | null = null) =>
      appendMessage(db, {
        id: `msg_${String(++n).padStart(4, '0')}`,
        sessionKey: key,
        contextEpoch: 0,
        role,
        content: 'x',
        toolCalls: null,
        toolCallId: role === 'tool' ? `c${n}` : null,
        name: role === 'tool' ? name : null,
        eventId: `evt_m${n}`,
        createdAt: dayAt(0, 100 + n),
      });
    /** A task row as the tasks capability writes it (only the columns the count reads, plus the required ones). */
    const task = async (id: string, status: string, sessionKey: string | null, finishedAt: string | null) =>
      sql`insert into tasks (id, title, status, priority, source, session_key, created_at, finished_at, updated_at)
          values (${id}, ${id}, ${status}, 5, 'api', ${sessionKey}, ${dayAt(1)}, ${finishedAt}, ${dayAt(0)})`.execute(
        db,
      );

    beforeEach(async () => {
      n = 0;
      const session = (key: string, agent: string, principal: string, channel = 'api') =>
        createSession(db, { key, channel, metadata: {}, now: dayAt(0), agent, principal });
      await session(DEFAULT_MAIN, 'main', 'default');
      await session(ALICE_MAIN, 'main', 'alice');
      await session(ALICE_SUPPORT, 'support', 'alice');
      await session(BOB_SUPPORT, 'support', 'bob', 'ws'); // the usage records' channel is theirs, not the session's
      await record(
        usage(100, dayAt(0, 1), { sessionKey: DEFAULT_MAIN, model: 'gpt-4o' }),
        usage(20, dayAt(0, 2), { sessionKey: ALICE_MAIN }),
        usage(3, dayAt(0, 3), { sessionKey: ALICE_SUPPORT }),
        usage(7, LAST_MS_OF_YESTERDAY, { sessionKey: ALICE_SUPPORT }),
        usage(4_000, dayAt(0, 4), { sessionKey: BOB_SUPPORT, model: 'gpt-4o' }),
        usage(600_000, dayAt(10), { sessionKey: BOB_SUPPORT, model: 'gpt-4o' }),
        usage(50_000, dayAt(0, 5), { sessionKey: ORPHAN, channel: 'webhook' }),
      );
      await message(DEFAULT_MAIN, 'user');
      await message(DEFAULT_MAIN, 'assistant');
      await message(ALICE_MAIN, 'user');
      await message(ALICE_MAIN, 'tool', 'lookup');
      await message(BOB_SUPPORT, 'user');
      await message(BOB_SUPPORT, 'assistant');
      await message(BOB_SUPPORT, 'tool', 'lookup');
      await message(BOB_SUPPORT, 'tool', 'search');
    });

    const keysAndCosts = (groups: Array<{ key: string; costNanoUsd: number }>) =>
      groups.map((g) => [g.key, g.costNanoUsd]);

    it('groups usage by the agent of its session; the groups add up to the unscoped totals', async () => {
      const today = periodWindow('today', NOW);
      const byAgent = await usageBreakdown(db, today, 'agent');
      expect(keysAndCosts(byAgent.groups)).toEqual([
        ['unknown', 50_000],
        ['support', 4_003],
        ['main', 120],
      ]);
      expect(byAgent.groups.map((g) => g.requests)).toEqual([1, 2, 2]);
      const byModel = await usageBreakdown(db, today, 'model');
      expect(byAgent.totals).toEqual(byModel.totals);
      expect(byAgent.totals).toEqual({ requests: 5, inputTokens: 50, outputTokens: 25, costNanoUsd: 54_123 });
      expect(presentCostSummary(await service.costSummary('today', 'agent')).breakdown).toEqual([
        { agent: 'unknown', input_tokens: 10, output_tokens: 5, cost_usd: 50_000e-9 },
        { agent: 'support', input_tokens: 20, output_tokens: 10, cost_usd: 4_003e-9 },
        { agent: 'main', input_tokens: 20, output_tokens: 10, cost_usd: 120e-9 },
      ]);
    });

    it("a principal's scope counts only its sessions' usage, in every grouping and in the trend", async () => {
      const today = periodWindow('today', NOW);
      const alice = { principal: 'alice' };
      expect(keysAndCosts((await usageBreakdown(db, today, 'agent', alice)).groups)).toEqual([
        ['main', 20],
        ['support', 3],
      ]);
      expect((await usageBreakdown(db, today, 'model', alice)).totals).toEqual({
        requests: 2,
        inputTokens: 20,
        outputTokens: 10,
        costNanoUsd: 23,
      });
      expect(keysAndCosts((await usageBreakdown(db, today, 'session', alice)).groups)).toEqual([
        [ALICE_MAIN, 20],
        [ALICE_SUPPORT, 3],
      ]);
      expect(keysAndCosts((await usageBreakdown(db, today, 'channel', { principal: 'bob' })).groups)).toEqual([
        ['api', 4_000],
      ]);
      const nobody = await usageBreakdown(db, today, 'model', { principal: 'nobody' });
      expect(nobody).toEqual({ groups: [], totals: { requests: 0, inputTokens: 0, outputTokens: 0, costNanoUsd: 0 } });

      const week = periodWindow('week', NOW);
      expect(Object.fromEntries(await dailyCostNanoUsd(db, week, alice))).toEqual({
        '2026-11-20': 7,
        '2026-11-21': 23,
      });
      const until = periodWindow('all', NOW).until;
      expect(await firstUsageDay(db, until)).toBe(dayAt(10).slice(0, 10));
      expect(await firstUsageDay(db, until, alice)).toBe('2026-11-20');
      expect(await firstUsageDay(db, until, { principal: 'nobody' })).toBeNull();

      const all = presentCostSummary(await service.costSummary('all', 'agent', alice));
      expect(all.total_usd).toBe(30e-9);
      expect(all.breakdown).toEqual([
        { agent: 'main', input_tokens: 10, output_tokens: 5, cost_usd: 20e-9 },
        { agent: 'support', input_tokens: 20, output_tokens: 10, cost_usd: 10e-9 },
      ]);
      expect(all.daily_trend).toEqual([
        { date: '2026-11-20', cost_usd: 7e-9 },
        { date: '2026-11-21', cost_usd: 23e-9 },
      ]);
    });

    it('an agent filter, alone or with a principal, keeps only the sessions of that agent', async () => {
      const today = periodWindow('today', NOW);
      expect(keysAndCosts((await usageBreakdown(db, today, 'session', { agent: 'support' })).groups)).toEqual([
        [BOB_SUPPORT, 4_000],
        [ALICE_SUPPORT, 3],
      ]);
      expect(keysAndCosts((await usageBreakdown(db, today, 'agent', { agent: 'support' })).groups)).toEqual([
        ['support', 4_003],
      ]);
      const aliceSupport = { principal: 'alice', agent: 'support' };
      expect((await usageBreakdown(db, today, 'model', aliceSupport)).totals.costNanoUsd).toBe(3);
      expect((await usageBreakdown(db, today, 'model', { agent: 'nobody' })).groups).toEqual([]);
      expect(await messageCounts(db, today, { agent: 'support' })).toEqual({ messages: 2, toolCalls: 2 });
      expect(await messageCounts(db, today, aliceSupport)).toEqual({ messages: 0, toolCalls: 0 });
      expect(await activeSessionCount(db, today, { agent: 'support' })).toBe(2);
      expect(await activeSessionCount(db, today, aliceSupport)).toBe(1);
    });

    it('messages, tool calls and active sessions of a scope', async () => {
      const today = periodWindow('today', NOW);
      expect(await messageCounts(db, today)).toEqual({ messages: 5, toolCalls: 3 });
      expect(await messageCounts(db, today, { principal: 'alice' })).toEqual({ messages: 1, toolCalls: 1 });
      expect(await messageCounts(db, today, { principal: 'bob' })).toEqual({ messages: 2, toolCalls: 2 });
      expect(await toolCallCounts(db, today, { principal: 'alice' })).toEqual([{ tool: 'lookup', count: 1 }]);
      expect(await toolCallCounts(db, today, { agent: 'support' })).toEqual([
        { tool: 'lookup', count: 1 },
        { tool: 'search', count: 1 },
      ]);
      expect(await activeSessionCount(db, today)).toBe(4);
      expect(await activeSessionCount(db, today, { principal: 'alice' })).toBe(2);
      expect(await activeSessionCount(db, today, { principal: 'nobody' })).toBe(0);
      await deleteSession(db, ALICE_MAIN, dayAt(0, 500));
      expect(await activeSessionCount(db, today, { principal: 'alice' })).toBe(1);
    });

    it('tasks completed through the sessions of a scope; scoped, skills_used is 0 and the injected counts unused', async () => {
      await task('tsk_alice', 'completed', ALICE_SUPPORT, dayAt(0, 10));
      await task('tsk_default', 'completed', DEFAULT_MAIN, dayAt(0, 11));
      await task('tsk_person', 'completed', null, dayAt(0, 12)); // finished by a person: no session
      await task('tsk_running', 'running', ALICE_MAIN, null);
      await task('tsk_old', 'completed', ALICE_MAIN, LAST_MS_OF_YESTERDAY);
      const since = dayAt(0);
      expect(await tasksCompletedInScope(db, since, { principal: 'alice' })).toBe(1);
      expect(await tasksCompletedInScope(db, dayAt(1), { principal: 'alice' })).toBe(2);
      expect(await tasksCompletedInScope(db, since, { agent: 'main' })).toBe(1);
      expect(await tasksCompletedInScope(db, since, { principal: 'bob' })).toBe(0);

      const extraCalls: string[] = [];
      const withExtra = createAnalyticsService({
        store: t.store,
        clock,
        extraCounts: async (sinceIso) => {
          extraCalls.push(sinceIso);
          return { tasks_completed: 3, skills_used: 2 };
        },
      });
      expect(presentUsageStats(await withExtra.usageStats('today', { principal: 'alice' }))).toEqual({
        period: 'today',
        sessions: 2,
        messages: 1,
        tool_calls: 1,
        tasks_completed: 1,
        skills_used: 0,
      });
      expect(extraCalls).toEqual([]);
      expect(presentUsageStats(await withExtra.usageStats('today', {}))).toMatchObject({
        sessions: 4,
        messages: 5,
        tasks_completed: 3,
        skills_used: 2,
      });
      expect(extraCalls).toEqual([since]);
    });

    it('variant: by_agent with group_by=agent, every figure of the scope', async () => {
      const all = presentVariant(await service.variant('today', 'agent'));
      expect(all.by_agent).toEqual({
        unknown: { requests: 1, tokens: 15, cost_usd: 50_000e-9 },
        support: { requests: 2, tokens: 30, cost_usd: 4_003e-9 },
        main: { requests: 2, tokens: 30, cost_usd: 120e-9 },
      });
      expect(all).not.toHaveProperty('by_channel');
      expect(presentVariant(await service.variant('today', 'channel'))).not.toHaveProperty('by_agent');
      expect(presentVariant(await service.variant('today', 'agent', { principal: 'alice' }))).toEqual({
        period: 'today',
        total_messages: 1,
        total_tokens: 30,
        total_cost_usd: 23e-9,
        by_model: { 'gpt-4o-mini': { requests: 2, tokens: 30, cost_usd: 23e-9 } },
        by_tool: { lookup: 1 },
        by_agent: {
          main: { requests: 1, tokens: 15, cost_usd: 20e-9 },
          support: { requests: 1, tokens: 15, cost_usd: 3e-9 },
        },
      });
      expect(presentVariant(await service.variant('today', 'model', { agent: 'support' }))).toEqual({
        period: 'today',
        total_messages: 2,
        total_tokens: 30,
        total_cost_usd: 4_003e-9,
        by_model: {
          'gpt-4o': { requests: 1, tokens: 15, cost_usd: 4_000e-9 },
          'gpt-4o-mini': { requests: 1, tokens: 15, cost_usd: 3e-9 },
        },
        by_tool: { lookup: 1, search: 1 },
      });
    });
  });
});
