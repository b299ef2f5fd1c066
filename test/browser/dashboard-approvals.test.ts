/**
 * Deciding paused turns from the dashboard as an operator does (Chromium, the built gateway, the fake OpenAI
 * provider; `memory_save` needs approval): the Approvals inbox shows what each paused turn would run — the tool,
 * its arguments pretty-printed and folded when long, its session by title linking to the Sessions page — and a
 * decision made outside the page (the API, another client) takes the row and the navigation's count away at once.
 * The chat's approval card shows the same call and follows a decision made elsewhere; the chat opens on the
 * user's own dashboard session, not on a newer cron session, labels each message by its author, keeps a typed
 * `/status` on screen, sends with Enter (Shift+Enter makes a new line), and with the gateway gone says so
 * instead of failing to send. axe finds nothing serious on either page, at 1280×800 and on a 390-px phone.
 */
import { describe, expect, it } from 'vitest';
import { stopGateway } from '../e2e/helpers.js';
import {
  expectAccessible,
  openPage,
  screenshot,
  useDashboard,
  withFailureScreenshot,
  ADMIN_TOKEN,
  type Dashboard,
} from '../helpers/dashboard.js';

interface SessionView {
  id: string;
  channel: string;
  title?: string;
}

/** A value long enough to be folded in the inbox (more than 160 characters). */
const LONG_NOTE = `The long note begins here. ${'Every word of it matters to the operator. '.repeat(8)}It ends here.`;

