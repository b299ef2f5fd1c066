/**
 * The dashboard's insight pages in Chromium (ADR 0020, DECISIONS §9): analytics and config. Analytics shows
 * the spend of turns made through the API as a uPlot chart (day-granular x axis, y axis as wide as its labels)
 * and as breakdown tables, live; config changes live keys through the form generated from the schema (enums
 * as selects, booleans as checkboxes; validate, the list of changes, apply for this run), edits the raw YAML
 * view, and shows a change made through the API without a reload (the `config` topic of the live feed). Both
 * pass axe-core and run under the dashboard's CSP without a violation. Screenshots go into
 * `GATEHOUSE_SCREENSHOTS` when set.
 */
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import {
  chooseDayTicks,
  dayLabel,
  localDate,
  localDaySeconds,
  moneyLabel,
  type TickUnit,
} from '../../web/src/pages/analytics/chart-axes.js';
import {
  ADMIN_TOKEN,
  API_TOKEN,
  expectAccessible,
  screenshotsInEveryMode,
  openPage,
  signIn,
  useDashboard,
  unexpectedProblems,
  type Dashboard,
} from '../helpers/dashboard.js';
import { echoReply } from '../helpers/fake-openai.js';

/** The analytics page refreshes on finished turns at most every 20 s. */
const LIVE_TIMEOUT = 30_000;
/** The config page follows the live feed's `config` topic (its fallback refresh is every 30 s). */
const CONFIG_LIVE_TIMEOUT = 10_000;
/** The role probe of an api token (admin-only GET /logs) is refused on purpose. */
const ROLE_PROBE_403 = /console .*403.*\/api\/v1\/logs\?limit=1/;
/** The scenario provokes a refused PATCH /config (a key that needs a restart). */
const PROVOKED_400 = /console .*status of 400.*\/api\/v1\/config$/;

/** `count` consecutive days ending on `last` (`YYYY-MM-DD`). */
function daysUntil(last: string, count: number): string[] {
  const end = Date.parse(`${last}T00:00:00Z`);
  return Array.from({ length: count }, (_, i) =>
    new Date(end - (count - 1 - i) * 86_400_000).toISOString().slice(0, 10),
  );
}

describe('the cost chart axes', () => {
  const room = (perUnit: Record<TickUnit, number>) => (unit: TickUnit) => perUnit[unit];

  it('labels every day when there is room, and each label names a different day', () => {
    const week = daysUntil('2026-11-23', 7);
    const ticks = chooseDayTicks(week, room({ day: 20, month: 10, year: 10 }));
    expect(ticks).toEqual({ unit: 'day', dates: week });
    const labels = ticks.dates.map((date) => dayLabel(date, ticks.unit));
    expect(new Set(labels).size).toBe(7);
    // A calendar day is drawn at the browser's midnight of that date and reads back as the same date.
    for (const date of week) expect(localDate(localDaySeconds(date))).toBe(date);
  });

  it('labels fewer days when crowded, counted back from the newest, then months', () => {
    const month = daysUntil('2026-11-23', 30);
    const sparse = chooseDayTicks(month, room({ day: 5, month: 5, year: 5 }));
    expect(sparse.unit).toBe('day');
    expect(sparse.dates.at(-1)).toBe('2026-11-23');
    expect(sparse.dates.length).toBeLessThanOrEqual(5);
    expect(sparse.dates).toEqual(['2026-10-26', '2026-11-02', '2026-11-09', '2026-11-16', '2026-11-23']);

    const years = daysUntil('2026-11-23', 800);
    const long = chooseDayTicks(years, room({ day: 6, month: 6, year: 6 }));
    expect(long.unit).toBe('month');
    expect(long.dates.every((date) => date.endsWith('-01'))).toBe(true);
    expect(long.dates.length).toBeLessThanOrEqual(6);
    expect(new Set(long.dates.map((date) => dayLabel(date, 'month'))).size).toBe(long.dates.length);
  });

  it('gives dollar labels the decimals of their step, so none repeat', () => {
    expect([0, 0.005, 0.01, 0.015].map((v) => moneyLabel(v, 0.005))).toEqual(['$0.000', '$0.005', '$0.010', '$0.015']);
    expect([0, 2.5, 5].map((v) => moneyLabel(v, 2.5))).toEqual(['$0.00', '$2.50', '$5.00']);
    expect([0, 50, 1000].map((v) => moneyLabel(v, 50))).toEqual(['$0', '$50', '$1,000']);
    expect(moneyLabel(0.0000002, 0.0000001)).toBe('$0.0000002');
  });
});

