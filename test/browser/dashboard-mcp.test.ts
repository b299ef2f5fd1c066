/**
 * The dashboard's MCP servers page in Chromium (ADR 0020, DECISIONS §19), against the built gateway with two
 * stdio servers: `files` (the small server of `test/cli/fixtures/mcp-server.mjs`, tools `echo` and `add`, `add`
 * needing an approval) and `broken` (the same script told to fail at start). The page shows each server's state,
 * tools under the names the agents see with the approval marks, last error and restarts; Restart asks once
 * more, restarts the server and says how it came back; with no server configured the page shows how to add
 * one. It passes axe-core, fits a 390-px phone, and an api token is told it needs an admin one.
 */
import { join } from 'node:path';
import type { Page, Request } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import {
  ADMIN_TOKEN,
  API_TOKEN,
  expectAccessible,
  openPage,
  screenshotsInEveryMode,
  signIn,
  unexpectedProblems,
  useDashboard,
  withFailureScreenshot,
  type Dashboard,
} from '../helpers/dashboard.js';
import { pollUntil } from '../helpers/until.js';

const FIXTURE = join(import.meta.dirname, '..', 'cli', 'fixtures', 'mcp-server.mjs');
const PHONE = { width: 390, height: 844 };
const DESKTOP = { width: 1280, height: 800 };

interface ServerView {
  name: string;
  state: string;
  restarts: number;
  last_error: string | null;
  tools: Array<{ exposed_as: string; approval: string }>;
}

/**
 * What sticks out sideways on the open page (page-side, as text: the test's type library has no DOM): the
 * document's sideways scroll, and visible elements past the viewport's edges (the page has no table, so
 * nothing may scroll sideways in a wrapper either).
 */
const MEASURE = `(() => {
  const width = window.innerWidth;
  const scrolling = document.scrollingElement || document.documentElement;
  const elements = [];
  for (const element of document.querySelectorAll('body *')) {
    const rect = element.getBoundingClientRect();
    if (rect.width === 0 || rect.height === 0 || rect.right <= 0) continue;
    const style = getComputedStyle(element);
    if (style.visibility === 'hidden' || style.display === 'none') continue;
    if (rect.left >= -1 && rect.right <= width + 1) continue;
    elements.push(element.tagName.toLowerCase() + ' [' + Math.round(rect.left) + '..' + Math.round(rect.right) + '] ' +
      (element.textContent || '').trim().slice(0, 40));
  }
  return { page: scrolling.scrollWidth - width, elements: elements.slice(0, 12) };
})()`;

async function measure(page: Page): Promise<{ page: number; elements: string[] }> {
  return page.evaluate<{ page: number; elements: string[] }>(MEASURE);
}

/** On a 390-px phone: no sideways scroll, nothing past the edges, axe still passes; then back to the desktop. */
async function expectFitsPhone(page: Page): Promise<void> {
  await page.setViewportSize(PHONE);
  await page.waitForTimeout(250);
  const overflow = await measure(page);
  expect(overflow.page).toBeLessThanOrEqual(1);
  expect(overflow.elements).toEqual([]);
  await expectAccessible(page);
  await page.setViewportSize(DESKTOP);
}