describe('deciding paused turns in the dashboard', () => {
  let dash: Dashboard;

  useDashboard(
    { config: { agent: { approval_required: ['memory_save'] } }, viewport: { width: 1280, height: 800 } },
    (started) => void (dash = started),
    ADMIN_TOKEN,
  );

  const session = async (key: string) =>
    (await dash.call<SessionView>('GET', `/api/v1/sessions/${encodeURIComponent(key)}`)).body;
  const turnStatus = async (eventId: string) =>
    (await dash.call<{ status: string }>('GET', `/api/v1/turns/${encodeURIComponent(eventId)}`)).body.status;

  it('the inbox shows the tool, its arguments and its session, and drops a turn approved elsewhere at once', async () => {
    const { page, fake } = dash;
    await withFailureScreenshot(page, 'approvals-inbox', async () => {
      await openPage(page, 'approvals');
      await page.getByText('No turn is waiting for approval or an answer.').waitFor();
      const nav = page.getByRole('navigation', { name: 'Pages' }).getByRole('link', { name: /^Approvals/ });

      fake.enqueue(
        { tool_calls: [{ name: 'memory_save', arguments: { content: LONG_NOTE, tags: ['operator', 'inbox'] } }] },
        { content: 'Saved the long note.' },
      );
      const sent = await dash.call<{ event_id: string }>('POST', '/api/v1/message', {
        body: { platform: 'api', user_id: 'operator', chat_id: 'inbox-args', text: 'Keep this long note', wait: false },
      });
      expect(sent.status).toBe(202);
      const eventId = sent.body.event_id;
      const row = page.locator(`tr[data-event-id="${eventId}"]`);
      await row.waitFor();

      // The call in full view: the tool and its arguments, pretty-printed, the long value folded.
      const args = row.getByLabel('Arguments of memory_save');
      await expect.poll(() => args.textContent()).toContain('"tags": [');
      const folded = (await args.textContent()) ?? '';
      expect(folded).toContain('"content": "The long note begins here.');
      expect(folded).not.toContain('It ends here.');
      const more = row.getByRole('button', { name: 'Show more' });
      expect(await more.getAttribute('aria-expanded')).toBe('false');
      await more.click();
      await expect.poll(() => args.textContent()).toContain('It ends here.');
      expect(await row.getByRole('button', { name: 'Show less' }).getAttribute('aria-expanded')).toBe('true');

      // The session by its title (its key when it has none), linking to the Sessions page, the key on hover.
      const key = 'gateway:api:inbox-args';
      const expected = (await session(key)).title ?? key;
      const link = row.getByRole('link', { name: expected });
      expect(await link.getAttribute('href')).toBe(`#/sessions?key=${encodeURIComponent(key)}`);
      expect(await link.getAttribute('title')).toBe(key);
      await expect.poll(() => nav.textContent()).toBe('Approvals1 pending');
      await expectAccessible(page);
      await screenshot(page, 'approvals-args');

      // Approved from outside the page: the row and the count go without a reload.
      const approved = await dash.call('POST', `/api/v1/turns/${encodeURIComponent(eventId)}/approve`);
      expect(approved.status).toBe(200);
      await expect.poll(() => row.count(), { timeout: 5000 }).toBe(0);
      await expect.poll(() => nav.textContent(), { timeout: 5000 }).toBe('Approvals');
      await expect.poll(() => turnStatus(eventId)).toBe('completed');
      await page.getByText('No turn is waiting for approval or an answer.').waitFor();
      fake.verify();
    });
  });

  it("the chat's approval card shows the call, and a decision made elsewhere carries the turn on", async () => {
    const { page, fake } = dash;
    await withFailureScreenshot(page, 'chat-card', async () => {
      await openPage(page, 'chat');
      const box = page.getByRole('textbox', { name: 'Message' });
      fake.enqueue(
        { tool_calls: [{ name: 'memory_save', arguments: { content: 'The card shows this.' } }] },
        { content: 'Saved from elsewhere.' },
      );
      // Enter sends (no session of the user's own yet: the message starts one).
      await box.fill('Remember what the card shows');
      await box.press('Enter');
      const card = page.getByRole('group', { name: 'Approval needed' });
      await card.waitFor();
      await expect
        .poll(() => card.getByLabel('Arguments of memory_save').textContent())
        .toContain('"content": "The card shows this."');
      expect(await card.textContent()).not.toContain('a tool that needs approval');
      const key = await page.getByLabel('Session').inputValue();
      expect(key).toMatch(/^gateway:dashboard:/);
      await expectAccessible(page);

      const turns = await dash.call<{ items: Array<{ event_id: string; status: string }> }>(
        'GET',
        `/api/v1/sessions/${encodeURIComponent(key)}/turns`,
      );
      const paused = turns.body.items[0]!;
      expect(paused.status).toBe('waiting_approval');
      // The note shows while the turn carries on, and goes once it has ended and its history is read again: a
      // fast turn may show it for a frame or two, so the page records that it appeared.
      await page.evaluate(`(() => {
        window.approvedNote = false;
        const seen = () => document.body.textContent.includes('Approved in another client.');
        new MutationObserver((_, observer) => {
          if (!seen()) return;
          window.approvedNote = true;
          observer.disconnect();
        }).observe(document.body, { childList: true, subtree: true, characterData: true });
      })()`);
      expect((await dash.call('POST', `/api/v1/turns/${paused.event_id}/approve`)).status).toBe(200);
      await expect.poll(() => page.evaluate<boolean>('window.approvedNote'), { timeout: 5000 }).toBe(true);
      await page
        .getByRole('article', { name: 'assistant message' })
        .filter({ hasText: 'Saved from elsewhere.' })
        .waitFor();
      expect(await card.count()).toBe(0);
      expect(await turnStatus(paused.event_id)).toBe('completed');
      fake.verify();
    });
    // A turn, an axe pass and a decision over the API: on a machine busy with the rest of the suite it has
    // taken longer than the default 20 s, with the turn carried on to its end by then.
  }, 60_000);

  it('Enter sends, Shift+Enter makes a new line, and a typed /status stays on screen as the user’s message', async () => {
    const { page, fake } = dash;
    await withFailureScreenshot(page, 'chat-keys', async () => {
      await openPage(page, 'chat');
      const box = page.getByRole('textbox', { name: 'Message' });
      const mine = page.getByRole('article', { name: 'user message' });
      await mine.first().waitFor();
      const before = await mine.count();

      await box.fill('line one');
      await box.press('Shift+Enter');
      await box.pressSequentially('line two');
      expect(await box.inputValue()).toBe('line one\nline two');
      expect(await mine.count()).toBe(before); // nothing sent

      fake.enqueue({ content: 'Two lines read.' });
      await box.press('Enter');
      await page.getByRole('article', { name: 'assistant message' }).filter({ hasText: 'Two lines read.' }).waitFor();
      expect(await box.inputValue()).toBe('');
      await expect.poll(() => mine.last().textContent()).toContain('line one\nline two');

      await box.fill('/status');
      await box.press('Enter');
      const answer = page
        .getByRole('article', { name: 'assistant message' })
        .filter({ hasText: /Session gateway:dashboard:/ });
      await answer.waitFor();
      // Once the history is read again (the command's answer is in it), the command is still shown, by "You".
      await expect.poll(() => mine.filter({ hasText: '/status' }).count()).toBe(1);
      await expect.poll(() => mine.filter({ hasText: '/status' }).locator('.meta').textContent()).toContain('You');
      await expectAccessible(page);
      fake.verify();
    });
  });

  it("opens on the user's own dashboard session, not a newer cron session, and labels messages by role", async () => {
    const { page, fake } = dash;
    await withFailureScreenshot(page, 'chat-defaults', async () => {
      fake.always((body) => ({ content: `Echo of ${body.messages?.length ?? 0} messages.` }));
      const own = await dash.call<SessionView>('POST', '/api/v1/sessions', { body: { channel: 'dashboard' } });
      expect(own.status).toBe(201);
      const said = await dash.call('POST', `/api/v1/sessions/${encodeURIComponent(own.body.id)}/messages`, {
        body: { content: 'My own question' },
      });
      expect(said.status).toBe(200);
      // A cron job's session, active after it: the newest session of all.
      const cron = await dash.call<SessionView>('POST', '/api/v1/sessions', { body: { channel: 'cron' } });
      expect(cron.status).toBe(201);
      const prompted = await dash.call('POST', `/api/v1/sessions/${encodeURIComponent(cron.body.id)}/messages`, {
        body: { content: 'Scheduled prompt: write the daily digest' },
      });
      expect(prompted.status).toBe(200);
      const listed = await dash.call<{ items: SessionView[] }>('GET', '/api/v1/sessions?limit=1');
      expect(listed.body.items[0]!.id).toBe(cron.body.id);

      await openPage(page, 'overview');
      await openPage(page, 'chat');
      const select = page.getByLabel('Session');
      await expect.poll(() => select.inputValue()).toBe(own.body.id);
      await page.getByRole('article', { name: 'user message' }).filter({ hasText: 'My own question' }).waitFor();
      // Sessions by title; the key on hover.
      const cronOption = select.locator(`option[value="${cron.body.id}"]`);
      expect(await cronOption.getAttribute('title')).toBe(cron.body.id);
      const cronTitle = (await session(cron.body.id)).title;
      if (cronTitle !== undefined) expect(await cronOption.textContent()).toContain(cronTitle);

      // Opened on purpose, the cron session's prompts are the session's user's, not "You".
      await page.evaluate(`location.hash = ${JSON.stringify(`#/chat?session=${encodeURIComponent(cron.body.id)}`)}`);
      await expect.poll(() => select.inputValue()).toBe(cron.body.id);
      const prompt = page.getByRole('article', { name: 'user message' }).filter({ hasText: 'Scheduled prompt' });
      await prompt.waitFor();
      expect(await prompt.locator('.meta').textContent()).toMatch(/^User/);
      await expectAccessible(page);

      // `#/chat?new=1` starts a new dashboard session.
      await page.evaluate(`location.hash = '#/chat?new=1'`);
      await expect.poll(() => select.inputValue()).toMatch(/^gateway:dashboard:/);
      expect(await select.inputValue()).not.toBe(own.body.id);
      await page.getByText('No messages in this session yet. Say something.').waitFor();
    });
  });

  it('passes axe on a 390-px phone', async () => {
    const { page } = dash;
    await page.setViewportSize({ width: 390, height: 844 });
    try {
      for (const name of ['approvals', 'chat']) {
        await openPage(page, name);
        await page.locator('main h1').waitFor();
        const overflow = await page.evaluate('document.documentElement.scrollWidth - window.innerWidth');
        expect(overflow, `${name} scrolls sideways`).toBeLessThanOrEqual(0);
        await expectAccessible(page);
      }
    } finally {
      await page.setViewportSize({ width: 1280, height: 800 });
    }
  });

  it('a message sent before the list of sessions arrives goes out in a new session and stays on screen', async () => {
    const { page, fake } = dash;
    await withFailureScreenshot(page, 'chat-slow-list', async () => {
      // A slow network: the list arrives after the message is sent, while its session is being made. The page
      // then learns which sessions the user has; the message must neither be cut nor moved to one of them.
      const gate = (): { held: Promise<void>; release: () => void } => {
        let release!: () => void;
        return { held: new Promise<void>((resolve) => (release = resolve)), release };
      };
      const list = gate();
      const made = gate();
      const isSessions = (url: URL | string) => new URL(url).pathname === '/api/v1/sessions';
      await page.route(isSessions, async (route) => {
        await (route.request().method() === 'GET' ? list.held : made.held);
        await route.continue();
      });
      fake.enqueue({ content: 'Answered despite the slow list.' });
      try {
        // Away and back: the chat opens with no session chosen, as on a first visit.
        await openPage(page, 'overview');
        await openPage(page, 'chat');
        const box = page.getByRole('textbox', { name: 'Message' });
        await box.fill('Sent before the list came');
        const creating = page.waitForRequest((request) => request.method() === 'POST' && isSessions(request.url()));
        await box.press('Enter');
        await creating;
        const listed = page.waitForResponse(
          (response) => response.request().method() === 'GET' && isSessions(response.url()),
        );
        list.release();
        await listed;
        await page.evaluate('new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))');
        made.release();
      } finally {
        list.release();
        made.release();
      }
      await page
        .getByRole('article', { name: 'assistant message' })
        .filter({ hasText: 'Answered despite the slow list.' })
        .waitFor();
      await page
        .getByRole('article', { name: 'user message' })
        .filter({ hasText: 'Sent before the list came' })
        .waitFor();
      await page.unroute(isSessions);
      fake.verify();
    });
  });

  it('with the gateway gone, Send is disabled with a note instead of failing', async () => {
    const { page } = dash;
    await openPage(page, 'chat');
    const box = page.getByRole('textbox', { name: 'Message' });
    await box.fill('Anyone there?');
    const send = page.getByRole('button', { name: 'Send' });
    expect(await send.isDisabled()).toBe(false);
    await stopGateway(dash.gateway, 'SIGTERM');
    await page.getByText('The gateway cannot be reached: sending waits until it is back.').waitFor({ timeout: 10_000 });
    expect(await send.isDisabled()).toBe(true);
    await box.press('Enter');
    expect(await box.inputValue()).toBe('Anyone there?'); // kept, not sent
    expect(await page.getByText('Failed to fetch').count()).toBe(0);
    await expectAccessible(page);
  });
});
