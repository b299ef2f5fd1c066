import { describe, expect, it } from 'vitest';
import type { FakeUsage } from '../helpers/fake-openai.js';
import { adminHeaders, apiHeaders, useHarness, type Harness } from '../helpers/harness.js';
import { msg, recordingTool } from './builders.js';

/** The test's "now": 2026-11-21 10:00 UTC; the gateway and the analytics share this clock. */
const NOW = Date.UTC(2026, 10, 21, 10, 0, 0, 0);
const DAY = 86_400_000;
/** gpt-4o-mini list price in nano-USD per token (0.15 / 0.60 USD per million). */
const NANO_IN = 150;
const NANO_OUT = 600;

interface CostSummary {
  period: string;
  total_usd: number;
  breakdown: Array<Record<string, string | number>>;
  daily_trend: Array<{ date: string; cost_usd: number }>;
}
interface UsageStats {
  period: string;
  sessions: number;
  messages: number;
  tool_calls: number;
  tasks_completed: number;
  skills_used: number;
}
interface GroupFigures {
  requests: number;
  tokens: number;
  cost_usd: number;
}
interface VariantAnalytics {
  period: string;
  total_messages: number;
  total_tokens: number;
  total_cost_usd: number;
  by_model: Record<string, GroupFigures>;
  by_tool: Record<string, number>;
  by_channel?: Record<string, GroupFigures>;
  by_agent?: Record<string, GroupFigures>;
}
interface WaitedMessage {
  status: string;
  message: { cost: { input_tokens: number; output_tokens: number; total_usd: number } };
}
interface ErrorBody {
  error: { code: string; message: string; details: Array<{ path: string; message: string }>; request_id: string };
}

const usage = (prompt: number, completion: number): FakeUsage => ({
  prompt_tokens: prompt,
  completion_tokens: completion,
});

