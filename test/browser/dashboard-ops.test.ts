/**
 * The dashboard's operations pages in Chromium against the built gateway (ADR 0020, 0021): pairing (a code
 * issued in the page verifies through the API), channels (disabled in the page, seen disabled by the API;
 * enabled through the API, seen live in the page), logs (the live tail shows an API request's line, filters,
 * pauses, exports the shown lines as JSONL, and resumes after a dropped connection without losing a line),
 * and the first-start banner's one-click link, after which the generated token is in no log or audit line.
 * Every page is checked with axe-core and photographed into `GATEHOUSE_SCREENSHOTS` when set.
 */
import { randomUUID } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { createServer, connect, type AddressInfo, type Socket } from 'node:net';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { e2eHome, startGateway, stopGateway } from '../e2e/helpers.js';
import {
  ADMIN_TOKEN,
  API_TOKEN,
  expectAccessible,
  screenshot,
  signIn,
  useDashboard,
  unexpectedProblems,
  withFailureScreenshot,
  type Dashboard,
} from '../helpers/dashboard.js';

interface LogItem {
  timestamp: string;
  level: string;
  source: string;
  message: string;
  metadata: Record<string, unknown>;
}

/** A TCP relay to the gateway that can be cut (`down`: open connections reset, new ones refused) and restored. */
interface Relay {
  url: string;
  /** `Last-Event-ID` headers seen in requests passing through. */
  lastEventIds: string[];
  down(): void;
  up(): void;
  close(): Promise<void>;
}

