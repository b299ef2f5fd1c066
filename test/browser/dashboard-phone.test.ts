/**
 * Every page of the dashboard on a 390×844 phone (ADR 0020), with data on each: nothing scrolls the page
 * sideways (`document.scrollingElement.scrollWidth` within the viewport) and no visible element reaches past
 * the viewport's edges, except inside a wide table's wrapper, which scrolls by itself and is a labelled region
 * (`.table-wrap`, `role="region"`, an `aria-label`). Each page passes axe-core too. The pages are the links of
 * the navigation, so a new page is checked without changing this test.
 */
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ADMIN_TOKEN,
  expectAccessible,
  openPage,
  screenshot,
  signIn,
  startDashboard,
  unexpectedProblems,
  type Dashboard,
} from '../helpers/dashboard.js';
import { echoReply } from '../helpers/fake-openai.js';

const PHONE = { width: 390, height: 844 };
/** Leaving the logs page ends its live tail: the browser reports the stream's request as aborted. */
const LEFT_LOG_TAIL = /requestfailed net::ERR_ABORTED .*\/api\/v1\/logs\?follow=true/;

/** A word with no place to break, as ids and keys often are. */
const LONG_WORD = `deployment-${'x'.repeat(60)}-checklist`;

/** What sticks out of the viewport on the open page. */
interface Overflow {
  /** `scrollWidth - innerWidth` of the document's scrolling element. */
  page: number;
  /** Visible elements reaching past the viewport's edges, outside a scrollable table wrapper. */
  elements: string[];
}

/**
 * Page-side check, as text (the test's type library has no DOM). An element counts when it is rendered with a
 * size, is not hidden, and is not wholly left of the viewport (the skip link waits there until focused).
 */
const MEASURE = `(() => {
  const width = window.innerWidth;
  const scrolling = document.scrollingElement || document.documentElement;
  const allowed = (element) => {
    const wrapper = element.closest('.table-wrap');
    if (!wrapper) return false;
    const overflow = getComputedStyle(wrapper).overflowX;
    return (overflow === 'auto' || overflow === 'scroll') && wrapper.getAttribute('role') === 'region' &&
      (wrapper.getAttribute('aria-label') || wrapper.getAttribute('aria-labelledby'));
  };
  const elements = [];
  for (const element of document.querySelectorAll('body *')) {
    const rect = element.getBoundingClientRect();
    if (rect.width === 0 || rect.height === 0 || rect.right <= 0) continue;
    const style = getComputedStyle(element);
    if (style.visibility === 'hidden' || style.display === 'none') continue;
    if (rect.left >= -1 && rect.right <= width + 1) continue;
    if (allowed(element)) continue;
    const name = element.tagName.toLowerCase() + (element.id ? '#' + element.id : '') +
      (typeof element.className === 'string' && element.className ? '.' + element.className.trim().split(/\\s+/).join('.') : '');
    elements.push(name + ' [' + Math.round(rect.left) + '..' + Math.round(rect.right) + '] ' +
      (element.textContent || '').trim().slice(0, 40));
  }
  return { page: scrolling.scrollWidth - width, elements: elements.slice(0, 12) };
})()`;

async function measure(page: Page): Promise<Overflow> {
  return page.evaluate<Overflow>(MEASURE);
}

/** Waits until the page has stopped loading (no `Loading…` left) and has laid itself out. */
async function settled(page: Page): Promise<void> {
  await expect.poll(() => page.locator('main .loading').count(), { timeout: 10_000 }).toBe(0);
  await page.waitForTimeout(250);
}

