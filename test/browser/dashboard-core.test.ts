/**
 * The dashboard's core pages in Chromium against the built gateway and the fake OpenAI provider (ADR 0020):
 * one scenario per page. Each creates data through the page and checks it through the API, and checks that a
 * change made through the API shows in the open page without a reload. The chat scenario streams a reply,
 * interrupts one, and approves a paused tool call (`memory_save` needs approval in this gateway's config).
 * Every page passes axe-core with no serious or critical violation, at 1280×800 and on a 390-px phone.
 */
import { describe, expect, it } from 'vitest';
import { deferred } from '../helpers/deferred.js';
import {
  expectAccessible,
  openPage,
  screenshot,
  useDashboard,
  unexpectedProblems,
  withFailureScreenshot,
  ADMIN_TOKEN,
  type Dashboard,
} from '../helpers/dashboard.js';

const USAGE = { prompt_tokens: 1200, completion_tokens: 300 };

interface SessionView {
  id: string;
  channel: string;
}
interface TurnView {
  event_id: string;
  session_key: string;
  status: string;
  termination_reason: string | null;
}

describe('dashboard core pages in Chromium', () => {
  let dash: Dashboard;

  useDashboard(
    { config: { agent: { approval_required: ['memory_save'] } }, viewport: { width: 1280, height: 800 } },
    (started) => void (dash = started),
    ADMIN_TOKEN,
  );

  /** POSTs a message to a session through the API without waiting for the reply; answers the event id. */
  const postMessage = async (session: string, text: string): Promise<string> => {
    const answer = await dash.call<{ event_id: string }>('POST', '/api/v1/message', {
      body: { platform: 'api', user_id: 'tester', chat_id: session, text, wait: false },
    });
    expect(answer.status).toBe(202);
    return answer.body.event_id;
  };
  const turnStatus = async (eventId: string) =>
    (await dash.call<TurnView>('GET', `/api/v1/turns/${encodeURIComponent(eventId)}`)).body;

  it('Overview: health, provider, sessions and spend, updated live', async () => {
    const { page } = dash;
    await withFailureScreenshot(page, 'overview', async () => {
      await openPage(page, 'overview');
      const main = page.locator('main');
      await expect.poll(() => main.textContent()).toContain('openai:gpt-4o-mini');
      await expect.poll(() => main.getByText(/^(healthy|degraded)$/).count()).toBeGreaterThan(0);
      expect(await main.textContent()).toContain('no budget');
      expect(await main.getByText('Nothing spent today.').isVisible()).toBe(true);
      const sessions = main.locator('.stat', { hasText: 'Sessions (active / total)' }).locator('.value');
      const before = (await sessions.textContent()) ?? '';
      const total = Number(before.split('/')[1]);

      // A session created through the API shows in the open page.
      const created = await dash.call<SessionView>('POST', '/api/v1/sessions', { body: { channel: 'overview' } });
      expect(created.status).toBe(201);
      await expect.poll(() => sessions.textContent(), { timeout: 5000 }).toMatch(new RegExp(`/ ${total + 1}$`));
      await expectAccessible(page);
      await screenshot(page, 'overview');
    });
  });

  it('Chat: streams a reply with its cost, interrupts one, approves a paused tool call, follows the API', async () => {
    const { page, fake } = dash;
    await withFailureScreenshot(page, 'chat', async () => {
      await openPage(page, 'chat');
      await page.getByRole('button', { name: 'New session' }).click();
      const select = page.getByLabel('Session');
      await expect.poll(() => select.inputValue()).toMatch(/^gateway:dashboard:/);
      const sessionId = await select.inputValue();
      const listed = await dash.call<{ items: SessionView[] }>('GET', '/api/v1/sessions?channel=dashboard');
      expect(listed.body.items.map((s) => s.id)).toContain(sessionId);
      // The address follows the selection once the page has rendered it.
      await expect.poll(() => page.url()).toContain(`#/chat?session=${encodeURIComponent(sessionId)}`);

      // 1. A reply streamed token by token: the fake sends its deltas and then holds the stream open, so the
      //    page shows the partial text of a running turn; Stop interrupts it over the WebSocket.
      fake.enqueue({ content: 'Partial words arrive one by one', chunks: 6, stall: true, usage: USAGE });
      await page.getByRole('textbox', { name: 'Message' }).fill('Tell me a long story');
      await page.getByRole('button', { name: 'Send' }).click();
      const reply = page.getByRole('article', { name: 'reply' });
      await expect.poll(() => reply.locator('.text').textContent()).toBe('Partial words arrive one by one');
      expect(await reply.getAttribute('data-status')).toBe('running');
      await screenshot(page, 'chat-streaming');
      await page.getByRole('button', { name: 'Stop' }).click();
      await expect.poll(() => page.getByRole('button', { name: 'Stop' }).count()).toBe(0);
      const history1 = await dash.call<{ items: Array<{ role: string; content: string | null; event_id: string }> }>(
        'GET',
        `/api/v1/sessions/${encodeURIComponent(sessionId)}/history`,
      );
      const interruptedId = history1.body.items.find((e) => e.role === 'user')?.event_id ?? '';
      expect((await turnStatus(interruptedId)).status).toBe('interrupted');

      // 2. A complete reply, with its cost.
      fake.enqueue({ content: 'Hello from the model, streamed.', chunks: 5, usage: USAGE });
      await page.getByRole('textbox', { name: 'Message' }).fill('Say hello');
      await page.getByRole('button', { name: 'Send' }).click();
      const answered = page.getByRole('article', { name: 'assistant message' }).filter({
        hasText: 'Hello from the model, streamed.',
      });
      await answered.waitFor();
      await expect.poll(() => answered.locator('.cost').textContent()).toMatch(/^Cost \$0\.\d+/);

      // 3. A tool call that needs approval: the turn pauses, Approve runs the tool and the turn goes on.
      fake.enqueue(
        {
          tool_calls: [{ name: 'memory_save', arguments: { content: 'The dashboard approves tools.' } }],
          usage: USAGE,
        },
        { content: 'Saved it.', usage: USAGE },
      );
      await page.getByRole('textbox', { name: 'Message' }).fill('Remember that the dashboard approves tools');
      await page.getByRole('button', { name: 'Send' }).click();
      const approval = page.getByRole('group', { name: 'Approval needed' });
      await approval.waitFor();
      expect(await approval.textContent()).toContain('memory_save');
      expect(await page.getByLabel('Arguments of memory_save').textContent()).toContain(
        'The dashboard approves tools.',
      );
      await screenshot(page, 'chat-approval');
      await expectAccessible(page);
      await approval.getByRole('button', { name: 'Approve' }).click();
      const saved = page.getByRole('article', { name: 'assistant message' }).filter({ hasText: 'Saved it.' });
      await saved.waitFor();
      await expect.poll(() => page.getByLabel('Result of memory_save').count()).toBeGreaterThan(0);
      const memory = await dash.call<{ items: Array<{ content: string }> }>('GET', '/api/v1/memory');
      expect(memory.body.items.map((m) => m.content)).toContain('The dashboard approves tools.');
      const turns = await dash.call<{ items: TurnView[] }>(
        'GET',
        `/api/v1/sessions/${encodeURIComponent(sessionId)}/turns`,
      );
      expect(turns.body.items[0]).toMatchObject({ status: 'completed' });

      // 4. A message sent through the API to the open session streams into the page without a reload.
      fake.enqueue({ content: 'An answer to the API.', usage: USAGE });
      const chatId = sessionId.slice('gateway:dashboard:'.length);
      const sent = await dash.call('POST', `/api/v1/sessions/${encodeURIComponent(sessionId)}/messages`, {
        body: { content: 'Sent through the API' },
      });
      expect(sent.status).toBe(200);
      expect(chatId.length).toBeGreaterThan(0);
      await page.getByRole('article', { name: 'user message' }).filter({ hasText: 'Sent through the API' }).waitFor();
      await page
        .getByRole('article', { name: 'assistant message' })
        .filter({ hasText: 'An answer to the API.' })
        .waitFor();
      await expectAccessible(page);
      await screenshot(page, 'chat');
      fake.verify();
    });
  });

  it('Sessions: filters, history, ledger, the turn inspector following a running turn, delete', async () => {
    const { page, fake } = dash;
    await withFailureScreenshot(page, 'sessions', async () => {
      await openPage(page, 'sessions');
      const table = page.locator('main table').first();
      await table.waitFor();

      // Filter by channel; a session created through the API then shows without a reload.
      await page.getByLabel('Channel').fill('inspect');
      await page.getByText('No sessions match these filters.').waitFor();
      const gate = deferred();
      fake.enqueue({ after: gate.promise, then: { content: 'Released at last.', chunks: 4, usage: USAGE } });
      const eventId = await postMessage('inspect-me', 'Run slowly');
      const sessionId = 'gateway:api:inspect-me';
      await expect
        .poll(() => dash.call<TurnView>('GET', `/api/v1/turns/${eventId}`).then((a) => a.body.status))
        .toBe('running');
      // Channel filter `api`: the session is there (created by the message), the filter shows it live.
      await page.getByLabel('Channel').fill('api');
      await page.getByRole('button', { name: `Open ${sessionId}`, exact: true }).waitFor();
      await page.getByRole('button', { name: `Open ${sessionId}` }).click();
      await page.getByRole('heading', { name: 'History' }).waitFor();

      // The inspector follows the running turn and shows its end when the model answers.
      await page
        .getByRole('button', { name: `Inspect turn ${eventId}` })
        .first()
        .click();
      const inspector = page.getByRole('region', { name: `Turn ${eventId}` });
      await inspector.waitFor();
      await expect.poll(() => inspector.textContent()).toContain('(following)');
      await screenshot(page, 'sessions-following');
      gate.resolve();
      await expect.poll(() => inspector.getByLabel('Reply text').textContent()).toBe('Released at last.');
      await expect.poll(() => inspector.getByLabel('Turn events').textContent()).toContain('Done: completed');
      await expect.poll(() => inspector.locator('[data-field=termination_reason]').textContent()).toBe('completed');
      expect(await inspector.getByLabel('Turn events').textContent()).toMatch(/Finished .*ran/);
      expect((await turnStatus(eventId)).status).toBe('completed');
      // The history and ledger caught up live.
      await page.locator('.history-content', { hasText: 'Released at last.' }).waitFor();
      await expect.poll(() => page.locator('main table').nth(2).textContent()).toContain('completed');
      await expectAccessible(page);
      await screenshot(page, 'sessions');

      // Status filter: archived has none; back to active.
      await page.getByLabel('Status').selectOption('archived');
      await page.getByText('No sessions match these filters.').waitFor();
      await page.getByLabel('Status').selectOption('active');
      await page.getByRole('button', { name: `Open ${sessionId}`, exact: true }).waitFor();

      // Delete through the page (two steps); the API no longer knows it.
      await page.getByRole('button', { name: 'Delete session' }).click();
      await page.getByRole('button', { name: 'Delete for good' }).click();
      await expect.poll(() => page.getByRole('button', { name: `Open ${sessionId}`, exact: true }).count()).toBe(0);
      const gone = await dash.call('GET', `/api/v1/sessions/${encodeURIComponent(sessionId)}`);
      expect(gone.status).toBe(404);
      fake.verify();
    });
  });

  it('Approvals: paused turns and staged skills appear live and are decided in the inbox', async () => {
    const { page, fake } = dash;
    await withFailureScreenshot(page, 'approvals', async () => {
      await openPage(page, 'approvals');
      await page.getByText('No turn is waiting for approval or an answer.').waitFor();
      await page.getByText('No skill is waiting for approval.').waitFor();
      await expectAccessible(page);

      // The agent proposes a skill (staged) and asks to save a memory (paused): both arrive without a reload.
      fake.enqueue(
        {
          tool_calls: [
            {
              name: 'propose_skill',
              arguments: { name: 'weekly-report', description: 'Writes the weekly report', instructions: '# Steps' },
            },
          ],
          usage: USAGE,
        },
        { tool_calls: [{ name: 'memory_save', arguments: { content: 'Inbox approved this.' } }], usage: USAGE },
        { content: 'Proposed and saved.', usage: USAGE },
      );
      const eventId = await postMessage('inbox', 'Propose a skill and save a note');
      const row = page.locator(`tr[data-event-id="${eventId}"]`);
      await row.waitFor();
      expect(await row.textContent()).toContain('memory_save');
      const skillRow = page.locator('tr', { hasText: 'weekly-report' });
      await skillRow.waitFor();
      await screenshot(page, 'approvals');

      // Approve the turn: it runs on to its end; the row leaves the inbox.
      await row.getByRole('button', { name: /^Approve memory_save/ }).click();
      await expect.poll(() => row.count()).toBe(0);
      await expect.poll(async () => (await turnStatus(eventId)).status).toBe('completed');
      const memory = await dash.call<{ items: Array<{ content: string }> }>('GET', '/api/v1/memory');
      expect(memory.body.items.map((m) => m.content)).toContain('Inbox approved this.');

      // Approve the skill: active through the API.
      await skillRow.getByRole('button', { name: 'Approve skill weekly-report' }).click();
      await page.getByText('No skill is waiting for approval.').waitFor();
      const skills = await dash.call<{ items: Array<{ name: string; status: string }> }>('GET', '/api/v1/skills');
      expect(skills.body.items.find((s) => s.name === 'weekly-report')?.status).toBe('active');
      await expectAccessible(page);
      fake.verify();
    });
  });

  it('works on a 390-px phone: every core page fits and passes axe', async () => {
    const { page } = dash;
    await withFailureScreenshot(page, 'phone', async () => {
      await page.setViewportSize({ width: 390, height: 844 });
      for (const name of ['overview', 'chat', 'sessions', 'approvals']) {
        await openPage(page, name);
        await page.waitForTimeout(200);
        const overflow = await page.evaluate('document.documentElement.scrollWidth - window.innerWidth');
        expect(overflow, `${name} scrolls sideways`).toBeLessThanOrEqual(0);
        await expectAccessible(page);
        await screenshot(page, `phone-${name}`);
      }
      await page.setViewportSize({ width: 1280, height: 800 });
    });
  });

  it('works by keyboard with a visible focus, and in the dark theme of the system', async () => {
    const { page } = dash;
    await withFailureScreenshot(page, 'keyboard-dark', async () => {
      await page.goto(`${dash.url}/#/overview`);
      // A fresh document: after a hash change alone, Tab would go on from where an earlier test left the focus.
      await page.reload();
      await page.locator('main h1').waitFor();
      await page.keyboard.press('Tab');
      const focused = () =>
        page.evaluate(`(() => {
          const el = document.activeElement;
          const style = getComputedStyle(el);
          return { text: (el.textContent || '').trim(), outline: style.outlineStyle, width: style.outlineWidth };
        })()`);
      expect(await focused()).toEqual({ text: 'Skip to content', outline: 'solid', width: '3px' });
      await page.keyboard.press('Enter');
      expect(await page.evaluate('document.activeElement.id')).toBe('main');
      // The navigation is reached by Tab and followed with Enter.
      await page.getByRole('link', { name: 'Sessions' }).focus();
      expect(await focused()).toMatchObject({ text: 'Sessions', outline: 'solid' });
      await page.keyboard.press('Enter');
      await page.getByRole('heading', { level: 1, name: 'Sessions' }).waitFor();

      await page.emulateMedia({ colorScheme: 'dark' });
      for (const name of ['overview', 'chat', 'sessions', 'approvals']) {
        await openPage(page, name);
        expect(await page.evaluate('getComputedStyle(document.body).backgroundColor')).toBe('rgb(13, 17, 23)');
        await expectAccessible(page);
        await screenshot(page, `dark-${name}`);
      }
      await page.emulateMedia({ colorScheme: 'light' });
    });
  });

  it('kept the console clean: no errors, CSP violations or failed requests', async () => {
    // A page left while its reads are in flight cancels them (on a busy machine the tests move on that fast):
    // cancelled, not failed.
    const cancelled = /^requestfailed net::ERR_ABORTED /;
    expect(unexpectedProblems(await dash.problems(), [cancelled])).toEqual([]);
  });
});