describe('dashboard insight pages in Chromium', () => {
  let dash: Dashboard;
  let page: Page;

  useDashboard(
    {
      viewport: { width: 1280, height: 800 },
      // Both pages and the overview read analytics; the scenarios change the configuration several times.
      config: {
        security: { profile: 'standard', rate_limits: { read: 600, write: 120, analytics: 60, lifecycle: 30 } },
      },
    },
    (started) => {
      dash = started;
      page = started.page;
    },
    ADMIN_TOKEN,
  );

  it('analytics: spend of API turns in the chart and the breakdowns, live; period picker; empty states', async () => {
    // A price that makes each turn of the fake provider (10 + 5 tokens) cost $0.02.
    const priced = await dash.admin.PATCH('/api/v1/config', {
      body: { provider: { pricing: { 'gpt-4o-mini': { input_per_mtok: 1000, output_per_mtok: 2000 } } } },
    });
    expect(priced.response.status).toBe(200);

    await openPage(page, 'analytics');
    const main = page.locator('main');
    await main.getByText('Nothing spent in this period.').waitFor();
    await main.getByText('No model was called in this period.').waitFor();
    await expectAccessible(page);

    dash.fake.always(echoReply);
    const events: string[] = [];
    for (const chat of ['insight-a', 'insight-b']) {
      const answer = await dash.call<{ event_id: string }>('POST', '/api/v1/message', {
        body: { platform: 'api', user_id: 'tester', chat_id: chat, text: `hello from ${chat}`, wait: false },
      });
      expect(answer.status).toBe(202);
      events.push(answer.body.event_id);
    }
    // The turns finish.
    for (const id of events) {
      await expect
        .poll(
          async () =>
            (await dash.call<{ status: string }>('GET', `/api/v1/turns/${encodeURIComponent(id)}`)).body.status,
          { timeout: LIVE_TIMEOUT, interval: 250 },
        )
        .toBe('completed');
    }

    // The finished turns refresh the open page.
    await main.locator('.cost-chart canvas').first().waitFor({ timeout: LIVE_TIMEOUT });
    await expect
      .poll(() => main.locator('[data-field="total"]').textContent(), { timeout: LIVE_TIMEOUT })
      .toBe('$0.04');
    const models = main.locator('table[data-breakdown="model"]');
    await expect.poll(() => models.textContent()).toContain('gpt-4o-mini');
    expect(await models.textContent()).toContain('$0.04');
    expect(await main.locator('table[data-breakdown="channel"]').textContent()).toContain('api');
    const sessions = main.locator('table[data-breakdown="session"] tbody tr');
    expect(await sessions.count()).toBe(2);
    expect(await sessions.allTextContents()).toEqual([
      expect.stringContaining('$0.02'),
      expect.stringContaining('$0.02'),
    ]);
    expect(await main.locator('.stat', { hasText: 'Messages' }).locator('.value').textContent()).not.toBe('0');

    // uPlot's stylesheet is a bundled file: no inline style element, and (below) no CSP violation.
    expect(await page.evaluate('document.querySelectorAll("style").length')).toBe(0);
    expect(await page.evaluate('getComputedStyle(document.querySelector(".uplot")).fontFamily')).not.toBe('');

    // The API says the same.
    const cost = await dash.admin.GET('/api/v1/analytics/cost', { params: { query: { period: 'week' } } });
    expect(cost.data?.total_usd).toBeCloseTo(0.04, 6);
    expect(await main.getByRole('img', { name: /Cost per day .* \$0\.04 in all/ }).count()).toBe(1);

    // Another period.
    await main.getByLabel('Period').selectOption('all');
    await expect.poll(() => main.locator('[data-field="total"]').textContent()).toBe('$0.04');
    await main.locator('.cost-chart canvas').first().waitFor();
    await expectAccessible(page);
    await screenshotsInEveryMode(page, 'analytics');
    expect(unexpectedProblems(await dash.problems())).toEqual([]);
  }, 90_000);

  it('config: enums as selects, live keys changed through the form and the YAML view, applied for this run; API changes show live', async () => {
    await openPage(page, 'config');
    const main = page.locator('main');
    // A section's name is its key, then its restart badge if it has one.
    const group = (name: string) => main.getByRole('group', { name: new RegExp(`^${name}(?: |$)`) });
    const agent = group('agent');
    const iterations = agent.getByLabel('max_tool_iterations');
    await iterations.waitFor();
    expect(await iterations.inputValue()).toBe('8');
    await expectAccessible(page);

    // The schema's enums are selects of their words; its booleans are checkboxes.
    const selects: Array<[string, string, string[]]> = [
      ['logs', 'level', ['debug', 'info', 'warning', 'error']],
      ['security', 'profile', ['minimal', 'standard', 'extended']],
      ['provider', 'type', ['echo', 'openai', 'anthropic']],
      ['auth', 'mode', ['open', 'allowlist', 'pairing']],
    ];
    for (const [section, key, words] of selects) {
      const select = group(section).getByRole('combobox', { name: new RegExp(`^${key}`) });
      expect(await select.locator('option').allTextContents(), `${section}.${key}`).toEqual(words);
    }
    expect(
      await group('logs')
        .getByRole('combobox', { name: /^level/ })
        .inputValue(),
    ).toBe('warning');
    expect(await group('provider').getByRole('combobox', { name: /^type/ }).inputValue()).toBe('openai');
    const loopback = group('auth').getByRole('checkbox', { name: /^loopback_trust/ });
    expect(await loopback.isChecked()).toBe(true);
    expect(
      await group('webhook')
        .getByRole('checkbox', { name: /^enabled/ })
        .isChecked(),
    ).toBe(false);

    // Restart-only keys are marked before any change, from the server's list of live keys: whole sections
    // once, mixed sections key by key; the live ones carry no mark, and gateway.auth says it is file-only.
    expect(await main.getByRole('group', { name: 'storage needs restart' }).count()).toBe(1);
    expect(await main.getByRole('group', { name: 'auth file and restart only' }).count()).toBe(1);
    expect(await group('logs').getByRole('combobox', { name: 'level' }).count()).toBe(1);
    expect(await group('agent').getByLabel('max_concurrent_turns needs restart').count()).toBe(1);

    // A bad value: refused at the field by validation.
    await iterations.fill('0');
    await main.getByRole('button', { name: 'Validate' }).click();
    await main.getByText('Not valid: see the marked fields.').waitFor();
    await expect.poll(() => iterations.getAttribute('aria-invalid')).toBe('true');
    expect(await main.locator(`[id="cfg-agent-max_tool_iterations-error"]`).textContent()).not.toBe('');

    // Good ones, one through a select: validated, listed old → new, applied for this run.
    await iterations.fill('5');
    await group('logs')
      .getByRole('combobox', { name: /^level/ })
      .selectOption('info');
    await main.getByRole('button', { name: 'Validate' }).click();
    await main.getByText('Valid: ready to apply.').waitFor();
    expect(await main.locator('li[data-path="agent.max_tool_iterations"]').textContent()).toContain('8 → 5');
    expect(await main.locator('li[data-path="logs.level"]').textContent()).toContain('"warning" → "info"');
    expect(await main.getByRole('list', { name: 'Changed keys' }).locator('li').count()).toBe(2);
    await expectAccessible(page);
    await screenshotsInEveryMode(page, 'config');
    await main.getByRole('button', { name: 'Apply for this run' }).click();
    await main.getByText(/Applied for this run \(not saved\)\. In effect now: .*agent\.max_tool_iterations/).waitFor();
    const after = await dash.admin.GET('/api/v1/config');
    expect(after.data?.agent.max_tool_iterations).toBe(5);
    expect(after.data?.logs.level).toBe('info');
    expect(await main.getByText('No changes.').count()).toBe(1);

    // A key that needs a restart cannot be applied for this run: the refusal shows at the field, marked.
    const timeout = group('provider').getByLabel(/^timeout_seconds/);
    await timeout.fill('45');
    await main.getByRole('button', { name: 'Validate' }).click();
    await main.getByText('Valid: ready to apply.').waitFor();
    await main.getByRole('button', { name: 'Apply for this run' }).click();
    await expect.poll(() => timeout.getAttribute('aria-invalid')).toBe('true');
    expect(await main.locator('[id="cfg-provider-timeout_seconds-error"]').textContent()).toContain('restart');
    await group('provider').getByText('needs restart').first().waitFor();
    await main.getByRole('button', { name: 'Discard changes' }).click();
    expect((await dash.admin.GET('/api/v1/config')).data?.provider.timeout_seconds).toBe(30);

    // Changed through the API: the open page shows it at once (the live feed's config topic).
    const budget = group('budget').getByLabel(/^daily_usd/);
    expect(await budget.inputValue()).toBe('');
    const patched = await dash.admin.PATCH('/api/v1/config', { body: { budget: { daily_usd: 7.5 } } });
    expect(patched.response.status).toBe(200);
    await expect.poll(() => budget.inputValue(), { timeout: CONFIG_LIVE_TIMEOUT }).toBe('7.5');

    // The raw YAML view shows the same configuration, secrets as "***", and edits like the form.
    await main.getByRole('button', { name: 'Raw YAML' }).click();
    const yamlBox = main.getByLabel(/^Configuration \(YAML\)/);
    await expect.poll(async () => (await yamlBox.inputValue()).length).toBeGreaterThan(0);
    const text = await yamlBox.inputValue();
    const yaml = parseYaml(text) as {
      agent: { max_tool_iterations: number };
      budget: { daily_usd: number };
      gateway: { auth: { admin_tokens: string[] } };
    };
    expect(yaml.agent.max_tool_iterations).toBe(5);
    expect(yaml.budget.daily_usd).toBe(7.5);
    expect(yaml.gateway.auth.admin_tokens).toEqual(['***']);
    await yamlBox.fill(text.replace(/max_tool_iterations: 5/, 'max_tool_iterations: 6'));
    await expect.poll(() => main.locator('li[data-path="agent.max_tool_iterations"]').textContent()).toContain('5 → 6');
    expect(await main.getByRole('list', { name: 'Changed keys' }).locator('li').count()).toBe(1);
    await yamlBox.fill(`${text}\n  : not: [valid`);
    await expect.poll(() => yamlBox.getAttribute('aria-invalid')).toBe('true');
    expect(await main.locator('[id="config-raw-error"]').textContent()).toMatch(/^Not valid YAML/);
    await expect.poll(() => main.getByRole('button', { name: 'Validate' }).isDisabled()).toBe(true);
    await expectAccessible(page);
    await main.getByRole('button', { name: 'Discard changes' }).click();
    expect(await main.getByText('No changes.').count()).toBe(1);

    // The raw JSON view too; no secret is ever on the page.
    await main.getByRole('button', { name: 'Raw JSON' }).click();
    const json = JSON.parse(await main.getByLabel(/^Configuration \(JSON\)/).inputValue()) as {
      agent: { max_tool_iterations: number };
      budget: { daily_usd: number };
    };
    expect(json.agent.max_tool_iterations).toBe(5);
    expect(json.budget.daily_usd).toBe(7.5);
    const html = await page.content();
    expect(html).not.toContain(ADMIN_TOKEN);
    expect(html).not.toContain(API_TOKEN);
    await expectAccessible(page);
    expect(unexpectedProblems(await dash.problems(), [PROVOKED_400])).toEqual([]);

    // An api token reads the configuration and is told it cannot change it.
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.goto('about:blank');
    await signIn(page, dash.url, API_TOKEN, 'config');
    await main.getByText('Changing it needs an admin token').waitFor();
    expect(await main.getByRole('button', { name: 'Validate' }).count()).toBe(0);
    expect(
      await group('logs')
        .getByRole('combobox', { name: /^level/ })
        .isDisabled(),
    ).toBe(true);
    await expectAccessible(page);
    expect(unexpectedProblems(await dash.problems(), [PROVOKED_400, ROLE_PROBE_403])).toEqual([]);
  }, 90_000);
});
