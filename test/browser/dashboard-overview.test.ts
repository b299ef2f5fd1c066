/**
 * Overview and Analytics as an operator's console (ADR 0045): Overview answers "is it OK?" (version, uptime,
 * provider and model, why the status is what it is, the turns waiting for a person, charts of today), an echo
 * gateway shows a first-run checklist, each view costs one analytics request, a model without a price says so,
 * and a 429 says when it passes and recovers by itself.
 */
import type { Page, Request } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import {
  ADMIN_TOKEN,
  expectAccessible,
  openPage,
  screenshotsInEveryMode,
  unexpectedProblems,
  useDashboard,
  type Dashboard,
} from '../helpers/dashboard.js';
import { echoReply } from '../helpers/fake-openai.js';

interface Health {
  status: string;
  version: string;
  provider: string;
  components: Record<string, { status: string; message?: string }>;
}

/** Records the analytics requests a page makes (any route of the `analytics` rate group). */
function countAnalytics(page: Page): { urls: string[]; stop: () => void } {
  const urls: string[] = [];
  const listener = (request: Request) => {
    if (/\/api(?:\/v1)?\/analytics(?:[/?]|$)/.test(new URL(request.url()).pathname + '/')) urls.push(request.url());
  };
  page.on('request', listener);
  return { urls, stop: () => page.off('request', listener) };
}

/** The value of the Overview's figure `field` (`data-stat`), once it is no longer the loading `…`. */
async function stat(page: Page, field: string): Promise<string> {
  const value = page.locator(`main [data-stat="${field}"] .value`);
  await expect.poll(async () => (await value.textContent()) ?? '…', { timeout: 10_000 }).not.toBe('…');
  return (await value.textContent()) ?? '';
}

/** Axe finds nothing serious at 1280×800 and on a 390-px phone, where nothing sticks out sideways. */
async function accessibleAtBothSizes(page: Page): Promise<void> {
  await expectAccessible(page);
  await page.setViewportSize({ width: 390, height: 844 });
  try {
    await expectAccessible(page);
    const overflow = await page.evaluate<number>(
      '(document.scrollingElement || document.documentElement).scrollWidth - window.innerWidth',
    );
    expect(overflow).toBeLessThanOrEqual(0);
  } finally {
    await page.setViewportSize({ width: 1280, height: 800 });
  }
}