async function startRelay(targetPort: number): Promise<Relay> {
  const sockets = new Set<Socket>();
  const lastEventIds: string[] = [];
  let cut = false;
  const server = createServer((client) => {
    if (cut) {
      client.resetAndDestroy();
      return;
    }
    const upstream = connect(targetPort, '127.0.0.1');
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
      socket.on('error', () => undefined);
    }
    client.on('data', (chunk: Buffer) => {
      const id = /\r\nlast-event-id: *([^\r]+)\r\n/i.exec(chunk.toString('latin1'))?.[1];
      if (id) lastEventIds.push(id);
    });
    client.pipe(upstream).pipe(client);
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    lastEventIds,
    down() {
      cut = true;
      for (const socket of sockets) socket.resetAndDestroy();
    },
    up() {
      cut = false;
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

describe('dashboard operations pages in Chromium', () => {
  let dash: Dashboard;

  useDashboard(
    {
      config: {
        logs: { level: 'debug' },
        // A second channel, so one can be disabled without cutting the page's own live feed.
        channels: { webhook: { enabled: true, host: '127.0.0.1', port: 0, secret: 'dashboard-ops-secret' } },
      },
    },
    (started) => void (dash = started),
  );

  it('pairing: a code generated in the page counts down and verifies through the API', async () => {
    const { page } = dash;
    await withFailureScreenshot(page, 'pairing', async () => {
      await signIn(page, dash.url, ADMIN_TOKEN, 'pairing');
      await expect.poll(() => page.locator('.empty').count()).toBe(1); // the empty state before any code
      await page.getByLabel('Platform').fill('discord');
      await page.getByRole('button', { name: 'Generate code' }).click();
      const code = (await page.getByTestId('pairing-code').textContent())?.trim() ?? '';
      expect(code).toMatch(/^[A-Z0-9]{8}$/);
      const countdown = page.getByTestId('pairing-countdown');
      const first = await countdown.textContent();
      expect(first).toMatch(/Expires in \d+:\d\d/);
      await expect.poll(() => countdown.textContent(), { timeout: 5_000 }).not.toBe(first);
      await expectAccessible(page);
      await screenshot(page, 'pairing');

      // Through the API: the code pairs a discord user once.
      const paired = await dash.call('POST', '/api/v1/pair/verify', {
        token: API_TOKEN,
        body: { platform: 'discord', user_id: 'ops-user', code },
      });
      expect(paired.status).toBe(200);
      expect(paired.body).toMatchObject({ status: 'paired', platform: 'discord', user_id: 'ops-user' });
      const again = await dash.call('POST', '/api/v1/pair/verify', {
        token: API_TOKEN,
        body: { platform: 'discord', user_id: 'ops-user-2', code },
      });
      expect(again.status).toBe(401);
    });
  });

  it('channels: disabled in the page, enabled through the API and shown live', async () => {
    const { page } = dash;
    await withFailureScreenshot(page, 'channels', async () => {
      await signIn(page, dash.url, ADMIN_TOKEN, 'channels');
      const webhook = page.locator('tr[data-channel="webhook"]');
      await expect.poll(() => webhook.locator('.badge').textContent()).toBe('connected');
      await expect.poll(() => page.locator('.live-dot').textContent()).toBe('Live');
      await expectAccessible(page);
      await screenshot(page, 'channels');

      await page.getByRole('button', { name: 'Disable webhook' }).click();
      await expect.poll(() => webhook.locator('.badge').textContent()).toBe('disabled');
      const seen = await dash.call<{ enabled: boolean; connected: boolean }>('GET', '/api/v1/channels/webhook');
      expect(seen.body).toMatchObject({ enabled: false, connected: false });

      // Changed through the API: the open page follows through the `channels` topic, without a reload.
      const navigations: string[] = [];
      page.on('framenavigated', (frame) => navigations.push(frame.url()));
      const enabled = await dash.call('POST', '/api/v1/channels/webhook/enable');
      expect(enabled.status).toBe(200);
      await expect.poll(() => webhook.locator('.badge').textContent()).toBe('connected');
      await expect.poll(() => page.getByRole('button', { name: 'Disable webhook' }).count()).toBe(1);
      expect(navigations).toEqual([]);
    });
  });

  it('logs: follows live, filters, pauses and exports the shown lines', async () => {
    const { page } = dash;
    await withFailureScreenshot(page, 'logs', async () => {
      await signIn(page, dash.url, ADMIN_TOKEN, 'logs');
      await page.getByLabel('Minimum level').selectOption('debug');
      const state = page.getByTestId('logs-state');
      await expect.poll(() => state.textContent()).toMatch(/^Following/);
      const lines = page.getByTestId('log-lines').locator('tbody tr');

      // A request made through the API shows up as its request line, found by its request id.
      const probe = `ops-probe-${randomUUID()}`;
      expect((await dash.call('GET', '/api/v1/health', { headers: { 'x-request-id': probe } })).status).toBe(200);
      await expect.poll(() => lines.filter({ hasText: probe }).count(), { timeout: 10_000 }).toBe(1);
      await expectAccessible(page);
      await screenshot(page, 'logs');

      // The text filter narrows the shown lines; the source filter asks the server.
      await page.getByLabel('Text').fill(probe);
      await expect.poll(() => lines.count()).toBe(1);
      await page.getByLabel('Source').fill('lifecycle-nothing-here');
      await page.getByLabel('Source').press('Enter');
      await expect.poll(() => page.locator('.empty').count()).toBe(1);
      await page.getByLabel('Source').fill('http');
      await page.getByLabel('Source').press('Enter');
      await expect.poll(() => lines.count(), { timeout: 10_000 }).toBe(1); // the first page holds it again

      // Export: the shown lines as JSONL, built in the page, matching what the API answers.
      const [download] = await Promise.all([
        page.waitForEvent('download'),
        page.getByRole('button', { name: /Export shown/ }).click(),
      ]);
      expect(download.suggestedFilename()).toMatch(/^gatehouse-logs-.*\.jsonl$/);
      const exported = readFileSync(await download.path(), 'utf8')
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line) as LogItem);
      expect(exported).toHaveLength(1);
      expect(exported[0]!.metadata.request_id).toBe(probe);
      const fromApi = await dash.call<{ items: LogItem[] }>('GET', '/api/v1/logs?level=debug&source=http&limit=1000');
      const match = fromApi.body.items.find((item) => item.metadata.request_id === probe);
      expect(match).toEqual(exported[0]);

      // Pause holds new lines back; resume shows them.
      await page.getByLabel('Text').fill('ops-paused-');
      await page.getByRole('button', { name: 'Pause' }).click();
      const paused = `ops-paused-${randomUUID()}`;
      await dash.call('GET', '/api/v1/health', { headers: { 'x-request-id': paused } });
      await expect.poll(() => state.textContent(), { timeout: 10_000 }).toMatch(/Paused \([1-9]\d* new\)/);
      expect(await lines.filter({ hasText: paused }).count()).toBe(0);
      await page.getByRole('button', { name: 'Resume' }).click();
      await expect.poll(() => lines.filter({ hasText: paused }).count()).toBe(1);

      await page.getByLabel('Text').fill('');
    });
  });

  it('logs: after a dropped connection the tail resumes with Last-Event-ID and misses no line', async () => {
    // The page reaches the gateway through a TCP relay the test can cut, as a network drop would.
    const relay = await startRelay(Number(new URL(dash.url).port));
    const tab = await dash.browser.context.newPage();
    try {
      await withFailureScreenshot(tab, 'logs-drop', async () => {
        await signIn(tab, relay.url, ADMIN_TOKEN, 'logs');
        await tab.getByLabel('Minimum level').selectOption('debug');
        await tab.getByLabel('Text').fill('ops-drop-');
        const state = tab.getByTestId('logs-state');
        await expect.poll(() => state.textContent()).toMatch(/^Following/);
        const lines = tab.getByTestId('log-lines').locator('tbody tr');
        const before = `ops-drop-before-${randomUUID()}`;
        await dash.call('GET', '/api/v1/health', { headers: { 'x-request-id': before } });
        await expect.poll(() => lines.filter({ hasText: before }).count(), { timeout: 10_000 }).toBe(1);

        relay.down();
        await expect.poll(() => state.textContent(), { timeout: 10_000 }).toMatch(/Reconnecting/);
        // Written while the page is cut off: only a resumed stream can bring it.
        const during = `ops-drop-during-${randomUUID()}`;
        await dash.call('GET', '/api/v1/health', { headers: { 'x-request-id': during } });
        relay.up();
        await expect.poll(() => state.textContent(), { timeout: 20_000 }).toMatch(/^Following/);
        await expect.poll(() => lines.filter({ hasText: during }).count(), { timeout: 10_000 }).toBe(1);
        expect(await lines.filter({ hasText: before }).count()).toBe(1); // nothing twice
        expect(relay.lastEventIds.some((id) => /^[0-9a-z]+-\d+$/.test(id))).toBe(true);
      });
    } finally {
      await tab.close();
      await relay.close();
    }
  });

  it('reports nothing unexpected in the first tab', async () => {
    // A tail the page ends itself (a filter changed, the page left) is aborted on purpose.
    const ownAborts = [/^requestfailed net::ERR_ABORTED http:\/\/127\.0\.0\.1:\d+\/api\/v1\/logs\?follow=true/];
    expect(unexpectedProblems(await dash.problems(), ownAborts)).toEqual([]);
  });

  it('first start: the banner link signs in, and the generated token is in no log or audit line', async () => {
    // A gateway with no configured token: it generates an admin token and prints the one-click link.
    const home = e2eHome(dash.fake, { gateway: { port: 0 }, logs: { level: 'debug' } });
    const running = await startGateway(home);
    const tab = await dash.browser.context.newPage();
    try {
      await withFailureScreenshot(tab, 'first-start', async () => {
        const banner = await running.gw.line('stderr', /Open the dashboard/);
        const link = /(http:\/\/\S+\/#token=\S+)/.exec(banner)?.[1] ?? '';
        expect(link.startsWith(`${running.url}/#token=`)).toBe(true);
        const token = decodeURIComponent(link.slice(link.indexOf('#token=') + '#token='.length));
        expect(token.length).toBeGreaterThan(20);
        expect(readFileSync(join(home.dataDir, 'gateway_auth', 'admin_token'), 'utf8').trim()).toBe(token);

        const urls: string[] = [];
        tab.on('request', (request) => urls.push(request.url()));
        await tab.goto(link);
        await tab.getByRole('navigation', { name: 'Pages' }).waitFor();
        expect(tab.url()).not.toContain(token);
        expect(await tab.locator('.role strong').textContent()).toBe('admin');
        await tab.evaluate('location.hash = "#/logs"');
        await tab.getByTestId('logs-state').waitFor();
        await expect.poll(() => tab.getByTestId('logs-state').textContent()).toMatch(/^Following/);
        expect(urls.length).toBeGreaterThan(2);
        for (const url of urls) expect(url).not.toContain(token);

        // Every log line (stdout and the day files) and every audit line: no token, only its fingerprint.
        const written: string[] = [...running.gw.stdout];
        const bannerLines = running.gw.stderr.filter((l) => l.includes(token));
        expect(bannerLines.length).toBe(2); // "Admin token: …" and the link, on the terminal only
        written.push(...running.gw.stderr.filter((l) => !bannerLines.includes(l)));
        const logsDir = join(home.dataDir, 'logs');
        expect(existsSync(logsDir)).toBe(true);
        for (const file of readdirSync(logsDir)) written.push(readFileSync(join(logsDir, file), 'utf8'));
        const audit = readFileSync(join(home.dataDir, 'gateway_auth', 'audit.jsonl'), 'utf8');
        expect(audit).toMatch(/"event":"token_used"/);
        written.push(audit);
        expect(written.join('\n')).toContain('/api/v1/logs');
        for (const text of written) expect(text).not.toContain(token);
      });
    } finally {
      await tab.close();
      await stopGateway(running, 'SIGTERM');
    }
  }, 60_000);
});
