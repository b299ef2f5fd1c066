/**
 * The dashboard's automation pages in Chromium (ADR 0020, DECISIONS §9): skills and cron. Each scenario changes
 * data through the page and checks it through the API, changes data through the API and sees the open page
 * follow without a reload (the `skills` and `cron` topics of the live feed), and runs axe-core. Screenshots at
 * 1280×800, dark, and on a 390-px phone go into `GATEHOUSE_SCREENSHOTS` when set.
 */
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { lineDiff } from '../../web/src/pages/skills/line-diff.js';
import {
  ADMIN_TOKEN,
  API_TOKEN,
  expectAccessible,
  screenshotsInEveryMode,
  fieldError,
  openPage,
  signIn,
  useDashboard,
  unexpectedProblems,
  withFailureScreenshot,
  type Dashboard,
} from '../helpers/dashboard.js';

const USAGE = { prompt_tokens: 100, completion_tokens: 20 };
/** Live changes arrive through the WebSocket feed. */
const LIVE_TIMEOUT = 10_000;
/** The role probe of an api token (admin-only GET /logs) is the one refused request an api sign-in makes. */
const ROLE_PROBE_403 = /console .*403.*\/api\/v1\/logs\?limit=1/;
/** The validation error the cron scenario provokes on purpose (Chromium logs every 4xx answer). */
const PROVOKED_400 = /console .*status of 400.*\/api\/v1\/cron$/;

describe('the skills page line diff', () => {
  it('keeps common lines and marks removed and added ones in order', () => {
    expect(lineDiff('a\nb\nc\n', 'a\nc\nd\n')).toEqual([
      { kind: 'same', text: 'a' },
      { kind: 'removed', text: 'b' },
      { kind: 'same', text: 'c' },
      { kind: 'added', text: 'd' },
    ]);
    expect(lineDiff('', 'x')).toEqual([{ kind: 'added', text: 'x' }]);
    expect(lineDiff('same', 'same')).toEqual([{ kind: 'same', text: 'same' }]);
  });
});