describe('dashboard Overview on a model provider', () => {
  let dash: Dashboard;
  let page: Page;

  useDashboard(
    {
      viewport: { width: 1280, height: 800 },
      config: {
        // `local` answers with a model no price entry covers.
        agents: { main: {}, local: { provider: { model: 'house-model' } } },
        // The default analytics limit (10 a minute); the other groups roomy, as the scenarios click a lot.
        security: { profile: 'standard', rate_limits: { read: 600, write: 120, analytics: 10, lifecycle: 30 } },
      },
    },
    (started) => {
      dash = started;
      page = started.page;
    },
    ADMIN_TOKEN,
  );

  it('answers "is it OK?": version, uptime, provider, model, why, pending approvals; one analytics request', async () => {
    // Signing in showed Overview already: count from a fresh visit.
    await openPage(page, 'sessions');
    const analytics = countAnalytics(page);
    await openPage(page, 'overview');
    const health = (await dash.call<Health>('GET', '/api/v1/health')).body;
    const main = page.locator('main');

    expect(await stat(page, 'version')).toBe(health.version);
    expect(await stat(page, 'uptime')).toMatch(/^\d+ (s|min \d+ s|h \d+ min|d \d+ h)$/);
    expect(await stat(page, 'provider')).toBe('openai');
    expect(await stat(page, 'model')).toBe('gpt-4o-mini');
    expect(await main.locator('[data-field="provider-model"]').textContent()).toBe(health.provider);

    // Why: every component that is not ok, with its message; none left unexplained.
    const why = main.locator('.health-why');
    await why.waitFor();
    const faults = Object.entries(health.components).filter(([, component]) => component.status !== 'ok');
    if (faults.length === 0) expect(await why.textContent()).toContain('Every component reports ok.');
    for (const [name, component] of faults) {
      const item = why.locator(`[data-component="${name}"]`);
      expect(await item.textContent()).toContain(component.status);
      if (component.message) expect(await item.textContent()).toContain(component.message);
    }
    expect(await main.getByRole('heading', { name: 'Getting started' }).count()).toBe(0);

    // The turns waiting for a person, linking to Approvals.
    expect(await stat(page, 'pending')).toBe('0');
    expect(await main.locator('[data-stat="pending"] a').getAttribute('href')).toBe('#/approvals');

    // Today's figures and charts came from one analytics request.
    expect(await stat(page, 'messages')).toMatch(/^\d+$/);
    await main.getByRole('img', { name: /^Messages and turns, per hour/ }).waitFor();
    expect(analytics.urls).toHaveLength(1);
    expect(analytics.urls[0]).toContain('/api/v1/analytics/summary?period=today');
    analytics.stop();
    await accessibleAtBothSizes(page);
  }, 60_000);

  it('charts messages, turns, tokens and latency after a few turns; a model without a price says so', async () => {
    dash.fake.always(echoReply);
    for (const [chat, agent] of [
      ['ov-a', 'main'],
      ['ov-b', 'main'],
      ['ov-c', 'local'],
    ] as const) {
      const answer = await dash.call<{ status: string }>('POST', '/api/v1/message', {
        body: { platform: 'api', user_id: 'tester', chat_id: chat, agent, text: `hello from ${chat}`, wait: true },
      });
      expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    }

    const analytics = countAnalytics(page);
    await openPage(page, 'sessions');
    await openPage(page, 'overview');
    const main = page.locator('main');
    expect(await stat(page, 'turns')).toBe('3');
    expect(await stat(page, 'messages')).toBe('6');
    expect(Number(await stat(page, 'tokens'))).toBeGreaterThan(0);

    // Each chart has data: its summary names the largest figure; the latency chart has its percentiles.
    const messages = main.getByRole('img', { name: /^Messages and turns, per hour/ });
    expect(await messages.getAttribute('aria-label')).toMatch(/Messages at most [1-6]; Turns at most [1-3]$/);
    const tokens = main.getByRole('img', { name: /^Tokens, per hour/ });
    expect(await tokens.getAttribute('aria-label')).toMatch(/Input tokens at most [1-9]\d*; Output tokens at most/);
    const latency = main.getByRole('img', { name: /^Turn latency, per hour/ });
    expect(await latency.getAttribute('aria-label')).toMatch(/p50 at most \d[\d.]* (ms|s); p99 at most \d/);
    // The table alternative of a chart holds the same figures.
    await main.getByText('Figures: messages and turns').click();
    const rows = main.getByRole('region', { name: 'Messages and turns' }).locator('tbody tr');
    const column = async (n: number) =>
      (await rows.locator(`td:nth-child(${n})`).allTextContents()).reduce((sum, text) => sum + Number(text), 0);
    expect(await column(2)).toBe(6);
    expect(await column(3)).toBe(3);

    // gpt-4o-mini has a price; house-model has none, and the page says where prices are set.
    const byModel = main.getByRole('table', { name: "Today's cost by model" });
    expect(await byModel.locator('[data-no-price="house-model"]').textContent()).toBe(
      '$0.00 — no price for house-model',
    );
    expect(await byModel.locator('[data-no-price="gpt-4o-mini"]').count()).toBe(0);
    expect(await main.locator('.price-hint').textContent()).toContain('provider.pricing');

    expect(analytics.urls).toHaveLength(1);
    analytics.stop();
    await accessibleAtBothSizes(page);
    await screenshotsInEveryMode(page, 'overview-console');
  }, 90_000);

  it('Analytics: one request per view, activity charts beyond cost, "no price for" in the model breakdown', async () => {
    const analytics = countAnalytics(page);
    await openPage(page, 'analytics');
    const main = page.locator('main');
    await main.getByRole('img', { name: /^Messages and turns, per day/ }).waitFor();
    await main.getByRole('img', { name: /^Turn latency, per day/ }).waitFor();
    await main.getByRole('img', { name: /^Tokens, per day/ }).waitFor();
    expect(analytics.urls).toHaveLength(1);
    expect(analytics.urls[0]).toContain('period=week');

    const models = main.locator('table[data-breakdown="model"]');
    expect(await models.locator('[data-no-price="house-model"]').textContent()).toBe(
      '$0.00 — no price for house-model',
    );
    expect(await main.locator('.price-hint').textContent()).toContain('provider.pricing');

    // Today: per hour, one more request; a month: one more.
    await main.getByLabel('Period').selectOption('today');
    await main.getByRole('img', { name: /^Messages and turns, per hour/ }).waitFor();
    await main.getByLabel('Period').selectOption('month');
    await main.getByRole('img', { name: /^Messages and turns, per day/ }).waitFor();
    await expect.poll(() => main.locator('.loading').count()).toBe(0);
    expect(analytics.urls).toHaveLength(3);
    analytics.stop();
    expect(await main.locator('.error-box').count()).toBe(0);
    await accessibleAtBothSizes(page);
    await screenshotsInEveryMode(page, 'analytics-console');
    expect(unexpectedProblems(await dash.problems())).toEqual([]);
  }, 60_000);
});

