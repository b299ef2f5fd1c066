/**
 * The dashboard's data pages in Chromium (ADR 0020, DECISIONS §9): memory, knowledge and tasks. Each scenario
 * creates data through the page and checks it through the API, changes data through the API and sees the
 * open page follow without a reload, and runs axe-core. Screenshots at 1280×800, dark, and on a 390-px phone
 * go into `GATEHOUSE_SCREENSHOTS` when set.
 */
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
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

/** Live changes of memory and knowledge arrive by polling (every 4 s); tasks by the feed. */
const LIVE_TIMEOUT = 12_000;

/** The role probe of an api token (admin-only GET /logs) is the one refused request an api sign-in makes. */
const ROLE_PROBE_403 = /console .*403.*\/api\/v1\/logs\?limit=1/;
/** The validation errors the scenarios provoke on purpose (Chromium logs every 4xx answer). */
const PROVOKED_400 = /console .*status of 400.*\/api\/v1\/(memory|tasks|knowledge\?.*filter=.*)$/;

describe('dashboard data pages in Chromium', () => {
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

  it('memory: add, search with scores, filter by tag, edit and delete; API changes appear live', async () => {
    await withFailureScreenshot(page, 'data-memory', async () => {
      await openPage(page, 'memory');
      await page.getByText('No memory entries yet').waitFor();
      await expectAccessible(page);

      // Add through the page; the API has it.
      await page.getByText('Add an entry').click();
      const form = page.getByRole('form', { name: 'New memory entry' });
      await form.getByLabel('Content').fill('The deploy window is Tuesday at 14:00 UTC.');
      await form.getByLabel('Tags').fill('ops, deploys');
      await form.getByLabel('Key').fill('deploy-window');
      await form.getByRole('button', { name: 'Add entry' }).click();
      const entries = page.locator('.memory-entry');
      await entries.filter({ hasText: 'The deploy window' }).waitFor();
      const byKey = await dash.admin.GET('/api/v1/memory', { params: { query: { key: 'deploy-window' } } });
      expect(byKey.data?.items).toHaveLength(1);
      const created = byKey.data?.items[0];
      expect(created).toMatchObject({
        content: 'The deploy window is Tuesday at 14:00 UTC.',
        tags: ['ops', 'deploys'],
      });

      // Empty content is refused at the field, with the server's message.
      await form.getByRole('button', { name: 'Add entry' }).click();
      expect(await fieldError(form.getByLabel('Content'))).toBe('content must not be empty');

      // Added through the API: the open page shows it without a reload.
      const other = await dash.admin.POST('/api/v1/memory', {
        body: { content: 'The staging database restarts nightly.', tags: ['ops'] },
      });
      expect(other.response.status).toBe(201);
      await entries.filter({ hasText: 'staging database' }).waitFor({ timeout: LIVE_TIMEOUT });

      // Search: ranked, with scores, the words highlighted.
      await page.getByRole('searchbox', { name: 'Search' }).fill('deploy window');
      await page.getByRole('button', { name: 'Search', exact: true }).click();
      await page.getByText(/Matches: 1, best first/).waitFor();
      await expect.poll(() => entries.count()).toBe(1);
      expect(
        await entries
          .first()
          .getByText(/Relevance \d+%/)
          .count(),
      ).toBe(1);
      expect(await entries.first().locator('mark').allTextContents()).toEqual(['deploy', 'window']);
      await expectAccessible(page);
      await screenshotsInEveryMode(page, 'memory-search');

      // Tag filter by clicking a tag.
      await page.getByRole('button', { name: 'Clear' }).click();
      await expect.poll(() => entries.count()).toBe(2);
      await entries
        .filter({ hasText: 'The deploy window' })
        .getByRole('button', { name: 'Show entries tagged deploys' })
        .click();
      await page.getByText(/Entries tagged “deploys”: 1/).waitFor();
      await expect.poll(() => entries.count()).toBe(1);
      await page.getByRole('button', { name: 'Clear' }).click();
      await expect.poll(() => entries.count()).toBe(2);

      // Edit through the page.
      const entry = entries.filter({ hasText: 'The deploy window' });
      await entry.getByRole('button', { name: /^Edit entry/ }).click();
      const editor = page.getByRole('form', { name: 'Edit memory entry' });
      await editor.getByLabel('Content').fill('The deploy window is Wednesday at 09:00 UTC.');
      await editor.getByLabel('Tags').fill('ops, deploys, changed');
      await editor.getByRole('button', { name: 'Save' }).click();
      await entries.filter({ hasText: 'Wednesday' }).waitFor();
      const edited = await dash.admin.GET('/api/v1/memory/{id}', { params: { path: { id: created?.id ?? '' } } });
      expect(edited.data).toMatchObject({
        content: 'The deploy window is Wednesday at 09:00 UTC.',
        tags: ['ops', 'deploys', 'changed'],
      });
      await screenshotsInEveryMode(page, 'memory');

      // Delete through the page from the keyboard (asked twice: focus moves to the confirmation), and through
      // the API (it leaves the page).
      await entries
        .filter({ hasText: 'Wednesday' })
        .getByRole('button', { name: /^Delete entry/ })
        .focus();
      await page.keyboard.press('Enter');
      await expect.poll(() => page.evaluate('document.activeElement?.textContent')).toBe('Confirm delete');
      await page.keyboard.press('Enter');
      await expect.poll(() => entries.count()).toBe(1);
      const gone = await dash.admin.GET('/api/v1/memory/{id}', { params: { path: { id: created?.id ?? '' } } });
      expect(gone.response.status).toBe(404);
      await dash.admin.DELETE('/api/v1/memory/{id}', { params: { path: { id: other.data?.id ?? '' } } });
      await page.getByText('No memory entries yet').waitFor({ timeout: LIVE_TIMEOUT });
      await expectAccessible(page);
    });
  }, 90_000);

  it('knowledge: upload with progress, search with highlighted chunks, reindex, delete; API changes appear live', async () => {
    await withFailureScreenshot(page, 'data-knowledge', async () => {
      await openPage(page, 'knowledge');
      await page.getByText('No documents yet').waitFor();
      await expectAccessible(page);

      // Record whether the progress bar ever showed (the upload is quick on a loopback socket).
      await page.evaluate(`(() => {
        globalThis.__progressSeen = false;
        new MutationObserver(() => {
          if (document.getElementById('knowledge-progress')) globalThis.__progressSeen = true;
        }).observe(document.body, { childList: true, subtree: true });
      })()`);

      // A file of about 2 MB, uploaded through the page.
      await page.getByText('Add a document').click();
      const form = page.getByRole('form', { name: 'Add a document' });
      const filler = 'Routine log line about nothing in particular. '.repeat(45_000);
      const fileText = `Runbook\n\nThe aurora cluster fails over to the standby region within five minutes.\n\n${filler}`;
      await form.getByLabel(/^File/).setInputFiles({
        name: 'aurora-runbook.md',
        mimeType: 'text/markdown',
        buffer: Buffer.from(fileText, 'utf8'),
      });
      expect(await form.getByLabel('Title').inputValue()).toBe('aurora-runbook');
      expect(await form.getByLabel(/^Source/).inputValue()).toBe('aurora-runbook.md');
      await form.getByLabel(/^Metadata/).fill('{"team": "ops"}');
      await form.getByRole('button', { name: 'Upload' }).click();
      await form.getByText(/Added “aurora-runbook”: \d+ chunks?/).waitFor({ timeout: 30_000 });
      expect(await page.evaluate('globalThis.__progressSeen')).toBe(true);
      const listed = await dash.admin.GET('/api/v1/knowledge', { params: { query: { source: 'aurora-runbook.md' } } });
      expect(listed.data?.items).toHaveLength(1);
      const doc = listed.data?.items[0];
      expect(doc).toMatchObject({ title: 'aurora-runbook', metadata: { team: 'ops' } });
      expect(doc?.size_bytes).toBe(Buffer.byteLength(fileText, 'utf8'));

      // Pasted text; a bad metadata object is refused at its field before sending.
      await form.getByLabel('Title').fill('Pager rota');
      await form.getByLabel(/^Source/).fill('wiki/pager');
      await form.getByLabel('Content').fill('The pager rota changes every Monday; the aurora on-call is Kim.');
      await form.getByLabel(/^Metadata/).fill('[1, 2]');
      await form.getByRole('button', { name: 'Upload' }).click();
      expect(await fieldError(form.getByLabel(/^Metadata/))).toBe('metadata must be a JSON object');
      await form.getByLabel(/^Metadata/).fill('');
      await form.getByRole('button', { name: 'Upload' }).click();
      await form.getByText(/Added “Pager rota”/).waitFor();
      const items = page.locator('.knowledge-item');
      await expect.poll(() => items.count()).toBe(2);

      // Added through the API: the open page shows it without a reload.
      const third = await dash.admin.POST('/api/v1/knowledge', {
        body: { title: 'Backup policy', content: 'Backups run at 02:00 and are kept for 30 days.', source: 'api' },
      });
      expect(third.response.status).toBe(201);
      await items.filter({ hasText: 'Backup policy' }).waitFor({ timeout: LIVE_TIMEOUT });

      // Search: scores and matching chunks with the words highlighted.
      await page.getByRole('searchbox', { name: 'Search' }).fill('aurora standby');
      await page.getByRole('button', { name: 'Search', exact: true }).click();
      await page.getByText(/matching documents, best first/).waitFor();
      const best = items.first();
      await best.getByRole('heading', { name: 'aurora-runbook' }).waitFor();
      expect(await best.getByText(/Score \d+%/).count()).toBe(1);
      const marks = await best.locator('blockquote mark').allTextContents();
      expect(marks.map((m) => m.toLowerCase())).toEqual(expect.arrayContaining(['aurora', 'standby']));
      expect(await items.filter({ hasText: 'Backup policy' }).count()).toBe(0);
      await expectAccessible(page);
      await screenshotsInEveryMode(page, 'knowledge-search');

      // Reindex through the page: indexed_at moves.
      await best.getByRole('button', { name: 'Reindex aurora-runbook' }).click();
      await expect
        .poll(async () => {
          const now = await dash.admin.GET('/api/v1/knowledge/{id}', { params: { path: { id: doc?.id ?? '' } } });
          return now.data?.indexed_at;
        })
        .not.toBe(doc?.indexed_at);

      // Delete through the page (asked twice).
      await page.getByRole('button', { name: 'Clear' }).click();
      await expect.poll(() => items.count()).toBe(3);
      await screenshotsInEveryMode(page, 'knowledge');
      await items.filter({ hasText: 'Pager rota' }).getByRole('button', { name: 'Delete Pager rota' }).click();
      await page.getByRole('button', { name: 'Confirm delete' }).click();
      await expect.poll(() => items.count()).toBe(2);
      const left = await dash.admin.GET('/api/v1/knowledge', { params: { query: { source: 'wiki/pager' } } });
      expect(left.data?.items).toEqual([]);

      // Filter by metadata; a filter that is not JSON shows the server's message and request id.
      const metadataFilter = page.getByRole('textbox', { name: 'Metadata', exact: true });
      await metadataFilter.fill('{"team": "ops"}');
      await page.getByRole('button', { name: 'Search', exact: true }).click();
      await expect.poll(() => items.count()).toBe(1);
      await items.getByRole('heading', { name: 'aurora-runbook' }).waitFor();
      await metadataFilter.fill('team=ops');
      await page.getByRole('button', { name: 'Search', exact: true }).click();
      expect(await fieldError(metadataFilter)).toBe('filter must be valid JSON');
      await expect.poll(() => page.locator('main .error-box').textContent()).toMatch(/.+Request id: \S+/);
      await page.getByRole('button', { name: 'Clear' }).click();
      await expect.poll(() => items.count()).toBe(2);
      await expectAccessible(page);
    });
  }, 90_000);

  it('tasks: a board by status, create with field errors, edit, cancel; API changes move cards live', async () => {
    await withFailureScreenshot(page, 'data-tasks', async () => {
      // A parent for the new task; assigned to a person, so the agent leaves it pending.
      const parent = await dash.admin.POST('/api/v1/tasks', {
        body: { title: 'Launch the docs site', assignee: 'kim' },
      });
      const parentId = parent.data?.task.id ?? '';
      await openPage(page, 'tasks');
      const column = (status: string) => page.getByRole('region', { name: new RegExp(`^${status} \\d+$`, 'i') });
      await column('pending').getByText('Launch the docs site').waitFor();
      await column('running').getByText('No running tasks.').waitFor();
      await expectAccessible(page);

      // Create through the page: every field; the server's validation errors appear at their fields.
      await page.getByText('New task').click();
      const form = page.getByRole('form', { name: 'New task' });
      await form.getByRole('button', { name: 'Create task' }).click();
      expect(await fieldError(form.getByLabel(/^Title/))).toBe('title must not be empty');
      await form.getByLabel(/^Title/).fill('Write the dashboard guide');
      await form.getByLabel('Description').fill('Screenshots of every page, one section each.');
      await form.getByLabel(/^Priority/).fill('5.5');
      await form.getByRole('button', { name: 'Create task' }).click();
      expect(await fieldError(form.getByLabel(/^Priority/))).toBe('priority must be an integer from 0 to 10');
      await form.getByLabel(/^Priority/).fill('8');
      await form.getByLabel(/^Labels/).fill('docs, ui');
      await form.getByLabel(/^Assignee/).fill('alice');
      await form.getByLabel('Source').selectOption('channel');
      await form.getByLabel('Board').fill('launch');
      await form.getByLabel('Parent task id').fill('tsk_missing');
      await form.getByLabel(/^Metadata/).fill('{"ticket": "DOC-7"}');
      await form.getByRole('button', { name: 'Create task' }).click();
      expect(await fieldError(form.getByLabel('Parent task id'))).toBe('no task with this id');
      expect(await form.getByLabel(/^Title/).getAttribute('aria-invalid')).toBeNull();
      await form.getByLabel('Parent task id').fill(parentId);
      await form.getByRole('button', { name: 'Create task' }).click();
      const card = page.locator('.task-card', { hasText: 'Write the dashboard guide' });
      await column('pending').locator('.task-card', { hasText: 'Write the dashboard guide' }).waitFor();
      const listed = await dash.admin.GET('/api/v1/tasks', { params: { query: { board_id: 'launch' } } });
      expect(listed.data?.items).toHaveLength(1);
      const task = listed.data?.items[0];
      expect(task).toMatchObject({
        title: 'Write the dashboard guide',
        description: 'Screenshots of every page, one section each.',
        priority: 'high',
        priority_value: 8,
        labels: ['docs', 'ui'],
        assignee: 'alice',
        source: 'channel',
        board_id: 'launch',
        parent_task_id: parentId,
        metadata: { ticket: 'DOC-7' },
        status: 'pending',
      });
      const taskId = task?.id ?? '';
      expect(await card.getByText('high · 8').count()).toBe(1);

      // Changed through the API: the card moves to Running with its progress, without a reload.
      await dash.admin.PATCH('/api/v1/tasks/{task_id}', {
        params: { path: { task_id: taskId } },
        body: { status: 'running', progress: 0.5 },
      });
      await column('running').locator('.task-card', { hasText: 'Write the dashboard guide' }).waitFor();
      await expect.poll(() => card.getByRole('progressbar').getAttribute('value')).toBe('50');
      await card.getByText('50%').waitFor();

      // Edit through the page: priority and progress.
      await card.getByRole('button', { name: 'Edit task Write the dashboard guide' }).click();
      const editor = card.getByRole('form', { name: 'Edit task Write the dashboard guide' });
      await editor.getByLabel(/^Priority/).fill('10');
      await editor.getByLabel(/^Progress/).fill('75');
      await editor.getByRole('button', { name: 'Save task' }).click();
      await card.getByText('urgent · 10').waitFor();
      const edited = await dash.admin.GET('/api/v1/tasks/{task_id}', { params: { path: { task_id: taskId } } });
      expect(edited.data?.task).toMatchObject({ priority: 'urgent', priority_value: 10, progress: 0.75 });
      await expectAccessible(page);
      await screenshotsInEveryMode(page, 'tasks');

      // Cancel through the page (asked twice).
      await card.getByRole('button', { name: 'Cancel task Write the dashboard guide' }).click();
      await page.getByRole('button', { name: 'Confirm cancel' }).click();
      await column('cancelled').locator('.task-card', { hasText: 'Write the dashboard guide' }).waitFor();
      const cancelled = await dash.admin.GET('/api/v1/tasks/{task_id}', { params: { path: { task_id: taskId } } });
      expect(cancelled.data?.task.status).toBe('cancelled');

      // Created through the API: it appears live.
      await dash.admin.POST('/api/v1/tasks', { body: { title: 'Review the guide', assignee: 'bob', priority: 2 } });
      await column('pending').getByText('Review the guide').waitFor();
      await expectAccessible(page);
    });
  }, 90_000);

  it('shows an api token the data without write controls', async () => {
    const tab = await dash.browser.context.newPage();
    await withFailureScreenshot(tab, 'data-api-role', async () => {
      await signIn(tab, dash.url, API_TOKEN, 'memory');
      await tab.getByText('needs an admin token').waitFor();
      expect(await tab.getByText('Add an entry').count()).toBe(0);
      await openPage(tab, 'knowledge');
      await tab.locator('.knowledge-item').first().waitFor();
      expect(await tab.getByRole('button', { name: /^(Reindex|Delete)/ }).count()).toBe(0);
      await openPage(tab, 'tasks');
      await tab.getByText('Review the guide').waitFor();
      expect(await tab.getByRole('button', { name: /^(Edit|Cancel) task/ }).count()).toBe(0);
      expect(await tab.getByText('New task').count()).toBe(0);
      await expectAccessible(tab);
    });
    await tab.close();
  }, 60_000);

  it('reports nothing unexpected in the first tab', async () => {
    expect(unexpectedProblems(await dash.problems(), [ROLE_PROBE_403, PROVOKED_400])).toEqual([]);
  });
});