describe('analytics API', () => {
  // The gateway and the analytics share a ManualClock at NOW; every model answer is scripted by its test.
  const rig = useHarness({ fake: true, clock: NOW, autoOpen: false });
  const { open } = rig;
  /** GET with the api token (or `headers`). */
  const get = (a: Harness, url: string, headers: Record<string, string> = apiHeaders) =>
    a.inject({ method: 'GET', url, headers });

  /** Runs one turn through POST /message (wait) and answers its Message cost in USD. */
  const turn = async (a: Harness, text: string, chat: string, platform = 'api'): Promise<number> => {
    const res = await a.inject({
      method: 'POST',
      url: '/api/v1/message',
      headers: apiHeaders,
      payload: { ...msg(text, chat, { wait: true }), platform },
    });
    expect(res.statusCode).toBe(200);
    const body = res.json<WaitedMessage>();
    expect(body.status).toBe('completed');
    return body.message.cost.total_usd;
  };

  const json = async <T>(a: Harness, url: string): Promise<T> => {
    const res = await get(a, url);
    expect(res.statusCode, res.body).toBe(200);
    return res.json<T>();
  };

  describe('happy', () => {
    it('cost: total_usd equals the sum of the turns’ recorded costs, exactly; breakdown per model', async () => {
      const a = await open();
      rig.fake.enqueue(
        { content: 'a', usage: usage(1234, 567) },
        { content: 'b', usage: usage(1, 0) }, // 150 nano-dollars
        { content: 'c', usage: usage(0, 1) }, // 600 nano-dollars
        { content: 'd', usage: usage(6667, 0) }, // 0.1 cent + 50 nano-dollars
      );
      const costs = [
        await turn(a, 'one', 'c1'),
        await turn(a, 'two', 'c1'),
        await turn(a, 'three', 'c2'),
        await turn(a, 'four', 'c3'),
      ];
      const expectedNano = [1234 * NANO_IN + 567 * NANO_OUT, NANO_IN, NANO_OUT, 6667 * NANO_IN];
      expect(costs.map((usd) => Math.round(usd * 1e9))).toEqual(expectedNano);
      const sumNano = costs.reduce((sum, usd) => sum + Math.round(usd * 1e9), 0);

      const summary = await json<CostSummary>(a, '/api/v1/analytics/cost');
      expect(summary.period).toBe('today'); // the default period
      expect(summary.total_usd).toBe(sumNano / 1e9);
      expect(summary.total_usd).toBeCloseTo(
        costs.reduce((sum, usd) => sum + usd, 0),
        15,
      );
      expect(summary.breakdown).toEqual([
        {
          model: 'gpt-4o-mini',
          input_tokens: 1234 + 1 + 6667,
          output_tokens: 567 + 1,
          cost_usd: sumNano / 1e9,
        },
      ]);
      expect(summary.daily_trend).toEqual([{ date: '2026-11-21', cost_usd: sumNano / 1e9 }]);

      const explicit = await json<CostSummary>(a, '/api/v1/analytics/cost?period=today&group_by=model');
      expect(explicit).toEqual(summary);
    });

    it('cost: group_by channel, session and day; week and month trends zero-filled', async () => {
      const a = await open();
      rig.fake.enqueue({ content: 'a', usage: usage(1000, 0) }, { content: 'b', usage: usage(0, 1000) });
      await turn(a, 'cheap', 'c1', 'api');
      await turn(a, 'dear', 'room', 'slack');

      const byChannel = await json<CostSummary>(a, '/api/v1/analytics/cost?period=week&group_by=channel');
      expect(byChannel.breakdown).toEqual([
        { channel: 'slack', input_tokens: 0, output_tokens: 1000, cost_usd: 0.0006 },
        { channel: 'api', input_tokens: 1000, output_tokens: 0, cost_usd: 0.00015 },
      ]);
      expect(byChannel.total_usd).toBe(750_000 / 1e9);
      expect(byChannel.daily_trend.map((d) => d.date)).toEqual([
        '2026-11-15',
        '2026-11-16',
        '2026-11-17',
        '2026-11-18',
        '2026-11-19',
        '2026-11-20',
        '2026-11-21',
      ]);
      expect(byChannel.daily_trend.map((d) => d.cost_usd)).toEqual([0, 0, 0, 0, 0, 0, 0.00075]);

      const bySession = await json<CostSummary>(a, '/api/v1/analytics/cost?period=month&group_by=session');
      expect(bySession.breakdown.map((b) => [b.session, b.cost_usd])).toEqual([
        ['gateway:slack:room', 0.0006],
        ['gateway:api:c1', 0.00015],
      ]);
      expect(bySession.daily_trend).toHaveLength(30);

      const byDay = await json<CostSummary>(a, '/api/v1/analytics/cost?period=all&group_by=day');
      expect(byDay.period).toBe('all');
      expect(byDay.breakdown).toEqual([
        { day: '2026-11-21', input_tokens: 1000, output_tokens: 1000, cost_usd: 0.00075 },
      ]);
      expect(byDay.daily_trend).toEqual([{ date: '2026-11-21', cost_usd: 0.00075 }]);
    });

    it('periods follow the clock: tomorrow, today is empty and the week still holds the cost', async () => {
      const a = await open();
      rig.fake.enqueue({ content: 'a', usage: usage(100, 100) });
      const usd = await turn(a, 'hello', 'c1');
      a.clock.advance(DAY);
      const today = await json<CostSummary>(a, '/api/v1/analytics/cost?period=today');
      expect(today).toEqual({
        period: 'today',
        total_usd: 0,
        breakdown: [],
        daily_trend: [{ date: '2026-11-22', cost_usd: 0 }],
      });
      const week = await json<CostSummary>(a, '/api/v1/analytics/cost?period=week');
      expect(week.total_usd).toBe(usd);
      expect(week.daily_trend.slice(-2)).toEqual([
        { date: '2026-11-21', cost_usd: usd },
        { date: '2026-11-22', cost_usd: 0 },
      ]);
      expect((await json<UsageStats>(a, '/api/v1/analytics/usage?period=today')).messages).toBe(0);
      expect((await json<UsageStats>(a, '/api/v1/analytics/usage?period=week')).messages).toBe(2);
    });

    it('usage: sessions, user+assistant messages and tool calls of real turns', async () => {
      const lookup = recordingTool('lookup');
      const a = await open({ tools: [lookup] });
      rig.fake.enqueue(
        { tool_calls: [{ name: 'lookup', arguments: { value: 'x' } }], usage: usage(10, 5) },
        { content: 'found it', usage: usage(20, 5) },
        { content: 'plain', usage: usage(10, 5) },
      );
      await turn(a, 'look it up', 'c1');
      await turn(a, 'thanks', 'c2');
      expect(lookup.calls).toHaveLength(1);

      const stats = await json<UsageStats>(a, '/api/v1/analytics/usage');
      expect(stats).toEqual({
        period: 'today',
        sessions: 2,
        // c1: user, assistant (tool call), assistant (answer); c2: user, assistant
        messages: 5,
        tool_calls: 1,
        // no tasks or skills capability feeds these yet
        tasks_completed: 0,
        skills_used: 0,
      });
      expect(await json<UsageStats>(a, '/api/v1/analytics/usage?period=month')).toEqual({ ...stats, period: 'month' });
    });

    it('variant: totals, by_model, by_tool; by_channel with group_by=channel', async () => {
      const lookup = recordingTool('lookup');
      const a = await open({ tools: [lookup] });
      rig.fake.enqueue(
        { tool_calls: [{ name: 'lookup', arguments: { value: 'x' } }], usage: usage(100, 10) },
        { content: 'found', usage: usage(200, 20) },
        { content: 'hi', usage: usage(1, 2) },
      );
      const costs = [await turn(a, 'look it up', 'c1'), await turn(a, 'hi', 'room', 'slack')];
      const totalNano = costs.reduce((sum, usd) => sum + Math.round(usd * 1e9), 0);

      const variant = await json<VariantAnalytics>(a, '/api/v1/analytics');
      expect(variant).toEqual({
        period: 'today',
        total_messages: 5,
        total_tokens: 333,
        total_cost_usd: totalNano / 1e9,
        by_model: { 'gpt-4o-mini': { requests: 3, tokens: 333, cost_usd: totalNano / 1e9 } },
        by_tool: { lookup: 1 },
      });
      const byTool = await json<VariantAnalytics>(a, '/api/v1/analytics?period=week&group_by=tool');
      expect(byTool).toEqual({ ...variant, period: 'week' });

      const byChannel = await json<VariantAnalytics>(a, '/api/v1/analytics?group_by=channel');
      expect(byChannel.by_channel).toEqual({
        api: { requests: 2, tokens: 330, cost_usd: Math.round(costs[0]! * 1e9) / 1e9 },
        slack: { requests: 1, tokens: 3, cost_usd: Math.round(costs[1]! * 1e9) / 1e9 },
      });
    });

    it('is served under the /api alias too', async () => {
      const a = await open();
      for (const path of ['/analytics/cost', '/analytics/usage', '/analytics']) {
        const v1 = await get(a, `/api/v1${path}`);
        const alias = await get(a, `/api${path}`);
        expect(alias.statusCode).toBe(200);
        expect(alias.json()).toEqual(v1.json());
      }
    });
  });

  it('usage and the variant accept period=all (DECISIONS §9: all three)', async () => {
    const a = await open();
    for (const url of ['/api/v1/analytics/usage?period=all', '/api/v1/analytics?period=all']) {
      const res = await get(a, url, apiHeaders);
      expect(res.statusCode, url).toBe(200);
      expect(res.json<{ period: string }>().period).toBe('all');
    }
  });

  describe('errors', () => {
    const invalid: Array<[string, string]> = [
      ['/api/v1/analytics/cost?period=year', 'query.period'],
      ['/api/v1/analytics/cost?period=', 'query.period'],
      ['/api/v1/analytics/cost?period=TODAY', 'query.period'],
      ['/api/v1/analytics/cost?group_by=tool', 'query.group_by'],
      ['/api/v1/analytics/usage?period=yesterday', 'query.period'],
      ['/api/v1/analytics?group_by=session', 'query.group_by'],
      ['/api/v1/analytics?period=week&period=month', 'query.period'],
    ];

    it.each(invalid)('%s → 400 BAD_REQUEST at %s', async (url, path) => {
      const a = await open();
      const res = await get(a, url, { ...apiHeaders, 'x-request-id': 'req-analytics-1' });
      expect(res.statusCode).toBe(400);
      const body = res.json<ErrorBody>();
      expect(body.error.code).toBe('BAD_REQUEST');
      expect(body.error.request_id).toBe('req-analytics-1');
      expect(body.error.details).toEqual([{ path, message: expect.stringMatching(/^must be one of /) as string }]);
    });

    it('answers 503 UNAVAILABLE when the store is unreachable', async () => {
      const a = await open();
      await a.internals.store.close();
      const res = await get(a, '/api/v1/analytics/cost');
      expect(res.statusCode).toBe(503);
      expect(res.json<ErrorBody>().error.code).toBe('UNAVAILABLE');
    });
  });

  describe('security', () => {
    it('needs a token; the api token is enough', async () => {
      const a = await open();
      for (const url of ['/api/v1/analytics/cost', '/api/v1/analytics/usage', '/api/v1/analytics']) {
        const anonymous = await get(a, url, {});
        expect(anonymous.statusCode).toBe(401);
        expect(anonymous.json<ErrorBody>().error.code).toBe('UNAUTHORIZED');
        expect((await get(a, url, { authorization: `Bearer ${apiHeaders['x-api-token']}` })).statusCode).toBe(200);
      }
    });

    it('the analytics rate group: 10 per minute by default, the 11th is 429; other groups unaffected', async () => {
      const a = await open({ roomyLimits: false }); // default limits
      const urls = ['/api/v1/analytics/cost', '/api/v1/analytics/usage', '/api/v1/analytics'];
      for (let i = 0; i < 10; i++) {
        const res = await get(a, urls[i % urls.length]!);
        expect(res.statusCode).toBe(200);
        expect(res.headers['x-ratelimit-limit']).toBe('10');
        expect(res.headers['x-ratelimit-remaining']).toBe(String(9 - i));
        expect(Number(res.headers['x-ratelimit-reset'])).toBeGreaterThan(0);
      }
      const limited = await get(a, '/api/v1/analytics/cost?period=week');
      expect(limited.statusCode).toBe(429);
      expect(limited.headers['x-ratelimit-limit']).toBe('10');
      expect(limited.headers['x-ratelimit-remaining']).toBe('0');
      expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
      expect(limited.json<ErrorBody>().error.code).toBe('RATE_LIMITED');
      // The alias counts against the same window.
      expect((await get(a, '/api/analytics/usage')).statusCode).toBe(429);
      // `read` is a separate group.
      const sessions = await get(a, '/api/v1/sessions');
      expect(sessions.statusCode).toBe(200);
      expect(sessions.headers['x-ratelimit-limit']).toBe('120');
      // A new window (the limiter runs on the gateway's clock) lets analytics through again.
      a.clock.advance(60_000);
      expect((await get(a, '/api/v1/analytics')).statusCode).toBe(200);
    });
  });
});