describe('dashboard Overview on an echo gateway with a tiny analytics limit', () => {
  let dash: Dashboard;
  let page: Page;

  useDashboard(
    {
      viewport: { width: 1280, height: 800 },
      config: {
        provider: { type: 'echo' },
        security: { profile: 'standard', rate_limits: { read: 600, write: 120, analytics: 2, lifecycle: 30 } },
      },
    },
    (started) => {
      dash = started;
      page = started.page;
    },
    ADMIN_TOKEN,
  );

  it('explains "degraded" with a first-run checklist', async () => {
    await openPage(page, 'overview');
    const main = page.locator('main');
    expect(await stat(page, 'provider')).toBe('echo');
    const checklist = main.getByRole('region', { name: 'Getting started' });
    await checklist.waitFor();
    const text = (await checklist.textContent()) ?? '';
    expect(text).toContain('OPENAI_API_KEY');
    expect(text).toContain('provider.type');
    expect(text).toContain('degraded');
    for (const [name, href] of [
      ['Chat', '#/chat'],
      ['Channels', '#/channels'],
      ['/api/docs', '/api/docs'],
    ]) {
      expect(await checklist.getByRole('link', { name, exact: true }).getAttribute('href')).toBe(href);
    }
    // The status's reason is the set-up, not an unexplained word.
    expect(await main.locator('.overview-status').textContent()).toMatch(/degraded/);
    expect(await main.locator('.health-why').textContent()).not.toBe('');
    await accessibleAtBothSizes(page);
    await screenshotsInEveryMode(page, 'overview-echo');
  }, 60_000);

  it('a 429 says "retry in N s" and the page recovers by itself once N s have passed', async () => {
    await openPage(page, 'channels');
    // Use up the minute's analytics requests of this token (two). The gateway is another process on the real
    // clock: a window about to end is waited out first, so the page surely meets the 429.
    const useUp = async (): Promise<number> => {
      for (let i = 0; i < 3; i++) {
        const answer = await dash.call('GET', '/api/v1/analytics/usage');
        if (answer.status === 429) return Number(answer.headers.get('retry-after'));
      }
      return 0;
    };
    let retryAfter = await useUp();
    if (retryAfter > 0 && retryAfter < 6) {
      await new Promise((resolve) => setTimeout(resolve, (retryAfter + 1) * 1000));
      retryAfter = await useUp();
    }
    expect(retryAfter).toBeGreaterThanOrEqual(6);

    await openPage(page, 'overview');
    const main = page.locator('main');
    const notice = main.locator('.error-box', { hasText: 'too many requests' });
    await notice.waitFor();
    const noticeText = (await notice.textContent()) ?? '';
    const shown = /retry in (\d+) s/.exec(noticeText);
    expect(shown, noticeText).not.toBeNull();
    expect(Math.abs(Number(shown?.[1]) - retryAfter)).toBeLessThanOrEqual(2);
    expect(await main.locator('[data-stat="messages"] .value').textContent()).toBe('…');

    // No click: once the window has passed, the read runs again and the figures show.
    await expect
      .poll(() => main.locator('[data-stat="messages"] .value').textContent(), {
        timeout: (retryAfter + 15) * 1000,
        interval: 500,
      })
      .toBe('0');
    expect(await notice.count()).toBe(0);
    await expectAccessible(page);
    expect(unexpectedProblems(await dash.problems(), [/429/])).toEqual([]);
  }, 120_000);
});