describe('dashboard automation pages in Chromium', () => {
  let dash: Dashboard;
  let page: Page;

  useDashboard(
    { viewport: { width: 1280, height: 800 } },
    (started) => {
      dash = started;
      page = started.page;
    },
    ADMIN_TOKEN,
  );

  it('skills: a proposed revision appears live with its diff; approve, disable and enable', async () => {
    const { fake } = dash;
    await withFailureScreenshot(page, 'automation-skills', async () => {
      await openPage(page, 'skills');
      await page.getByText('No skills yet').waitFor();
      await expectAccessible(page);

      // Created through the API: it appears without a reload.
      const created = await dash.admin.POST('/api/v1/skills', {
        body: {
          name: 'release-notes',
          description: 'Writes release notes',
          instructions: '# Steps\n1. Read the merged changes.\n2. Write the notes.\n',
        },
      });
      expect(created.response.status).toBe(201);
      const original = created.data?.id ?? '';
      const rows = page.locator('tbody tr');
      await rows.filter({ hasText: 'release-notes' }).waitFor({ timeout: LIVE_TIMEOUT });

      // The agent proposes a revision (staged, evolved from the active one): it appears live.
      fake.enqueue(
        {
          tool_calls: [
            {
              name: 'propose_skill',
              arguments: {
                name: 'release-notes',
                description: 'Writes release notes',
                instructions: '# Steps\n1. Read the merged changes.\n2. Group them by area.\n3. Write the notes.\n',
              },
            },
          ],
          usage: USAGE,
        },
        { content: 'Proposed.', usage: USAGE },
      );
      const message = await dash.call('POST', '/api/v1/message', {
        body: { platform: 'api', user_id: 'tester', chat_id: 'skills', text: 'Improve the skill', wait: false },
      });
      expect(message.status).toBe(202);
      const staged = rows.filter({ hasText: 'staged' });
      await staged.waitFor({ timeout: LIVE_TIMEOUT });
      const list = await dash.admin.GET('/api/v1/skills', { params: { query: { status: 'staged' } } });
      const revision = list.data?.items[0];
      expect(revision).toMatchObject({ name: 'release-notes', version: 2, evolved_from: original });

      // Filter by status.
      await page.getByLabel('Status').selectOption('staged');
      await expect.poll(() => rows.count()).toBe(1);

      // View: SKILL.md as text and the diff against version 1.
      await staged.getByRole('button', { name: 'View skill release-notes version 2' }).click();
      const diff = page.getByLabel('Changes from version 1');
      await diff.waitFor();
      expect(await diff.locator('.diff-added').allTextContents()).toEqual([
        '+ 2. Group them by area.',
        '+ 3. Write the notes.',
      ]);
      expect(await diff.locator('.diff-removed').allTextContents()).toEqual(['- 2. Write the notes.']);
      expect(await page.getByLabel('SKILL.md of release-notes').textContent()).toContain('name: release-notes');
      await expectAccessible(page);
      await screenshotsInEveryMode(page, 'skills');

      // Approve through the page: the revision is active, the original disabled.
      await page.getByRole('button', { name: 'Approve skill release-notes version 2' }).click();
      await page.getByText('No staged skills.').waitFor();
      await expect
        .poll(async () => (await dash.admin.GET('/api/v1/skills')).data?.items.map((s) => [s.version, s.status]))
        .toEqual([
          [2, 'active'],
          [1, 'disabled'],
        ]);

      // Disabled through the API: the open page follows; enabled again through the page.
      await page.getByLabel('Status').selectOption('');
      await dash.admin.POST('/api/v1/skills/{skill_id}/disable', {
        params: { path: { skill_id: revision?.id ?? '' } },
      });
      const second = rows
        .filter({ hasText: 'Writes release notes' })
        .filter({ has: page.getByRole('cell', { name: '2', exact: true }) });
      await second
        .getByRole('button', { name: 'Enable skill release-notes version 2' })
        .waitFor({ timeout: LIVE_TIMEOUT });
      await second.getByRole('button', { name: 'Enable skill release-notes version 2' }).click();
      await expect
        .poll(
          async () =>
            (await dash.admin.GET('/api/v1/skills/{skill_id}', { params: { path: { skill_id: revision?.id ?? '' } } }))
              .data?.status,
        )
        .toBe('active');
      await expectAccessible(page);
      fake.verify();
    });
  }, 90_000);

  it('cron: create with the next runs shown, errors at the field, edit, authorise, trigger, history; API changes appear live', async () => {
    const { fake } = dash;
    fake.always({ content: 'Cron run done.', usage: USAGE });
    await withFailureScreenshot(page, 'automation-cron', async () => {
      await openPage(page, 'cron');
      await page.getByText('No cron jobs yet.').waitFor();
      await expectAccessible(page);

      // The next five runs follow the schedule as it is typed.
      await page.getByText('New cron job').click();
      const form = page.getByRole('form', { name: 'New cron job' });
      const schedule = form.getByLabel('Schedule');
      await schedule.fill('30 6 * * *');
      const preview = form.locator('.next-runs li');
      await expect.poll(() => preview.count()).toBe(5);
      expect(await preview.first().textContent()).toMatch(/^\d{4}-\d\d-\d\d 06:30:00 UTC — /);
      await schedule.fill('30 6 * *');
      await form.getByText('Five fields are needed; this has 4.').waitFor();

      // The server's errors appear at their fields.
      await schedule.fill('61 * * * *');
      await form.getByRole('button', { name: 'Create job' }).click();
      expect(await fieldError(schedule)).toMatch(/minute/);
      expect(await fieldError(form.getByLabel('Prompt'))).toBe('must not be empty');

      // Created through the page: the API has it, unauthorised.
      await schedule.fill('30 6 * * *');
      await form.getByLabel('Prompt').fill('Summarise the overnight alerts.');
      await form.getByRole('button', { name: 'Create job' }).click();
      const cards = page.locator('.cron-job');
      await cards.filter({ hasText: 'Summarise the overnight alerts.' }).waitFor();
      const jobs = await dash.admin.GET('/api/v1/cron');
      expect(jobs.data?.items).toHaveLength(1);
      const job = jobs.data?.items[0];
      expect(job).toMatchObject({
        schedule: '30 6 * * *',
        prompt: 'Summarise the overnight alerts.',
        authorized: false,
        enabled: true,
      });
      const id = job?.id ?? '';
      const card = page.locator(`[data-cron-id="${id}"]`);
      const read = async () =>
        (await dash.admin.GET('/api/v1/cron/{cron_id}', { params: { path: { cron_id: id } } })).data;

      // Authorise through the page.
      await card.getByRole('button', { name: `Authorize job ${id}` }).click();
      await expect.poll(async () => (await read())?.authorized).toBe(true);
      await card.getByRole('button', { name: `Revoke job ${id}` }).waitFor();

      // Edit through the page: a new prompt withdraws the authorisation, which the form says.
      await card.getByRole('button', { name: `Edit job ${id}` }).click();
      const editor = page.getByRole('form', { name: 'Edit cron job 30 6 * * *' });
      await editor.getByLabel('Prompt').fill('Summarise the overnight alerts by service.');
      await editor.getByText('withdraws this job’s authorisation').waitFor();
      await editor.getByLabel('Schedule').fill('0 7 * * 1-5');
      await editor.getByRole('button', { name: 'Save job' }).click();
      await card.getByText('by service').waitFor();
      await expect
        .poll(async () => await read())
        .toMatchObject({
          schedule: '0 7 * * 1-5',
          prompt: 'Summarise the overnight alerts by service.',
          authorized: false,
        });

      // Authorised through the API: the open page follows.
      await dash.admin.POST('/api/v1/cron/{cron_id}/authorize', { params: { path: { cron_id: id } } });
      await card.getByRole('button', { name: `Revoke job ${id}` }).waitFor({ timeout: LIVE_TIMEOUT });

      // Trigger through the page: the run appears in the history, and its outcome arrives live.
      await card.getByRole('button', { name: `Trigger job ${id}` }).click();
      const runs = card.locator('tr[data-run-id]');
      await runs.first().waitFor();
      await expect
        .poll(() => runs.first().locator('.badge').textContent(), { timeout: LIVE_TIMEOUT })
        .toBe('completed');
      const history = await dash.admin.GET('/api/v1/cron/{cron_id}/runs', { params: { path: { cron_id: id } } });
      expect(history.data?.items[0]).toMatchObject({ triggered_by: 'manual', status: 'completed' });
      await expectAccessible(page);
      await screenshotsInEveryMode(page, 'cron');

      // Created through the API: it appears without a reload.
      await dash.admin.POST('/api/v1/cron', { body: { schedule: '*/15 * * * *', prompt: 'Check the queue depth.' } });
      await cards.filter({ hasText: 'Check the queue depth.' }).waitFor({ timeout: LIVE_TIMEOUT });
      await expectAccessible(page);
    });
  }, 90_000);

  it('fits a 390-px phone: no sideways scroll, and axe passes', async () => {
    await withFailureScreenshot(page, 'automation-phone', async () => {
      await page.setViewportSize({ width: 390, height: 844 });
      for (const name of ['skills', 'cron']) {
        await openPage(page, name);
        await page.locator('tbody tr, .cron-job').first().waitFor();
        const overflow = await page.evaluate('document.documentElement.scrollWidth - window.innerWidth');
        expect(overflow, `${name} scrolls sideways`).toBeLessThanOrEqual(0);
        await expectAccessible(page);
      }
      await page.setViewportSize({ width: 1280, height: 800 });
    });
  }, 60_000);

  it('shows an api token the automation pages without admin controls', async () => {
    const tab = await dash.browser.context.newPage();
    await withFailureScreenshot(tab, 'automation-api-role', async () => {
      await signIn(tab, dash.url, API_TOKEN, 'skills');
      await tab.locator('tbody tr').first().waitFor();
      expect(await tab.getByRole('button', { name: /^(Approve|Enable|Disable) skill/ }).count()).toBe(0);
      await openPage(tab, 'cron');
      await tab.getByText('Cron jobs and their runs are shown only to an admin token.').waitFor();
      expect(await tab.locator('.cron-job').count()).toBe(0);
      expect(await tab.getByText('New cron job').count()).toBe(0);
      await expectAccessible(tab);
    });
    await tab.close();
  }, 60_000);

  it('reports nothing unexpected in the first tab', async () => {
    expect(unexpectedProblems(await dash.problems(), [ROLE_PROBE_403, PROVOKED_400])).toEqual([]);
  });
});
