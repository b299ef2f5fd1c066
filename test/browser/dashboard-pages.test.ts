/**
 * An operator's console in Chromium: the sessions page names sessions by title (the key on hover, never
 * broken inside a word), searches their messages, and opens `#/sessions?key=…&turn=…` links at the turn;
 * tasks and cron open `?id=` links at the item; the config page has a section index, a key filter, focus on
 * the first invalid field and its outcome next to its buttons; skills can be added from the page (an api token
 * is told why not); cron says each schedule in plain English and why a job will not run (Trigger disabled
 * with that reason); the pairing field and its button share a line. At 1280×800, the sessions and pairing
 * layouts also at 390 px, axe-clean.
 */
import type { Locator, Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { describeSchedule } from '../../web/src/pages/cron/describe.js';
import { echoReply } from '../helpers/fake-openai.js';
import {
  ADMIN_TOKEN,
  API_TOKEN,
  expectAccessible,
  fieldError,
  openPage,
  screenshotsInEveryMode,
  signIn,
  unexpectedProblems,
  useDashboard,
  withFailureScreenshot,
  type Dashboard,
} from '../helpers/dashboard.js';

/** Live changes arrive through the WebSocket feed. */
const LIVE_TIMEOUT = 10_000;
/** The role probe of an api token (admin-only GET /logs) is the one refused request an api sign-in makes. */
const ROLE_PROBE_403 = /console .*403.*\/api\/v1\/logs\?limit=1/;
/** The refusals the scenarios provoke on purpose (Chromium logs every 4xx answer). */
const PROVOKED = [/console .*status of 400.*\/api\/v1\/skills$/];

const LONG_QUESTION = 'Please summarise the quarterly report for the northern region and list every open risk';

describe('the cron schedule in plain English', () => {
  it('describes the common forms', () => {
    expect(describeSchedule('0 9 * * *')).toBe('Every day at 09:00 UTC');
    expect(describeSchedule('30 8 * * 1-5')).toBe('On weekdays at 08:30 UTC');
    expect(describeSchedule('0 18 * * 0,6')).toBe('On weekends at 18:00 UTC');
    expect(describeSchedule('0 9 * * MON,fri')).toBe('On Monday and Friday at 09:00 UTC');
    expect(describeSchedule('*/15 * * * *')).toBe('Every 15 minutes');
    expect(describeSchedule('* * * * *')).toBe('Every minute');
    expect(describeSchedule('0 * * * *')).toBe('Every hour, on the hour');
    expect(describeSchedule('5 * * * *')).toBe('Every hour at minute 5');
    expect(describeSchedule('0 */6 * * *')).toBe('Every 6 hours');
    expect(describeSchedule('0 9,17 * * *')).toBe('Every day at 09:00 and 17:00 UTC');
    expect(describeSchedule('0 0 1 * *')).toBe('On the 1st of the month at 00:00 UTC');
    expect(describeSchedule('0 12 2,22,23 * *')).toBe('On the 2nd, 22nd and 23rd of the month at 12:00 UTC');
    expect(describeSchedule('0 0 1 1 *')).toBe('On the 1st at 00:00 UTC in January');
    expect(describeSchedule('0 7 * 6-8 *')).toBe('At 07:00 UTC in June, July and August');
    expect(describeSchedule('0 7 * * 7')).toBe('On Sunday at 07:00 UTC');
  });

  it('answers null for what it does not know, so the page shows the expression alone', () => {
    for (const schedule of [
      '*/5 9-17 * * 1-5',
      '0 9 1 * 1',
      '0 0-23 * * *',
      '0 25 * * *',
      '@daily',
      '0 9 * *',
      'a b c d e',
    ]) {
      expect(describeSchedule(schedule), schedule).toBeNull();
    }
  });
});

/**
 * How many lines the visible text of an element takes (text in visually hidden parts not counted), measured in
 * the page (as text: the test's type library has no DOM).
 */
const LINES = `
  const tops = new Set();
  const walker = document.createTreeWalker(element, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    if (node.parentElement && node.parentElement.closest('.visually-hidden')) continue;
    if (!(node.textContent || '').trim()) continue;
    const range = document.createRange();
    range.selectNodeContents(node);
    for (const rect of range.getClientRects()) if (rect.width > 0) tops.add(Math.round(rect.top));
  }
  return tops.size;`;

/** A function of `element` run in the page, built from text: Playwright sends its source there, where the DOM is. */
function inPage<R>(body: string): (element: unknown) => R {
  // eslint-disable-next-line @typescript-eslint/no-implied-eval
  return new Function('element', body) as (element: unknown) => R;
}

async function linesOf(locator: Locator): Promise<number> {
  return locator.evaluate(inPage<number>(LINES));
}

/** The element that has focus: its id, or the `data-*` that names it. */
function focused(page: Page): Promise<string> {
  return page.evaluate<string>(`(() => {
    const element = document.activeElement;
    if (!element) return '';
    return element.id || element.dataset.eventId || element.dataset.cronId || element.dataset.id || element.tagName;
  })()`);
}

/** Scrolls the page to its top. */
function scrollTop(page: Page): Promise<void> {
  return page.evaluate<void>('window.scrollTo(0, 0)');
}

/** True when `locator`'s box lies within the viewport. */
async function inViewport(page: Page, locator: Locator): Promise<boolean> {
  const box = await locator.boundingBox();
  const size = page.viewportSize();
  if (!box || !size) return false;
  return box.y >= 0 && box.y + box.height <= size.height && box.x >= 0 && box.x + box.width <= size.width;
}

describe('an operator’s console in Chromium', () => {
  let dash: Dashboard;
  let page: Page;
  let longSession: string;
  let invoiceSession: string;
  let invoiceTurn: string;

  useDashboard(
    {
      viewport: { width: 1280, height: 800 },
      config: { agents: { main: {}, assistant: { system_prompt: 'You assist.' } } },
    },
    async (started) => {
      dash = started;
      page = started.page;
      dash.fake.always(echoReply);
      const say = async (chat: string, text: string) => {
        const sent = await dash.call<{ session_key: string; event_id: string }>('POST', '/api/v1/message', {
          body: { platform: 'web', user_id: 'operator', chat_id: chat, text, agent: 'assistant', wait: true },
        });
        expect(sent.status).toBe(200);
        return sent.body;
      };
      longSession = (await say('quarterly-review-with-a-long-chat-identifier', LONG_QUESTION)).session_key;
      invoiceSession = (await say('billing', 'Where is my invoice?')).session_key;
      for (let i = 0; i < 12; i++) await say('billing', `Filler question number ${i}`);
      invoiceTurn = (await say('billing', 'Please resend invoice INV-42 to accounts')).event_id;
    },
    ADMIN_TOKEN,
  );

  it('sessions: titles with the key on hover, never broken inside a word; search; deep links to a turn', async () => {
    await withFailureScreenshot(page, 'pages-sessions', async () => {
      await openPage(page, 'sessions');
      const main = page.locator('main');
      const row = main.locator(`tr[data-session-id="${longSession}"]`);
      const title = row.locator('.session-title');
      await title.waitFor();
      expect((await title.textContent())?.startsWith('Please summarise the quarterly report')).toBe(true);
      expect((await title.textContent())?.endsWith('…')).toBe(true);
      expect(await title.getAttribute('title')).toBe(longSession);
      const key = row.locator('.session-key');
      expect(await key.getAttribute('title')).toBe(longSession);
      expect(await linesOf(key)).toBe(1);
      const agent = row.locator('[data-field="agent"]');
      expect((await agent.textContent())?.trim()).toMatch(/assistant$/);
      expect(await linesOf(agent)).toBe(1);
      await expectAccessible(page);

      // Search in message text: the one session mentioning it, its newest match, a link to that turn.
      await main.getByLabel('Search messages').fill('invoice');
      await expect.poll(() => main.locator('tbody tr[data-session-id]').count()).toBe(1);
      const found = main.locator(`tr[data-session-id="${invoiceSession}"]`);
      expect(await found.locator('.session-match mark').first().textContent()).toMatch(/invoice/i);
      await main.getByRole('status').filter({ hasText: 'mentions' }).waitFor();
      await expectAccessible(page);
      await found.getByRole('link', { name: /Show in session/ }).click();
      const marked = main.locator(`tr.turn-marked[data-event-id="${invoiceTurn}"]`).first();
      await marked.waitFor();
      expect(await marked.getAttribute('aria-current')).toBe('true');
      await expect.poll(() => focused(page)).toBe(invoiceTurn);
      expect(await inViewport(page, marked)).toBe(true);
      expect(page.url()).toContain(`turn=${invoiceTurn}`);
      await expectAccessible(page);

      // A link from elsewhere: a fresh load of `#/sessions?key=…&turn=…` opens the session at that turn.
      await scrollTop(page);
      await openPage(page, 'overview');
      const link = `#/sessions?key=${encodeURIComponent(invoiceSession)}&turn=${encodeURIComponent(invoiceTurn)}`;
      await page.evaluate(`location.hash = ${JSON.stringify(link)}`);
      await main.getByRole('heading', { level: 2, name: /Where is my invoice\?/ }).waitFor();
      await main.locator(`tr.turn-marked[data-event-id="${invoiceTurn}"]`).first().waitFor();
      await expect.poll(() => focused(page)).toBe(invoiceTurn);
      // `key` alone opens the session with nothing marked.
      await page.evaluate(`location.hash = ${JSON.stringify(`#/sessions?key=${encodeURIComponent(longSession)}`)}`);
      await main.getByRole('heading', { level: 2, name: /Please summarise/ }).waitFor();
      expect(await main.locator('tr.turn-marked').count()).toBe(0);
      // The history's role is a word: never "assist ant".
      const role = main.locator('td.history-role', { hasText: 'assistant' }).first();
      await role.waitFor();
      // The history may still be replacing the previous session's rows: the count is read once it settles.
      await expect.poll(() => linesOf(role)).toBe(1);
      await screenshotsInEveryMode(page, 'pages-sessions');

      // A phone: the key stays on one line, the agent's name whole, nothing sticks out sideways.
      await page.setViewportSize({ width: 390, height: 844 });
      try {
        await openPage(page, 'sessions');
        await row.locator('.session-key').waitFor();
        expect(await linesOf(row.locator('.session-key'))).toBe(1);
        expect(await linesOf(row.locator('[data-field="agent"]'))).toBe(1);
        expect(await linesOf(page.locator('main td.history-role', { hasText: 'assistant' }).first())).toBe(1);
        // The title and key fit the list's width (no sideways scrolling of the sessions table).
        const list = row.locator('xpath=ancestor::table');
        const wrap = await list.evaluate(
          inPage<{ table: number; wrapper: number }>(
            'return { table: element.scrollWidth, wrapper: element.parentElement.clientWidth };',
          ),
        );
        expect(wrap.table).toBeLessThanOrEqual(wrap.wrapper);
        const overflow = await page.evaluate<number>(
          '(document.scrollingElement || document.documentElement).scrollWidth - window.innerWidth',
        );
        expect(overflow).toBeLessThanOrEqual(0);
        await expectAccessible(page);
      } finally {
        await page.setViewportSize({ width: 1280, height: 800 });
      }
    });
  });

  it('tasks and cron: `?id=` links open the item, marked and focused', async () => {
    await withFailureScreenshot(page, 'pages-links', async () => {
      const created = await dash.admin.POST('/api/v1/tasks', { body: { title: 'Linked task to find' } });
      const taskId = created.data?.task.id ?? '';
      expect(taskId).not.toBe('');
      await openPage(page, 'overview');
      await page.evaluate(`location.hash = ${JSON.stringify(`#/tasks?id=${taskId}`)}`);
      const card = page.locator(`main li.task-card[data-id="${taskId}"]`);
      await card.waitFor();
      expect(await card.getAttribute('aria-current')).toBe('true');
      await expect.poll(() => focused(page)).toBe(taskId);
      await expectAccessible(page);

      const job = await dash.admin.POST('/api/v1/cron', { body: { schedule: '*/30 * * * *', prompt: 'Linked job.' } });
      const jobId = job.data?.id ?? '';
      await page.evaluate(`location.hash = ${JSON.stringify(`#/cron?id=${jobId}`)}`);
      const jobCard = page.locator(`main li.cron-job[data-cron-id="${jobId}"]`);
      await jobCard.waitFor();
      expect(await jobCard.getAttribute('aria-current')).toBe('true');
      await expect.poll(() => focused(page)).toBe(jobId);
      await expectAccessible(page);
    });
  });

  it('cron: the schedule in plain English; an unauthorised job says why it will not run, Trigger disabled', async () => {
    await withFailureScreenshot(page, 'pages-cron', async () => {
      const made = await dash.admin.POST('/api/v1/cron', {
        body: { schedule: '0 9 * * *', prompt: 'Send the morning digest.' },
      });
      const id = made.data?.id ?? '';
      await openPage(page, 'cron');
      const card = page.locator(`main li.cron-job[data-cron-id="${id}"]`);
      await card.waitFor();
      expect(await card.locator('.cron-plain').textContent()).toBe('Every day at 09:00 UTC');

      // Not authorised: no next run, the reason instead; Trigger disabled and described by it.
      expect(await card.locator('dt', { hasText: 'Next run' }).count()).toBe(0);
      const reason = card.locator('.cron-blocked');
      expect(await reason.textContent()).toMatch(/^Not authorised: it will not run/);
      const trigger = card.getByRole('button', { name: `Trigger job ${id} now` });
      expect(await trigger.isDisabled()).toBe(true);
      expect(await trigger.getAttribute('aria-describedby')).toBe(await reason.getAttribute('id'));
      await expectAccessible(page);
      await screenshotsInEveryMode(page, 'pages-cron');

      // Authorised (through the API, seen live): the next run shows and Trigger works.
      expect(
        (await dash.admin.POST('/api/v1/cron/{cron_id}/authorize', { params: { path: { cron_id: id } } })).response
          .status,
      ).toBe(200);
      await card.locator('dt', { hasText: 'Next run' }).waitFor({ timeout: LIVE_TIMEOUT });
      expect(await card.locator('.cron-blocked').count()).toBe(0);
      expect(await trigger.isDisabled()).toBe(false);
    });
  });

  it('config: a section index, a key filter, focus on the first invalid field, the outcome by the buttons', async () => {
    await withFailureScreenshot(page, 'pages-config', async () => {
      await openPage(page, 'config');
      const main = page.locator('main');
      const index = main.getByRole('navigation', { name: 'Config sections' });
      await index.waitFor();
      const names = await index.getByRole('link').allTextContents();
      for (const name of ['agent', 'provider', 'storage', 'logs']) expect(names).toContain(name);
      await expectAccessible(page);

      // A section link brings its fieldset to the top and its first control takes focus.
      await index.getByRole('link', { name: 'logs', exact: true }).click();
      const logs = main.getByRole('group', { name: /^logs(?: |$)/ });
      await expect.poll(async () => (await logs.boundingBox())?.y ?? -1).toBeLessThan(120);
      expect(await page.evaluate<boolean>("document.activeElement?.closest('#cfg-logs') != null")).toBe(true);
      expect(page.url()).toMatch(/#\/config$/);

      // The filter narrows by key, and by description (which then shows).
      const filter = main.getByLabel('Filter keys');
      await filter.fill('max_tool');
      const agent = main.getByRole('group', { name: /^agent(?: |$)/ });
      const iterations = agent.getByLabel('max_tool_iterations');
      await iterations.waitFor();
      expect(await main.getByRole('group', { name: /^storage(?: |$)/ }).count()).toBe(0);
      expect(await agent.getByLabel(/^max_concurrent_turns/).count()).toBe(0);
      expect(await index.getByRole('link').allTextContents()).not.toContain('storage');
      await filter.fill('rounds of tool calls');
      await iterations.waitFor();
      expect(await agent.locator('.config-about').first().textContent()).toMatch(/Rounds of tool calls/);
      expect(await main.locator('input, select').count()).toBeLessThan(6);
      await expectAccessible(page);

      // Invalid: focus moves to the field, and the verdict shows on screen by the buttons.
      await iterations.fill('0');
      await filter.fill('');
      await scrollTop(page);
      await main.getByRole('button', { name: 'Validate' }).click();
      const verdict = main.getByText('Not valid: see the marked fields.');
      await verdict.waitFor();
      expect(await fieldError(iterations)).not.toBe('');
      await expect.poll(() => focused(page)).toBe('cfg-agent-max_tool_iterations');
      expect(await inViewport(page, iterations)).toBe(true);
      expect(await inViewport(page, verdict)).toBe(true);
      expect(await inViewport(page, main.getByRole('button', { name: 'Validate' }))).toBe(true);
      await main.getByRole('list', { name: 'Fields with problems' }).getByRole('link').first().waitFor();
      await expectAccessible(page);

      // Valid and applied: the outcome shows next to the buttons, on screen, wherever the page is scrolled.
      await iterations.fill('6');
      await main.getByRole('button', { name: 'Validate' }).click();
      await main.getByText('Valid: ready to apply.').waitFor();
      await scrollTop(page);
      await main.getByRole('button', { name: 'Apply for this run' }).click();
      const outcome = main.locator('.config-actionbar .config-ok');
      await outcome.waitFor();
      expect(await outcome.textContent()).toMatch(/^Applied for this run \(not saved\)\./);
      expect(await inViewport(page, outcome)).toBe(true);
      const apply = main.getByRole('button', { name: 'Apply for this run' });
      const [outcomeBox, applyBox] = [await outcome.boundingBox(), await apply.boundingBox()];
      expect(Math.abs((outcomeBox?.y ?? 0) - (applyBox?.y ?? 1000))).toBeLessThan(150);
      expect((await dash.admin.GET('/api/v1/config')).data?.agent.max_tool_iterations).toBe(6);
      await expectAccessible(page);
      await screenshotsInEveryMode(page, 'pages-config');
    });
  });

  it('skills: an admin adds one from the page; errors at the field', async () => {
    await withFailureScreenshot(page, 'pages-skills', async () => {
      await openPage(page, 'skills');
      const main = page.locator('main');
      await main.getByText(/No skills yet\. The agent proposes them, or add one/).waitFor();
      await main.locator('summary', { hasText: 'Add a skill' }).click();
      const form = main.getByRole('form', { name: 'New skill' });
      await form.getByLabel('Name').fill('Bad Name');
      await form.getByLabel('Description').fill('Writes the weekly status');
      await form.getByLabel(/^Instructions/).fill('# Steps\n1. Gather the week.\n2. Write it up.\n');
      await form.getByRole('button', { name: 'Add skill' }).click();
      expect(await fieldError(form.getByLabel('Name'))).toMatch(/lowercase/);
      await expectAccessible(page);

      await form.getByLabel('Name').fill('weekly-status');
      await form.getByRole('button', { name: 'Add skill' }).click();
      await main.locator('tbody tr', { hasText: 'weekly-status' }).waitFor();
      await main.getByLabel('SKILL.md of weekly-status').waitFor();
      const listed = await dash.admin.GET('/api/v1/skills');
      expect(listed.data?.items.map((skill) => [skill.name, skill.status])).toContainEqual(['weekly-status', 'active']);
      await expectAccessible(page);
    });
  });

  it('pairing: the button sits on the input’s line, at 1280 and 390 px', async () => {
    await withFailureScreenshot(page, 'pages-pairing', async () => {
      for (const width of [1280, 390]) {
        await page.setViewportSize({ width, height: width > 500 ? 800 : 844 });
        await openPage(page, 'pairing');
        const input = page.getByLabel('Platform');
        const button = page.getByRole('button', { name: 'Generate code' });
        await button.waitFor();
        const [a, b] = [await input.boundingBox(), await button.boundingBox()];
        expect(a && b, `${width} px`).toBeTruthy();
        if (!a || !b) return;
        expect(Math.abs(a.y - b.y), `tops at ${width} px`).toBeLessThanOrEqual(1);
        expect(Math.abs(a.height - b.height), `heights at ${width} px`).toBeLessThanOrEqual(1);
        expect(b.x, `button after the input at ${width} px`).toBeGreaterThan(a.x + a.width - 1);
        expect(b.x + b.width, `inside the viewport at ${width} px`).toBeLessThanOrEqual(width);
        await expectAccessible(page);
      }
      await page.setViewportSize({ width: 1280, height: 800 });
      await screenshotsInEveryMode(page, 'pages-pairing');
    });
  });

  it('an api token sees why it cannot add skills; no unexpected page problems', async () => {
    await withFailureScreenshot(page, 'pages-api-token', async () => {
      await page.getByRole('button', { name: 'Sign out' }).click();
      await page.goto('about:blank');
      await signIn(page, dash.url, API_TOKEN, 'skills');
      const main = page.locator('main');
      await main.locator('#skills-admin-note').waitFor();
      expect(await main.locator('#skills-admin-note').textContent()).toMatch(/Adding, approving.*needs an admin token/);
      expect(await main.locator('summary', { hasText: 'Add a skill' }).count()).toBe(0);
      await expectAccessible(page);
    });
    expect(unexpectedProblems(await dash.problems(), [ROLE_PROBE_403, ...PROVOKED])).toEqual([]);
  });
});
