/**
 * The dashboard's Subscriptions page in Chromium (ADR 0020, DECISIONS §20), against the built gateway allowed to
 * deliver to a receiver on 127.0.0.1 over http, with one retry a second later (`retry_schedule: ['1s']`). The
 * receiver checks every signature with the reference library (`standardwebhooks`) and answers 200 or 500 by
 * path. The page adds a subscription through its form (URL, event checkboxes with `*`, description) and shows
 * the secret once, with Copy and the warning; refuses what the gateway refuses at the field; lists deliveries
 * by status (delivered rows from real events, failed ones from a receiver answering 500) with attempts and the
 * last answer and error; Retry sends a dead letter again with the same webhook-id; Test says how the attempt
 * went; Disable and Enable patch; Delete asks once more. It passes axe-core, fits a 390-px phone, keeps the
 * console clean under the strict CSP, and an api token is told it needs an admin one.
 */
import { createServer, type Server } from 'node:http';
import type { Page, Request } from 'playwright-core';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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
import { echoReply } from '../helpers/fake-openai.js';
import { pollUntil } from '../helpers/until.js';

const PHONE = { width: 390, height: 844 };
/** The add form's refused URL: the browser reports the 400 of its POST. */
const PROVOKED_400 = /console .*status of 400.*\/api\/v1\/subscriptions$/;
const DESKTOP = { width: 1280, height: 800 };

interface SubscriptionView {
  id: string;
  url: string;
  events: string[];
  description: string | null;
  enabled: boolean;
  stats?: { pending: number; delivered: number; failed: number };
}

interface DeliveryView {
  id: string;
  event_type: string;
  status: 'pending' | 'delivered' | 'failed';
  attempts: number;
  last_status: number | null;
  last_error: string | null;
}

/** One request the receiver got: its path, webhook-id, event type and whether the signature checked out. */
interface Received {
  path: string;
  id: string;
  type: string;
  verified: boolean;
}

/**
 * A receiver on 127.0.0.1 answering each path with the status `answers` holds for it (200 by default), checking
 * each signature with the secret `secrets` holds for the path.
 */
class Receiver {
  readonly received: Received[] = [];
  readonly secrets = new Map<string, string>();
  readonly answers = new Map<string, number>();
  private server: Server | undefined;
  url = '';

