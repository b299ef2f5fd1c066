/**
 * GET /analytics/summary (ADR 0045): the one analytics request of each dashboard view. Happy paths against
 * real turns, errors, and principal scoping (DECISIONS §18: an api principal sees only its own sessions).
 */
import { describe, expect, it } from 'vitest';
import type { AnalyticsSummaryView } from '../../src/analytics/analytics.presenter.js';
import type { FakeUsage } from '../helpers/fake-openai.js';
import { adminHeaders, apiHeaders, useHarness } from '../helpers/harness.js';

/** The test's "now": 2026-11-21 10:30 UTC; the gateway and the analytics share this clock. */
const NOW = Date.UTC(2026, 10, 21, 10, 30, 0, 0);

/** The answer, as the presenter writes it. */
type Summary = AnalyticsSummaryView;
interface ErrorBody {
  error: { code: string; details: unknown };
}

const usage = (prompt: number, completion: number): FakeUsage => ({
  prompt_tokens: prompt,
  completion_tokens: completion,
});

describe('GET /analytics/summary', () => {
  const ALICE = { 'x-api-token': 'alice-token-0123456789abcdef' };
  const rig = useHarness({
    fake: true,
    clock: NOW,
    config: { gateway: { auth: { principals: [{ id: 'alice', tokens: [ALICE['x-api-token']] }] } } },
  });

  /** One turn through POST /message (wait) as `headers` in chat `chat`. */
  const turn = async (headers: Record<string, string>, chat: string, answer: FakeUsage) => {
    rig.fake.enqueue({ content: 'answer', usage: answer });
    const res = await rig.message({ platform: 'api', user_id: 'u', chat_id: chat, text: 'hello', wait: true }, headers);
    expect(res.statusCode, res.body).toBe(200);
  };
  const get = (url: string, headers: Record<string, string> = apiHeaders) =>
    rig.inject({ method: 'GET', url, headers });
  const json = async (url: string, headers: Record<string, string> = apiHeaders): Promise<Summary> => {
    const res = await get(url, headers);
    expect(res.statusCode, res.body).toBe(200);
    return res.json<Summary>();
  };

  describe('happy', () => {
    it('today: totals, breakdowns and the hours so far, in one answer', async () => {
      await turn(apiHeaders, 'c1', usage(1000, 0)); // 150 µ$
      await turn(apiHeaders, 'c2', usage(0, 1000)); // 600 µ$
      const summary = await json('/api/v1/analytics/summary');
      expect(summary.period).toBe('today');
      expect(summary.bucket).toBe('hour');
      expect(summary.totals).toEqual({
        cost_usd: 750_000e-9,
        requests: 2,
        input_tokens: 1000,
        output_tokens: 1000,
        tokens: 2000,
        sessions: 2,
        messages: 4,
        tool_calls: 0,
        turns: 2,
        tasks_completed: 0,
        skills_used: 0,
      });
      expect(summary.by_model).toEqual([
        { model: 'gpt-4o-mini', requests: 2, input_tokens: 1000, output_tokens: 1000, cost_usd: 750_000e-9 },
      ]);
      expect(summary.by_channel.map((r) => r.channel)).toEqual(['api']);
      expect(summary.by_session.map((r) => [r.session, r.cost_usd])).toEqual([
        ['gateway:api:c2', 600_000e-9],
        ['gateway:api:c1', 150_000e-9],
      ]);
      // 00:00 … 10:00 of today: eleven hours, the turns in the last.
      expect(summary.series.map((p) => p.start)).toEqual(
        Array.from({ length: 11 }, (_, h) => `2026-11-21T${String(h).padStart(2, '0')}:00:00.000Z`),
      );
      expect(summary.series.slice(0, 10).every((p) => p.messages === 0 && p.latency_p50_ms === null)).toBe(true);
      expect(summary.series[10]).toEqual({
        start: '2026-11-21T10:00:00.000Z',
        messages: 4,
        turns: 2,
        input_tokens: 1000,
        output_tokens: 1000,
        cost_usd: 750_000e-9,
        // The gateway's clock stands still: every turn took no time.
        latency_p50_ms: 0,
        latency_p99_ms: 0,
      });
    });

    it('week: one point per UTC day, zeros included; the figures agree with /analytics/cost', async () => {
      await turn(apiHeaders, 'c1', usage(1000, 0));
      const summary = await json('/api/v1/analytics/summary?period=week');
      expect(summary.bucket).toBe('day');
      expect(summary.series.map((p) => p.start.slice(0, 10))).toEqual([
        '2026-11-15',
        '2026-11-16',
        '2026-11-17',
        '2026-11-18',
        '2026-11-19',
        '2026-11-20',
        '2026-11-21',
      ]);
      expect(summary.series.map((p) => p.turns)).toEqual([0, 0, 0, 0, 0, 0, 1]);
      const cost = (await get('/api/v1/analytics/cost?period=week')).json<{ total_usd: number }>();
      expect(summary.totals.cost_usd).toBe(cost.total_usd);
    });

    it('all: from the first usage day to today', async () => {
      await turn(apiHeaders, 'c1', usage(10, 0));
      const summary = await json('/api/v1/analytics/summary?period=all');
      expect(summary.period).toBe('all');
      expect(summary.series.map((p) => p.start)).toEqual(['2026-11-21T00:00:00.000Z']);
      expect(summary.totals.turns).toBe(1);
    });
  });

  describe('errors', () => {
    it.each(['year', '', 'TODAY'])('period=%s → 400 BAD_REQUEST at query.period', async (period) => {
      const res = await get(`/api/v1/analytics/summary?period=${period}`);
      expect(res.statusCode).toBe(400);
      const body = res.json<ErrorBody>();
      expect(body.error.code).toBe('BAD_REQUEST');
      expect(body.error.details).toEqual([
        { path: 'query.period', message: expect.stringMatching(/^must be one of /) as string },
      ]);
    });

    it('needs a token', async () => {
      const res = await get('/api/v1/analytics/summary', {});
      expect(res.statusCode).toBe(401);
      expect(res.json<ErrorBody>().error.code).toBe('UNAUTHORIZED');
    });

    it('answers 503 UNAVAILABLE when the store is unreachable', async () => {
      await rig.internals.store.close();
      const res = await get('/api/v1/analytics/summary');
      expect(res.statusCode).toBe(503);
      expect(res.json<ErrorBody>().error.code).toBe('UNAVAILABLE');
    });
  });

  describe('principal scoping (DECISIONS §18)', () => {
    it('an api principal sees only its own sessions, whatever it asks; an admin narrows with ?principal=', async () => {
      await turn(apiHeaders, 'c1', usage(1000, 0)); // default: 150 µ$
      await turn(ALICE, 'a1', usage(100, 0)); // alice: 15 µ$
      const everyone = await json('/api/v1/analytics/summary', adminHeaders);
      expect(everyone.totals).toMatchObject({ turns: 2, messages: 4, cost_usd: 165_000e-9 });

      const mine = await json('/api/v1/analytics/summary', ALICE);
      expect(mine.totals).toMatchObject({ turns: 1, messages: 2, sessions: 1, cost_usd: 15_000e-9, tokens: 100 });
      expect(mine.by_session.map((r) => r.session)).toEqual(['gateway:api@alice:a1']);
      expect(mine.series.reduce((sum, p) => sum + p.turns, 0)).toBe(1);
      expect(mine.series.reduce((sum, p) => sum + p.messages, 0)).toBe(2);
      expect(JSON.stringify(mine)).not.toContain('gateway:api:c1');

      const widened = await json('/api/v1/analytics/summary?principal=default', ALICE);
      expect(widened).toEqual(mine);
      expect(await json('/api/v1/analytics/summary?principal=alice', adminHeaders)).toEqual(mine);
    });
  });
});