describe('analytics by agent and principal (DECISIONS §17, §18)', () => {
  const ALICE = { 'x-api-token': 'alice-token-0123456789abcdef' };
  const rig = useHarness({
    fake: true,
    clock: NOW,
    config: {
      agents: { main: {}, support: {} },
      gateway: { auth: { principals: [{ id: 'alice', tokens: [ALICE['x-api-token']] }] } },
    },
  });

  /** One turn through POST /message (wait) as `headers`, run by `agent` in chat `chat`. */
  const turn = async (headers: Record<string, string>, agent: string, chat: string, answer: FakeUsage) => {
    rig.fake.enqueue({ content: `${agent} answers`, usage: answer });
    const res = await rig.message(
      { platform: 'api', user_id: 'u', chat_id: chat, text: `hello ${agent}`, agent, wait: true },
      headers,
    );
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json<WaitedMessage>().status).toBe('completed');
  };
  const json = async <T>(url: string, headers: Record<string, string>): Promise<T> => {
    const res = await rig.inject({ method: 'GET', url, headers });
    expect(res.statusCode, res.body).toBe(200);
    return res.json<T>();
  };

  /**
   * The default principal: main 150 µ$ (c1), support 600 µ$ (c2);
   * alice: support 15 µ$ (a1), main 6 µ$ (a2). Two messages per turn.
   */
  const seed = async () => {
    await turn(apiHeaders, 'main', 'c1', usage(1000, 0));
    await turn(apiHeaders, 'support', 'c2', usage(0, 1000));
    await turn(ALICE, 'support', 'a1', usage(100, 0));
    await turn(ALICE, 'main', 'a2', usage(0, 10));
  };

  it('cost: group_by=agent and ?agent= for everyone; a configured principal sees only its own sessions', async () => {
    await seed();
    for (const headers of [apiHeaders, adminHeaders]) {
      const byAgent = await json<CostSummary>('/api/v1/analytics/cost?group_by=agent', headers);
      expect(byAgent.breakdown).toEqual([
        { agent: 'support', input_tokens: 100, output_tokens: 1000, cost_usd: 615_000e-9 },
        { agent: 'main', input_tokens: 1000, output_tokens: 10, cost_usd: 156_000e-9 },
      ]);
      expect(byAgent.total_usd).toBe(771_000e-9);
    }
    const support = await json<CostSummary>('/api/v1/analytics/cost?group_by=session&agent=support', apiHeaders);
    expect(support.breakdown.map((b) => [b.session, b.cost_usd])).toEqual([
      ['gateway:api:c2', 600_000e-9],
      ['gateway:api@alice:a1', 15_000e-9],
    ]);
    expect(support.daily_trend).toEqual([{ date: '2026-11-21', cost_usd: 615_000e-9 }]);

    // alice: only her sessions, whatever she asks for
    const mine = await json<CostSummary>('/api/v1/analytics/cost?group_by=session', ALICE);
    expect(mine.breakdown.map((b) => [b.session, b.cost_usd])).toEqual([
      ['gateway:api@alice:a1', 15_000e-9],
      ['gateway:api@alice:a2', 6_000e-9],
    ]);
    expect(mine.total_usd).toBe(21_000e-9);
    expect(mine.daily_trend).toEqual([{ date: '2026-11-21', cost_usd: 21_000e-9 }]);
    const widened = await json<CostSummary>('/api/v1/analytics/cost?group_by=session&principal=default', ALICE);
    expect(widened).toEqual(mine);
    expect(JSON.stringify(widened)).not.toContain('gateway:api:c');
    expect((await json<CostSummary>('/api/v1/analytics/cost?group_by=agent', ALICE)).breakdown).toEqual([
      { agent: 'support', input_tokens: 100, output_tokens: 0, cost_usd: 15_000e-9 },
      { agent: 'main', input_tokens: 0, output_tokens: 10, cost_usd: 6_000e-9 },
    ]);
    expect((await json<CostSummary>('/api/v1/analytics/cost?agent=main', ALICE)).total_usd).toBe(6_000e-9);

    // an admin narrows to one principal with ?principal=
    const admins = await json<CostSummary>('/api/v1/analytics/cost?group_by=session&principal=alice', adminHeaders);
    expect(admins).toEqual(mine);
    const defaults = await json<CostSummary>('/api/v1/analytics/cost?principal=default&agent=main', adminHeaders);
    expect(defaults.total_usd).toBe(150_000e-9);
  });

  it('usage and the variant: scoped to the principal and the agent, by_agent with group_by=agent', async () => {
    await seed();
    expect(await json<UsageStats>('/api/v1/analytics/usage', apiHeaders)).toEqual({
      period: 'today',
      sessions: 4,
      messages: 8,
      tool_calls: 0,
      tasks_completed: 0,
      skills_used: 0,
    });
    expect(await json<UsageStats>('/api/v1/analytics/usage', ALICE)).toMatchObject({ sessions: 2, messages: 4 });
    expect(await json<UsageStats>('/api/v1/analytics/usage?agent=support', apiHeaders)).toMatchObject({
      sessions: 2,
      messages: 4,
    });
    expect(await json<UsageStats>('/api/v1/analytics/usage?agent=support', ALICE)).toMatchObject({
      sessions: 1,
      messages: 2,
    });
    expect(await json<UsageStats>('/api/v1/analytics/usage?principal=alice', adminHeaders)).toMatchObject({
      sessions: 2,
      messages: 4,
    });

    const all = await json<VariantAnalytics>('/api/v1/analytics?group_by=agent', adminHeaders);
    expect(all.total_messages).toBe(8);
    expect(all.total_cost_usd).toBe(771_000e-9);
    expect(all.by_agent).toEqual({
      support: { requests: 2, tokens: 1100, cost_usd: 615_000e-9 },
      main: { requests: 2, tokens: 1010, cost_usd: 156_000e-9 },
    });
    expect(all).not.toHaveProperty('by_channel');
    expect(await json<VariantAnalytics>('/api/v1/analytics?group_by=agent', ALICE)).toEqual({
      period: 'today',
      total_messages: 4,
      total_tokens: 110,
      total_cost_usd: 21_000e-9,
      by_model: { 'gpt-4o-mini': { requests: 2, tokens: 110, cost_usd: 21_000e-9 } },
      by_tool: {},
      by_agent: {
        support: { requests: 1, tokens: 100, cost_usd: 15_000e-9 },
        main: { requests: 1, tokens: 10, cost_usd: 6_000e-9 },
      },
    });
    const mainOnly = await json<VariantAnalytics>('/api/v1/analytics?agent=main&group_by=channel', apiHeaders);
    expect(mainOnly.by_channel).toEqual({ api: { requests: 2, tokens: 1010, cost_usd: 156_000e-9 } });
    expect(mainOnly).not.toHaveProperty('by_agent');
    const nobody = await json<VariantAnalytics>('/api/v1/analytics?agent=nobody', apiHeaders);
    expect(nobody).toMatchObject({ total_messages: 0, total_cost_usd: 0, by_model: {}, by_tool: {} });
  });

  it.each([
    ['/api/v1/analytics/cost?agent=', 'query.agent'],
    ['/api/v1/analytics/usage?principal=', 'query.principal'],
    ['/api/v1/analytics?agent=main&agent=support', 'query.agent'],
  ])('%s → 400 at %s', async (url, path) => {
    const res = await rig.inject({ method: 'GET', url, headers: apiHeaders });
    expect(res.statusCode).toBe(400);
    expect(res.json<ErrorBody>().error.details.map((d) => d.path)).toEqual([path]);
  });
});