describe('the dashboard on a 390-px phone', () => {
  let dash: Dashboard;
  let page: Page;

  beforeAll(async () => {
    dash = await startDashboard({
      viewport: PHONE,
      config: {
        logs: { level: 'debug' },
        security: { profile: 'standard', rate_limits: { read: 600, write: 120, analytics: 60, lifecycle: 30 } },
      },
    });
    page = dash.page;
    // A price, so the turns below cost something and analytics draws its chart.
    const priced = await dash.admin.PATCH('/api/v1/config', {
      body: { provider: { pricing: { 'gpt-4o-mini': { input_per_mtok: 1000, output_per_mtok: 2000 } } } },
    });
    expect(priced.response.status).toBe(200);

    // Data on every page: sessions and turns with cost, memory, knowledge, tasks, skills and cron jobs, with
    // long words where ids and keys would be.
    dash.fake.always(echoReply);
    for (const chat of ['phone-a', LONG_WORD]) {
      const sent = await dash.call('POST', '/api/v1/message', {
        body: {
          platform: 'api',
          user_id: 'phone-tester',
          chat_id: chat,
          text: `Please check ${LONG_WORD} today.`,
          wait: true,
        },
      });
      expect(sent.status).toBe(200);
    }
    const seeded = await Promise.all([
      dash.admin.POST('/api/v1/memory', {
        body: { content: `Remember ${LONG_WORD} before every release.`, tags: ['ops', LONG_WORD.slice(0, 40)] },
      }),
      dash.admin.POST('/api/v1/knowledge', {
        body: { title: `Runbook ${LONG_WORD}`, content: `Step one of ${LONG_WORD}: page the on-call.`, source: 'api' },
      }),
      dash.admin.POST('/api/v1/tasks', { body: { title: `Review ${LONG_WORD}`, assignee: 'kim' } }),
      dash.admin.POST('/api/v1/skills', {
        body: {
          name: 'release-notes',
          description: `Writes notes for ${LONG_WORD}`,
          instructions: '# Steps\n1. Write.\n',
        },
      }),
      dash.admin.POST('/api/v1/cron', { body: { schedule: '*/15 * * * *', prompt: `Check ${LONG_WORD} status.` } }),
    ]);
    for (const answer of seeded) expect(answer.response.status).toBe(201);
    await signIn(page, dash.url, ADMIN_TOKEN);
  }, 120_000);

  afterAll(async () => {
    await dash?.close();
  });

  it('fits every page: no sideways scroll, nothing past the edges but wide tables in their wrapper; axe passes', async () => {
    // Folded behind the menu button at this width: hidden, but every page is still listed.
    const links = page.getByRole('navigation', { name: 'Pages' }).getByRole('link', { includeHidden: true });
    const routes = (await links.evaluateAll((anchors) => anchors.map((a) => a.getAttribute('href') ?? '')))
      .map((href) => /^#\/([a-z0-9-]+)/.exec(href)?.[1])
      .filter((name): name is string => name !== undefined);
    expect(routes.length).toBeGreaterThanOrEqual(14);

    const failures: string[] = [];
    const check = async (name: string) => {
      const overflow = await measure(page);
      if (overflow.page > 1) failures.push(`${name}: the page scrolls sideways by ${overflow.page} px`);
      for (const element of overflow.elements) failures.push(`${name}: ${element}`);
      await expectAccessible(page);
      await screenshot(page, `phone-all-${name}`);
    };
    for (const name of routes) {
      await openPage(page, name);
      await settled(page);
      await check(name);
    }

    // The states that show more: the daily figures of analytics, the raw views of the configuration.
    await openPage(page, 'analytics');
    await settled(page);
    await page.locator('main').getByText('Daily figures').click();
    await check('analytics-daily-figures');
    await openPage(page, 'config');
    await settled(page);
    for (const view of ['Raw YAML', 'Raw JSON']) {
      await page.locator('main').getByRole('button', { name: view }).click();
      await page.locator('main textarea').waitFor();
      await check(`config-${view.toLowerCase().replace(' ', '-')}`);
    }

    expect(failures).toEqual([]);
    expect(unexpectedProblems(await dash.problems(), [LEFT_LOG_TAIL])).toEqual([]);
  }, 120_000);
});
