/**
 * The dashboard's Agents page and the agent and principal of the Sessions page in Chromium (ADR 0020,
 * DECISIONS §17-18), against the built gateway with two agents (`main`, the default, and `support`, limited to
 * the knowledge tools) and a second principal, alice. Alice's message to `support` makes one session of hers;
 * one through the admin token makes one of `main` for the principal of the admin token. The Agents page lists
 * both agents with their models, tools, session counts and the default badge, says who is signed in, passes
 * axe-core and fits a 390-px phone; the Sessions page shows each session's agent and filters by principal.
 */
import type { Page } from 'playwright-core';
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
import { echoReply } from '../helpers/fake-openai.js';

const ALICE_TOKEN = 'alice-token-0123456789abcdef';
const PHONE = { width: 390, height: 844 };

interface AgentView {
  id: string;
  provider: string;
  model: string;
  tools: string[];
  sessions: number;
  default: boolean;
}
interface SessionView {
  id: string;
  agent: string;
}

/**
 * What sticks out sideways on the open page, as the phone test measures it (page-side, as text: the test's
 * type library has no DOM): the document's sideways scroll, and visible elements past the viewport's edges
 * outside a wide table's labelled, scrolling wrapper.
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
    elements.push(element.tagName.toLowerCase() + ' [' + Math.round(rect.left) + '..' + Math.round(rect.right) + '] ' +
      (element.textContent || '').trim().slice(0, 40));
  }
  return { page: scrolling.scrollWidth - width, elements: elements.slice(0, 12) };
})()`;

async function measure(page: Page): Promise<{ page: number; elements: string[] }> {
  return page.evaluate<{ page: number; elements: string[] }>(MEASURE);
}

describe('dashboard agents in Chromium', () => {
  let dash: Dashboard;
  let page: Page;
  let aliceSession: string;
  let adminSession: string;

  useDashboard(
    {
      viewport: { width: 1280, height: 800 },
      config: {
        gateway: {
          port: 0,
          auth: {
            api_tokens: [API_TOKEN],
            admin_tokens: [ADMIN_TOKEN],
            principals: [{ id: 'alice', tokens: [ALICE_TOKEN] }],
          },
        },
        agents: {
          main: {},
          support: { system_prompt: 'You answer support questions.', tools: { allow: ['knowledge_*'], deny: [] } },
        },
      },
    },
    async (started) => {
      dash = started;
      page = started.page;
      dash.fake.always(echoReply);
      const alice = await dash.call<{ session_key: string }>('POST', '/api/v1/message', {
        token: ALICE_TOKEN,
        body: { platform: 'web', user_id: 'u', chat_id: 'c1', text: 'hi', agent: 'support', wait: true },
      });
      expect(alice.status).toBe(200);
      aliceSession = alice.body.session_key;
      expect(aliceSession).toBe('gateway:web@alice:c1');
      const admin = await dash.call<{ session_key: string }>('POST', '/api/v1/message', {
        body: { platform: 'api', user_id: 'tester', chat_id: 'admin-chat', text: 'hello', wait: true },
      });
      expect(admin.status).toBe(200);
      adminSession = admin.body.session_key;
    },
    ADMIN_TOKEN,
  );

  it('Agents: both agents with model, tools, sessions and the default badge; who is signed in; axe; a phone', async () => {
    await withFailureScreenshot(page, 'agents', async () => {
      const listed = await dash.call<{ items: AgentView[] }>('GET', '/api/v1/agents');
      expect(listed.status).toBe(200);
      const byId = new Map(listed.body.items.map((agent) => [agent.id, agent]));
      const support = byId.get('support');
      const main = byId.get('main');
      expect(support).toMatchObject({ sessions: 1, default: false, provider: 'openai', model: 'gpt-4o-mini' });
      expect(main).toMatchObject({ sessions: 1, default: true });
      expect(support?.tools.length).toBeGreaterThan(0);
      expect(support?.tools.every((tool) => tool.startsWith('knowledge_'))).toBe(true);
      const me = await dash.call<{ principal: string; role: string }>('GET', '/api/v1/whoami');
      expect(me.body.role).toBe('admin');

      await openPage(page, 'agents');
      const rows = page.locator('main tbody tr');
      await expect.poll(() => rows.count()).toBe(2);
      expect(await rows.evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-agent')))).toEqual([
        'main',
        'support',
      ]);
      const mainRow = page.locator('tr[data-agent="main"]');
      const supportRow = page.locator('tr[data-agent="support"]');

      // The default badge on main only.
      expect(await mainRow.locator('.badge').textContent()).toBe('default');
      expect(await supportRow.locator('.badge').count()).toBe(0);
      // Provider, model and session counts (alice's session runs on support).
      expect(await supportRow.locator('[data-field=provider]').textContent()).toBe('openai');
      expect(await supportRow.locator('[data-field=model]').textContent()).toBe('gpt-4o-mini');
      expect(await supportRow.locator('[data-field=sessions]').textContent()).toBe('1');
      expect(await mainRow.locator('[data-field=sessions]').textContent()).toBe('1');

      // The tool count opens to the names, which its title carries too.
      const tools = support?.tools ?? [];
      const summary = supportRow.locator('[data-field=tools] summary');
      expect(await summary.textContent()).toBe(`${tools.length} ${tools.length === 1 ? 'tool' : 'tools'}`);
      expect(await summary.getAttribute('title')).toBe(tools.join(', '));
      await summary.click();
      await expect.poll(() => supportRow.locator('[data-field=tools] li').allTextContents()).toEqual(tools);

      // Who is signed in.
      const whoami = page.getByTestId('whoami');
      await expect.poll(() => whoami.textContent()).toBe(`Signed in as ${me.body.principal} (admin)`);
      await expectAccessible(page);
      await screenshotsInEveryMode(page, 'agents');

      // On a 390-px phone: no sideways scroll, nothing past the edges; axe still passes.
      await page.setViewportSize(PHONE);
      await page.waitForTimeout(250);
      const overflow = await measure(page);
      expect(overflow.page).toBeLessThanOrEqual(1);
      expect(overflow.elements).toEqual([]);
      // The four columns fit without scrolling their wrapper either.
      const wrap = page.locator('main .table-wrap');
      expect(await wrap.evaluate((element) => element.scrollWidth - element.clientWidth)).toBeLessThanOrEqual(1);
      await expectAccessible(page);
      await page.setViewportSize({ width: 1280, height: 800 });
    });
  });

  it('Sessions: each session shows its agent; an admin filters by principal (cleared: all)', async () => {
    await withFailureScreenshot(page, 'agents-sessions', async () => {
      const all = await dash.call<{ items: SessionView[] }>('GET', '/api/v1/sessions');
      expect(all.body.items.find((s) => s.id === aliceSession)?.agent).toBe('support');
      expect(all.body.items.find((s) => s.id === adminSession)?.agent).toBe('main');

      await openPage(page, 'sessions');
      const openAlice = page.getByRole('button', { name: `Open ${aliceSession}`, exact: true });
      const openAdmin = page.getByRole('button', { name: `Open ${adminSession}`, exact: true });
      await openAlice.waitFor();
      await openAdmin.waitFor();
      const agentOf = (id: string) =>
        page.locator('main tbody tr', { has: page.getByRole('button', { name: `Open ${id}`, exact: true }) });
      expect(await agentOf(aliceSession).locator('[data-field=agent]').textContent()).toBe('agent support');
      expect(await agentOf(adminSession).locator('[data-field=agent]').textContent()).toBe('agent main');

      // principal=alice: only her session, with its agent; the list request carries the filter.
      const filtered = page.waitForRequest((request) => /\/api\/v1\/sessions\?.*principal=alice/.test(request.url()));
      await page.getByLabel('Principal').fill('alice');
      await filtered;
      await expect.poll(() => openAdmin.count()).toBe(0);
      await expect.poll(() => page.locator('main tbody tr').count()).toBe(1);
      await openAlice.waitFor();
      expect(await agentOf(aliceSession).locator('[data-field=agent]').textContent()).toBe('agent support');
      await expectAccessible(page);
      await screenshotsInEveryMode(page, 'sessions-principal');

      // A principal with no sessions; then cleared: everyone's again.
      await page.getByLabel('Principal').fill('nobody');
      await page.getByText('No sessions match these filters.').waitFor();
      await page.getByLabel('Principal').fill('');
      await openAdmin.waitFor();
      await openAlice.waitFor();

      // On a 390-px phone the filters and the agent badges fit as well.
      await page.setViewportSize(PHONE);
      await page.waitForTimeout(250);
      const overflow = await measure(page);
      expect(overflow.page).toBeLessThanOrEqual(1);
      expect(overflow.elements).toEqual([]);
      await expectAccessible(page);
      await page.setViewportSize({ width: 1280, height: 800 });
    });
  });

  it('as alice (an api principal): who she is, her session counts, and no principal filter', async () => {
    const tab = await dash.browser.context.newPage();
    await withFailureScreenshot(tab, 'agents-alice', async () => {
      await signIn(tab, dash.url, ALICE_TOKEN, 'agents');
      await expect.poll(() => tab.getByTestId('whoami').textContent()).toBe('Signed in as alice (api)');
      await expect.poll(() => tab.locator('main tbody tr').count()).toBe(2);
      expect(await tab.locator('tr[data-agent="support"] [data-field=sessions]').textContent()).toBe('1');
      expect(await tab.locator('tr[data-agent="main"] [data-field=sessions]').textContent()).toBe('0');
      await expectAccessible(tab);

      await openPage(tab, 'sessions');
      await tab.getByRole('button', { name: `Open ${aliceSession}`, exact: true }).waitFor();
      expect(await tab.getByRole('button', { name: `Open ${adminSession}`, exact: true }).count()).toBe(0);
      expect(await tab.getByLabel('Principal').count()).toBe(0);
    });
    await tab.close();
  });

  it('kept the console clean: no errors, CSP violations or failed requests', async () => {
    expect(unexpectedProblems(await dash.problems())).toEqual([]);
  });
});