describe('dashboard MCP servers in Chromium', () => {
  let dash: Dashboard;
  let page: Page;

  /** The servers as the API answers them. */
  async function servers(): Promise<ServerView[]> {
    const answer = await dash.call<{ items: ServerView[] }>('GET', '/api/v1/mcp/servers');
    expect(answer.status).toBe(200);
    return answer.body.items;
  }

  useDashboard(
    {
      viewport: DESKTOP,
      config: {
        mcp: {
          servers: {
            files: { transport: 'stdio', command: process.execPath, args: [FIXTURE], approval: { add: 'always' } },
            broken: { transport: 'stdio', command: process.execPath, args: [FIXTURE, '--fail', 'no database here'] },
          },
        },
      },
    },
    async (started) => {
      dash = started;
      page = started.page;
      // Both servers have settled: files connected, broken failed at least once.
      let seen: ServerView[] = [];
      await pollUntil(
        'files ready and broken failed',
        async () => {
          seen = await servers();
          const settled =
            seen.find((s) => s.name === 'files')?.state === 'ready' &&
            Boolean(seen.find((s) => s.name === 'broken')?.last_error);
          return settled || undefined;
        },
        { timeoutMs: 20_000, intervalMs: 250, describe: () => JSON.stringify(seen) },
      );
    },
    ADMIN_TOKEN,
  );

  it('lists each server: state badge, tools as the agents see them with approval marks, last error, restarts', async () => {
    await withFailureScreenshot(page, 'mcp', async () => {
      await openPage(page, 'mcp');
      expect(await page.getByRole('link', { name: 'MCP servers' }).getAttribute('aria-current')).toBe('page');
      const cards = page.locator('main li.mcp-server');
      await expect.poll(() => cards.count()).toBe(2);
      const names = await cards.evaluateAll((items) => items.map((li) => li.getAttribute('data-server')));
      expect([...names].sort()).toEqual(['broken', 'files']);

      const files = page.locator('li[data-server="files"]');
      expect(await files.getByRole('heading', { level: 2 }).textContent()).toBe('files');
      expect(await files.locator('[data-field=state] .badge').textContent()).toBe('ready');
      expect(await files.locator('[data-field=transport]').textContent()).toBe('stdio');
      expect(await files.locator('[data-field=endpoint]').textContent()).toBe(process.execPath);
      expect(await files.locator('[data-field=tools]').textContent()).toBe('2');
      expect(await files.locator('[data-field=restarts]').textContent()).toBe('0');
      expect(await files.locator('[data-field=last-error]').count()).toBe(0);
      // The tools under the names the agents call them by; `add` needs an approval, `echo` does not.
      const tools = files.getByRole('list', { name: 'Tools of files' });
      expect((await tools.locator('code').allTextContents()).sort()).toEqual(['mcp__files__add', 'mcp__files__echo']);
      const add = tools.locator('li[data-tool="mcp__files__add"]');
      expect(await add.locator('[data-field=approval]').textContent()).toBe('needs approval');
      expect(await add.textContent()).toContain('Adds two numbers.');
      expect(await tools.locator('li[data-tool="mcp__files__echo"] [data-field=approval]').count()).toBe(0);

      const broken = page.locator('li[data-server="broken"]');
      expect(['failed', 'connecting']).toContain(await broken.locator('[data-field=state] .badge').textContent());
      const lastError = (await servers()).find((s) => s.name === 'broken')?.last_error ?? '';
      expect(lastError).not.toBe('');
      expect(await broken.locator('[data-field=last-error]').textContent()).toBe(`Last error: ${lastError}`);
      expect(await broken.locator('[data-field=tools]').textContent()).toBe('0');
      expect(await broken.getByRole('list', { name: 'Tools of broken' }).count()).toBe(0);

      await expectAccessible(page);
      await screenshotsInEveryMode(page, 'mcp');
      await expectFitsPhone(page);
    });
  });

  it('Restart asks once more (Keep changes nothing), then restarts the server and says how it came back', async () => {
    await withFailureScreenshot(page, 'mcp-restart', async () => {
      await openPage(page, 'mcp');
      const files = page.locator('li[data-server="files"]');
      await files.locator('[data-field=state] .badge').getByText('ready').waitFor();
      const restarts = (await servers()).find((s) => s.name === 'files')!.restarts;

      // Keep: nothing is sent.
      const restartRequests: string[] = [];
      const onRequest = (request: Request): void => {
        if (request.method() === 'POST' && request.url().includes('/mcp/servers/')) restartRequests.push(request.url());
      };
      page.on('request', onRequest);
      try {
        await files.getByRole('button', { name: 'Restart files' }).click();
        await files.getByRole('button', { name: 'Keep' }).click();
        await files.getByRole('button', { name: 'Restart files' }).waitFor();
        expect(restartRequests).toEqual([]);

        // Confirm: one POST; the line under the card follows the server until it is ready again.
        await files.getByRole('button', { name: 'Restart files' }).click();
        const answered = page.waitForResponse((response) =>
          response.url().endsWith('/api/v1/mcp/servers/files/restart'),
        );
        await files.getByRole('button', { name: 'Confirm restart' }).click();
        expect((await answered).status()).toBe(200);
        expect(restartRequests).toEqual([`${dash.url}/api/v1/mcp/servers/files/restart`]);
        const outcome = files.locator('[data-field=outcome]');
        await expect.poll(() => outcome.textContent(), { timeout: 15_000 }).toBe('Restarted: ready, 2 tools.');
        expect(await outcome.getAttribute('role')).toBe('status');
        expect(await files.locator('[data-field=restarts]').textContent()).toBe(String(restarts + 1));
        expect(await files.locator('[data-field=state] .badge').textContent()).toBe('ready');
        expect((await servers()).find((s) => s.name === 'files')).toMatchObject({
          state: 'ready',
          restarts: restarts + 1,
        });
      } finally {
        page.off('request', onRequest);
      }
      await expectAccessible(page);
      await screenshotsInEveryMode(page, 'mcp-restarted');
    });
  });

  it('a failing server restarted: the line says it came back failed; a refused restart says why', async () => {
    await withFailureScreenshot(page, 'mcp-restart-failures', async () => {
      await openPage(page, 'mcp');
      const broken = page.locator('li[data-server="broken"]');
      await broken.getByRole('button', { name: 'Restart broken' }).click();
      await broken.getByRole('button', { name: 'Confirm restart' }).click();
      await expect
        .poll(() => broken.locator('[data-field=outcome]').textContent(), { timeout: 15_000 })
        .toBe('Restarted, but it is failed: see the last error.');

      // A server the gateway no longer knows (listed here by a changed answer): its 404 under the card.
      const listed = await servers();
      const gone = { ...listed.find((s) => s.name === 'files')!, name: 'gone' };
      await page.route('**/api/v1/mcp/servers', (route) =>
        route.fulfill({ status: 200, contentType: 'application/json', body: JSON.stringify({ items: [gone] }) }),
      );
      try {
        await openPage(page, 'overview');
        await openPage(page, 'mcp');
        const card = page.locator('li[data-server="gone"]');
        await card.getByRole('button', { name: 'Restart gone' }).click();
        await card.getByRole('button', { name: 'Confirm restart' }).click();
        await expect
          .poll(() => card.locator('[data-field=outcome]').textContent())
          .toMatch(/^Restart failed: .*not found/i);
        await expectAccessible(page);
      } finally {
        await page.unroute('**/api/v1/mcp/servers');
      }
    });
  });

  it('with no servers configured: an empty state with a gatehouse.yaml snippet', async () => {
    await withFailureScreenshot(page, 'mcp-empty', async () => {
      // The answer of a gateway without mcp.servers (GET /mcp/servers of such a gateway: test/cli/mcp.test.ts).
      await page.route('**/api/v1/mcp/servers', (route) =>
        route.fulfill({ status: 200, contentType: 'application/json', body: JSON.stringify({ items: [] }) }),
      );
      try {
        await openPage(page, 'overview');
        await openPage(page, 'mcp');
        const empty = page.getByTestId('mcp-empty');
        await empty.waitFor();
        expect(await empty.textContent()).toContain('No MCP servers are configured.');
        expect(await empty.textContent()).toContain('mcp.servers');
        const snippet = (await empty.locator('pre').textContent()) ?? '';
        expect(snippet).toMatch(/^mcp:\n {2}servers:\n {4}files:\n {6}transport: stdio\n {6}command: node\n/);
        expect(await page.locator('main li.mcp-server').count()).toBe(0);
        await expectAccessible(page);
        await screenshotsInEveryMode(page, 'mcp-empty');
        await expectFitsPhone(page);
      } finally {
        await page.unroute('**/api/v1/mcp/servers');
      }
    });
  });

  it('an api token: the page says the list needs an admin token, and no Restart is offered', async () => {
    const tab = await dash.browser.context.newPage();
    await withFailureScreenshot(tab, 'mcp-api', async () => {
      await signIn(tab, dash.url, API_TOKEN, 'mcp');
      await tab.getByText('Reading the MCP servers needs an admin token.').waitFor();
      expect(await tab.getByRole('button', { name: /Restart/ }).count()).toBe(0);
      await expectAccessible(tab);
    });
    await tab.close();
  });

  it('kept the console clean: no errors, CSP violations or failed requests', async () => {
    // The one refused request is the restart of `gone`, a server the gateway does not have.
    const refused = /\/api\/v1\/mcp\/servers\/gone\/restart/;
    expect(unexpectedProblems(await dash.problems(), [refused])).toEqual([]);
  });
});