  async start(): Promise<void> {
    this.server = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        const path = request.url ?? '';
        const headers: Record<string, string> = {};
        for (const [name, value] of Object.entries(request.headers)) {
          headers[name] = Array.isArray(value) ? value.join(',') : (value ?? '');
        }
        let verified = false;
        let type = '';
        const secret = this.secrets.get(path);
        try {
          type = (JSON.parse(body) as { type?: string }).type ?? '';
          if (secret) {
            new Webhook(secret).verify(body, headers);
            verified = true;
          }
        } catch {
          verified = false;
        }
        this.received.push({ path, id: headers['webhook-id'] ?? '', type, verified });
        response.writeHead(this.answers.get(path) ?? 200).end();
      });
    });
    await new Promise<void>((resolve) => this.server!.listen({ host: '127.0.0.1', port: 0 }, resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as { port: number }).port}`;
  }

  close(): Promise<void> {
    return new Promise((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}

/**
 * What sticks out sideways on the open page (page-side, as text: the test's type library has no DOM): the
 * document's sideways scroll, and visible elements past the viewport's edges outside a wide table's wrapper
 * that scrolls by itself as a labelled region.
 */
const MEASURE = `(() => {
  const width = window.innerWidth;
  const scrolling = document.scrollingElement || document.documentElement;
  const allowed = (element) => {
    const wrapper = element.closest('.table-wrap');
    if (!wrapper) return false;
    const overflow = getComputedStyle(wrapper).overflowX;
    return (overflow === 'auto' || overflow === 'scroll') && wrapper.getAttribute('role') === 'region' &&
      Boolean(wrapper.getAttribute('aria-label'));
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

/** On a 390-px phone: no sideways scroll, nothing past the edges but wide tables in their wrapper, axe passes. */
async function expectFitsPhone(page: Page): Promise<void> {
  await page.setViewportSize(PHONE);
  await page.waitForTimeout(250);
  const overflow = await page.evaluate<{ page: number; elements: string[] }>(MEASURE);
  expect(overflow.elements).toEqual([]);
  expect(overflow.page).toBeLessThanOrEqual(1);
  await expectAccessible(page);
  await page.setViewportSize(DESKTOP);
}

describe('dashboard Subscriptions in Chromium', () => {
  let dash: Dashboard;
  let page: Page;
  const receiver = new Receiver();

  beforeAll(async () => {
    await receiver.start();
  });
  afterAll(async () => {
    await receiver.close();
  });

  useDashboard(
    {
      viewport: DESKTOP,
      config: { subscriptions: { allow_private_targets: true, allow_http: true, retry_schedule: ['1s'] } },
    },
    (started) => {
      dash = started;
      page = started.page;
      dash.fake.always(echoReply);
    },
    ADMIN_TOKEN,
  );

  /** Every subscription, each read on its own for its counts. */
  async function subscriptions(): Promise<SubscriptionView[]> {
    const answer = await dash.call<{ items: SubscriptionView[] }>('GET', '/api/v1/subscriptions');
    expect(answer.status).toBe(200);
    return answer.body.items;
  }

  /** The deliveries of a subscription, newest first. */
  async function deliveries(id: string, status?: string): Promise<DeliveryView[]> {
    const query = status ? `?status=${status}` : '';
    const answer = await dash.call<{ items: DeliveryView[] }>('GET', `/api/v1/subscriptions/${id}/deliveries${query}`);
    expect(answer.status).toBe(200);
    return answer.body.items;
  }

  /** Adds a subscription to the receiver's `path` through the API, its secret kept for the receiver. */
  async function addThroughApi(path: string, events: string[], description?: string): Promise<SubscriptionView> {
    const answer = await dash.call<SubscriptionView & { secret: string }>('POST', '/api/v1/subscriptions', {
      body: { url: `${receiver.url}${path}`, events, ...(description ? { description } : {}) },
    });
    expect(answer.status).toBe(201);
    receiver.secrets.set(path, answer.body.secret);
    return answer.body;
  }

  /** Opens the page afresh (another page first), so it loads the subscriptions now rather than at its next poll. */
  async function reopen(): Promise<void> {
    await openPage(page, 'overview');
    await openPage(page, 'subscriptions');
  }

  /** The card of the subscription with `id`. */
  const card = (id: string) => page.locator(`li[data-subscription-id="${id}"]`);

  it('with none: the empty state; the form adds one and shows its secret once, with Copy and the warning', async () => {
    await withFailureScreenshot(page, 'subscriptions-add', async () => {
      await openPage(page, 'subscriptions');
      expect(await page.getByRole('link', { name: 'Subscriptions' }).getAttribute('aria-current')).toBe('page');
      await page.getByTestId('subscriptions-empty').waitFor();
      await expectAccessible(page);

      await page.locator('summary', { hasText: 'New subscription' }).click();
      const form = page.getByRole('form', { name: 'New subscription' });
      await form.getByLabel('URL').fill(`${receiver.url}/ok`);
      await form.getByRole('checkbox', { name: /turn\.completed/ }).check();
      await form.getByRole('checkbox', { name: /message\.received/ }).check();
      await form.getByLabel('Description').fill('The CRM sync');
      const answered = page.waitForResponse(
        (response) => response.url().endsWith('/api/v1/subscriptions') && response.request().method() === 'POST',
      );
      await form.getByRole('button', { name: 'Add subscription' }).click();
      const createdAnswer = await answered;
      expect(createdAnswer.status()).toBe(201);
      const created = (await createdAnswer.json()) as SubscriptionView & { secret: string };
      expect(created.events).toEqual(['message.received', 'turn.completed']);
      receiver.secrets.set('/ok', created.secret);

      // The secret, once: in its panel with the warning, focus on the panel's heading.
      const panel = page.getByTestId('subscription-secret');
      await panel.waitFor();
      expect(await panel.locator('[data-field=secret]').textContent()).toBe(created.secret);
      expect(created.secret).toMatch(/^whsec_/);
      expect(await panel.textContent()).toContain('This secret is not shown again.');
      expect(await page.evaluate<string>('document.activeElement?.id')).toBe('subs-secret-title');
      await dash.browser.context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: dash.url });
      await panel.getByRole('button', { name: 'Copy secret' }).click();
      await expect.poll(() => panel.locator('[data-field=copy-status]').textContent()).toBe('Copied to the clipboard.');
      expect(await page.evaluate<string>('navigator.clipboard.readText()')).toBe(created.secret);

      // The card: URL, enabled, events, description; the list of the API has it, never with the secret.
      const added = card(created.id);
      await added.waitFor();
      expect(await added.getByRole('heading', { level: 2 }).textContent()).toBe(`${receiver.url}/ok`);
      expect(await added.locator('[data-field=enabled] .badge').textContent()).toBe('enabled');
      expect(
        await added
          .getByRole('list', { name: /^Events sent to/ })
          .locator('code')
          .allTextContents(),
      ).toEqual(['message.received', 'turn.completed']);
      expect(await added.locator('[data-field=description]').textContent()).toBe('The CRM sync');
      expect(await page.getByTestId('subscriptions-empty').count()).toBe(0);
      expect((await subscriptions()).map((s) => s.id)).toEqual([created.id]);

      await expectAccessible(page);
      await screenshotsInEveryMode(page, 'subscriptions-secret');
      await expectFitsPhone(page);

      // Put away, it is gone from the page for good.
      await panel.getByRole('button', { name: 'I have stored it' }).click();
      await expect.poll(() => panel.count()).toBe(0);
      expect(await page.locator('main').textContent()).not.toContain(created.secret);
    });
  });

  it('the form: what is missing at its field, `*` greys out the others, a URL the gateway refuses at the URL', async () => {
    await withFailureScreenshot(page, 'subscriptions-form-errors', async () => {
      await openPage(page, 'subscriptions');
      const summary = page.locator('summary', { hasText: 'New subscription' });
      if ((await page.locator('details.add-card').getAttribute('open')) === null) await summary.click();
      const form = page.getByRole('form', { name: 'New subscription' });
      const posts: string[] = [];
      const onRequest = (request: Request): void => {
        if (request.method() === 'POST' && request.url().endsWith('/api/v1/subscriptions')) posts.push(request.url());
      };
      page.on('request', onRequest);
      try {
        await form.getByRole('button', { name: 'Add subscription' }).click();
        expect(await fieldError(form.getByLabel('URL'))).toBe('Enter the URL the deliveries are POSTed to.');
        await form.getByLabel('URL').fill(`${receiver.url}/never`);
        await form.getByRole('button', { name: 'Add subscription' }).click();
        await expect
          .poll(() => form.locator('#subs-new-events-error').textContent())
          .toBe('Choose at least one event, or every event (*).');
        expect(posts).toEqual([]);

        // `*` stands for every event: the others are greyed out and unchecked.
        await form.getByRole('checkbox', { name: /turn\.failed/ }).check();
        await form.getByRole('checkbox', { name: /Every event/ }).check();
        expect(await form.getByRole('checkbox', { name: /turn\.failed/ }).isDisabled()).toBe(true);
        expect(await form.getByRole('checkbox', { name: /turn\.failed/ }).isChecked()).toBe(false);

        // A URL the gateway refuses: its reason at the URL field, nothing added.
        await form.getByLabel('URL').fill('ftp://files.example.com/in');
        await form.getByRole('button', { name: 'Add subscription' }).click();
        expect(await fieldError(form.getByLabel('URL'))).toMatch(/http or https/);
        expect(posts).toHaveLength(1);
        expect((await subscriptions()).some((s) => s.url.startsWith('ftp:'))).toBe(false);
        await expectAccessible(page);
        await screenshotsInEveryMode(page, 'subscriptions-form-errors');
      } finally {
        page.off('request', onRequest);
        await form.getByRole('checkbox', { name: /Every event/ }).uncheck();
        await form.getByLabel('URL').fill('');
        await summary.click();
      }
    });
  });

  it('deliveries of real events: delivered rows with their attempts and answer, filtered by status', async () => {
    await withFailureScreenshot(page, 'subscriptions-delivered', async () => {
      const [subscription] = await subscriptions();
      expect(subscription).toBeDefined();
      const id = subscription!.id;
      const sent = await dash.call('POST', '/api/v1/message', {
        body: { platform: 'api', user_id: 'subs-tester', chat_id: 'subs', text: 'hello receivers', wait: true },
      });
      expect(sent.status).toBe(200);
      // Both events reach the receiver, signed.
      await pollUntil(
        'message.received and turn.completed delivered',
        async () => {
          const got = await deliveries(id, 'delivered');
          return got.length >= 2 ? got : undefined;
        },
        { timeoutMs: 15_000, intervalMs: 200 },
      );
      const okReceived = receiver.received.filter((r) => r.path === '/ok');
      expect(okReceived.map((r) => r.type).sort()).toEqual(['message.received', 'turn.completed']);
      expect(okReceived.every((r) => r.verified)).toBe(true);

      await reopen();
      const item = card(id);
      await expect.poll(() => item.locator('[data-field=delivered]').textContent()).toBe('2');
      expect(await item.locator('[data-field=failed]').textContent()).toBe('0');
      await item.getByRole('button', { name: /^Deliveries to / }).click();
      const table = page.getByTestId(`deliveries-${id}`);
      await expect.poll(() => table.locator('tbody tr').count()).toBe(2);
      for (const row of await table.locator('tbody tr').all()) {
        expect(await row.locator('[data-field=status] .badge').textContent()).toBe('delivered');
        expect(await row.locator('[data-field=attempts]').textContent()).toBe('1');
        expect(await row.locator('[data-field=last-status]').textContent()).toBe('200');
        expect(await row.getByRole('button', { name: /Retry/ }).count()).toBe(0);
      }
      expect((await table.locator('tbody tr code').allTextContents()).sort()).toEqual([
        'message.received',
        'turn.completed',
      ]);
      // Filtered to the failed ones (dead letters): none yet.
      await item.getByLabel('Status').selectOption('failed');
      await item.getByText('No failed deliveries.').waitFor();
      expect(await item.textContent()).toContain('A failed delivery is a dead letter');
      await item.getByLabel('Status').selectOption('delivered');
      await expect.poll(() => table.locator('tbody tr').count()).toBe(2);
      await expectAccessible(page);
      await screenshotsInEveryMode(page, 'subscriptions-deliveries');
      await expectFitsPhone(page);
    });
  });

  it('a receiver answering 500: Test says it failed; the dead letter is listed, and Retry sends it again', async () => {
    await withFailureScreenshot(page, 'subscriptions-failed', async () => {
      receiver.answers.set('/flaky', 500);
      const flaky = await addThroughApi('/flaky', ['*'], 'Answers 500 until fixed');
      await reopen();
      const item = card(flaky.id);
      await item.waitFor();
      expect(await item.getByRole('list', { name: /^Events sent to/ }).textContent()).toBe('* (every event)');

      // Test: one signed attempt now; the line under the card says how it went.
      await item.getByRole('button', { name: `Send a test delivery to ${receiver.url}/flaky` }).click();
      const outcome = item.locator('[data-field=test-outcome]');
      await expect.poll(() => outcome.textContent()).toMatch(/^Test failed \(HTTP 500, \d+ ms\)\.$/);
      expect(await outcome.getAttribute('role')).toBe('status');
      const ping = receiver.received.filter((r) => r.path === '/flaky');
      expect(ping).toHaveLength(1);
      expect(ping[0]).toMatchObject({ type: 'subscription.ping', verified: true });

      // The dead letter: the failed test delivery, with its answer.
      await item.getByRole('button', { name: /^Deliveries to / }).click();
      await item.getByLabel('Status').selectOption('failed');
      const table = page.getByTestId(`deliveries-${flaky.id}`);
      const row = table.locator(`tr[data-delivery-id="${ping[0]!.id}"]`);
      await row.waitFor();
      expect(await row.locator('[data-field=status] .badge').textContent()).toBe('failed');
      expect(await row.locator('[data-field=last-status]').textContent()).toBe('500');
      expect(await row.locator('[data-field=attempts]').textContent()).toBe('1');
      expect(await row.locator('[data-field=last-error]').textContent()).not.toBe('—');
      await expect.poll(() => item.locator('[data-field=failed]').textContent()).toBe('1');
      expect(await item.locator('[data-field=failed]').getAttribute('class')).toBe('subs-failed');
      await expectAccessible(page);
      await screenshotsInEveryMode(page, 'subscriptions-dead-letter');
      await expectFitsPhone(page);

      // Fixed, then Retry: the same webhook-id comes again and is delivered.
      receiver.answers.set('/flaky', 200);
      const retried = page.waitForResponse((response) =>
        response.url().endsWith(`/api/v1/deliveries/${ping[0]!.id}/retry`),
      );
      await row.getByRole('button', { name: `Retry delivery ${ping[0]!.id}` }).click();
      expect((await retried).status()).toBe(200);
      await pollUntil(
        'the retried delivery delivered',
        async () => ((await deliveries(flaky.id, 'delivered')).some((d) => d.id === ping[0]!.id) ? true : undefined),
        { timeoutMs: 15_000, intervalMs: 200 },
      );
      const again = receiver.received.filter((r) => r.path === '/flaky');
      expect(again.map((r) => r.id)).toEqual([ping[0]!.id, ping[0]!.id]);
      expect(again[1]!.verified).toBe(true);
      await item.getByLabel('Status').selectOption('delivered');
      await expect
        .poll(() => table.locator(`tr[data-delivery-id="${ping[0]!.id}"] [data-field=status] .badge`).textContent())
        .toBe('delivered');

      // Test once more: delivered now.
      await item.getByRole('button', { name: `Send a test delivery to ${receiver.url}/flaky` }).click();
      await expect.poll(() => outcome.textContent()).toMatch(/^Test delivered \(HTTP 200, \d+ ms\)\.$/);
    });
  });

  it('Disable and Enable patch the subscription; Delete asks once more (Keep sends nothing), then removes it', async () => {
    await withFailureScreenshot(page, 'subscriptions-manage', async () => {
      const doomed = await addThroughApi('/doomed', ['cron.fired']);
      await reopen();
      const item = card(doomed.id);
      await item.waitFor();

      await item.getByRole('button', { name: `Disable ${receiver.url}/doomed` }).click();
      await expect.poll(() => item.locator('[data-field=enabled] .badge').textContent()).toBe('disabled');
      expect((await subscriptions()).find((s) => s.id === doomed.id)?.enabled).toBe(false);
      await item.getByRole('button', { name: `Enable ${receiver.url}/doomed` }).click();
      await expect.poll(() => item.locator('[data-field=enabled] .badge').textContent()).toBe('enabled');
      expect((await subscriptions()).find((s) => s.id === doomed.id)?.enabled).toBe(true);

      const deletes: string[] = [];
      const onRequest = (request: Request): void => {
        if (request.method() === 'DELETE') deletes.push(request.url());
      };
      page.on('request', onRequest);
      try {
        await item.getByRole('button', { name: `Delete subscription ${receiver.url}/doomed` }).click();
        await item.getByRole('button', { name: 'Keep' }).click();
        await item.getByRole('button', { name: `Delete subscription ${receiver.url}/doomed` }).waitFor();
        expect(deletes).toEqual([]);
        await item.getByRole('button', { name: `Delete subscription ${receiver.url}/doomed` }).click();
        await item.getByRole('button', { name: 'Confirm delete' }).click();
        await expect.poll(() => item.count()).toBe(0);
        expect(deletes).toEqual([`${dash.url}/api/v1/subscriptions/${doomed.id}`]);
      } finally {
        page.off('request', onRequest);
      }
      expect((await dash.call('GET', `/api/v1/subscriptions/${doomed.id}`)).status).toBe(404);
      await expectAccessible(page);
    });
  });

  it('an api token: the page says subscriptions need an admin token, and offers no action', async () => {
    const tab = await dash.browser.context.newPage();
    await withFailureScreenshot(tab, 'subscriptions-api', async () => {
      await signIn(tab, dash.url, API_TOKEN, 'subscriptions');
      await tab.getByText('Event subscriptions need an admin token.').waitFor();
      expect(await tab.locator('main button').count()).toBe(0);
      expect(await tab.locator('main form').count()).toBe(0);
      await expectAccessible(tab);
    });
    await tab.close();
  });

  it('kept the console clean: no errors, CSP violations or failed requests', async () => {
    expect(unexpectedProblems(await dash.problems(), [PROVOKED_400])).toEqual([]);
  });
});
