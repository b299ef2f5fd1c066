/**
 * The API docs page in a real browser (ADR 0018): Chromium against the built gateway over a real socket.
 * The page must load under its strict CSP without a single console error or CSP violation, sign in by form
 * and by `#token=` fragment, render the operations, run "Try it", say clearly when a token is refused, and
 * pass axe-core without serious or critical violations. `GATEHOUSE_SCREENSHOTS=<dir>` keeps screenshots.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { killAllNow, ROOT } from '../../bench/processes.js';
import { call, startGateway, stopGateway, type E2EHome, type Running } from '../e2e/helpers.js';
import {
  launchBrowser,
  seriousAxeViolations,
  watchPage,
  type BrowserSession,
  type PageProblem,
} from '../helpers/browser.js';

const API_TOKEN = 'browser-api-token';
const ADMIN_TOKEN = 'browser-admin-token';
const CSP_DIRECTIVES = [
  "default-src 'self'",
  "script-src 'self'",
  "connect-src 'self'",
  "img-src 'self' data:",
  "style-src 'self'",
  "frame-ancestors 'none'",
];

describe('API docs page in Chromium', () => {
  let home: E2EHome;
  let gateway: Running;
  let browser: BrowserSession;
  let page: Page;
  let problems: () => Promise<PageProblem[]>;
  let docsUrl: string;

  /** Keeps a screenshot of the page (or of one element) when GATEHOUSE_SCREENSHOTS names a folder. */
  const screenshot = async (name: string, element?: Locator) => {
    const dir = process.env.GATEHOUSE_SCREENSHOTS;
    if (!dir) return;
    mkdirSync(dir, { recursive: true });
    const path = join(dir, `${name}.png`);
    await (element ? element.screenshot({ path }) : page.screenshot({ path }));
  };
  const sessionToken = (p: Page) => p.evaluate<string | null>("sessionStorage.getItem('gatehouse.token')");
  const operation = (p: Page, id: string) => p.locator(`details#${id}`);

  beforeAll(async () => {
    // The e2e tier runs dist/: make sure it is current (a no-op on a built tree), page files included.
    execFileSync(process.execPath, [join(ROOT, 'scripts', 'build-if-needed.mjs')], { stdio: 'inherit' });
    const dir = mkdtempSync(join(tmpdir(), 'gatehouse-browser-'));
    home = { dir, dataDir: join(dir, 'data'), configFile: join(dir, 'gatehouse.yaml') };
    writeFileSync(
      home.configFile,
      JSON.stringify({
        data_dir: home.dataDir,
        gateway: { port: 0, auth: { api_tokens: [API_TOKEN], admin_tokens: [ADMIN_TOKEN] } },
        logs: { level: 'warning' },
      }),
    );
    [gateway, browser] = await Promise.all([startGateway(home), launchBrowser()]);
    page = browser.page;
    ({ problems } = await watchPage(page));
    docsUrl = `${gateway.url}/api/v1/docs`;
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    if (gateway) await stopGateway(gateway, 'SIGTERM');
    killAllNow();
    if (home) rmSync(home.dir, { recursive: true, force: true, maxRetries: 3 });
  });

  it('opens without a token under a strict CSP and asks for one', async () => {
    const response = await page.goto(docsUrl);
    expect(response?.status()).toBe(200);
    const csp = response?.headers()['content-security-policy'] ?? '';
    for (const directive of CSP_DIRECTIVES) expect(csp.split(/;\s*/)).toContain(directive);
    const token = page.getByLabel('API token');
    await expect.poll(() => token.isVisible()).toBe(true);
    await expect.poll(() => token.evaluate((el) => el === el.ownerDocument.activeElement)).toBe(true);
    expect(await page.locator('#docs').isHidden()).toBe(true);
    expect(await problems()).toEqual([]);
  });

  it('signs in with the form, lists the operations by tag and runs "Try it" with the token', async () => {
    const created = await call<{ id: string }>(gateway.url, 'POST', '/api/v1/sessions', {
      token: API_TOKEN,
      body: { metadata: { from: 'browser-test' } },
    });
    expect(created.status).toBe(201);

    await page.getByLabel('API token').fill(API_TOKEN);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect
      .poll(() => page.locator('#status').textContent())
      .toMatch(/^Signed in\. \d+ operations in \d+ groups\.$/);
    expect(await sessionToken(page)).toBe(API_TOKEN);
    expect(await page.getByRole('heading', { level: 2, name: 'sessions' }).isVisible()).toBe(true);
    expect(await page.getByRole('button', { name: 'Sign out' }).isVisible()).toBe(true);
    await screenshot('docs-overview');

    // Every operation of the document is on the page, under its tag.
    const doc = await call<{ paths: Record<string, Record<string, unknown>> }>(
      gateway.url,
      'GET',
      '/api/v1/openapi.json',
      {
        token: API_TOKEN,
      },
    );
    const operations = Object.values(doc.body.paths).reduce((n, item) => n + Object.keys(item).length, 0);
    expect(await page.locator('#operations details.op').count()).toBe(operations);

    const list = operation(page, 'op-get-api-v1-sessions');
    expect(await list.locator('summary').textContent()).toContain('GET/api/v1/sessions');
    await list.locator('summary').click();
    expect(await list.getByRole('table').first().textContent()).toContain('limit');
    await list.getByLabel(/^limit/).fill('5');
    await list.getByRole('button', { name: 'Send request' }).click();
    const status = list.locator('[data-status]');
    await expect.poll(() => status.textContent()).toBe('200 OK');
    const bodyText = (await list.getByLabel('Response body').textContent()) ?? '';
    expect(bodyText).toContain(created.body.id);
    expect(await list.getByLabel('Response headers').textContent()).toMatch(/^content-type: application\/json/m);
    expect(await list.locator('.response-line').textContent()).toContain('GET /api/v1/sessions?limit=5');
    await screenshot('docs-try-it', list);

    // A write: the body textarea is prefilled with a skeleton of the schema, valid JSON the route accepts.
    const create = operation(page, 'op-post-api-v1-sessions');
    await create.locator('summary').click();
    const skeleton = await create.getByLabel('Request body (JSON)').inputValue();
    expect(() => JSON.parse(skeleton) as unknown).not.toThrow();
    await create.getByRole('button', { name: 'Send request' }).click();
    await expect.poll(() => create.locator('[data-status]').textContent()).toBe('201 Created');
    expect(await create.getByLabel('Response body').textContent()).toMatch(/"id": "/);

    // POST /message: the skeleton carries the required fields.
    const message = operation(page, 'op-post-api-v1-message');
    await message.locator('summary').click();
    const messageSkeleton = JSON.parse(await message.getByLabel('Request body (JSON)').inputValue()) as object;
    expect(await message.locator('pre.schema').first().textContent()).toMatch(
      /^\{\n {2}platform: string {2}\/\/ 1–100 chars\n/,
    );
    // Only elements in the operation's body: no stray text such as "null" for a missing description.
    expect(await message.locator('.op-body').evaluate((el) => [...el.childNodes].map((n) => n.nodeName))).not.toContain(
      '#text',
    );
    expect(Object.keys(messageSkeleton)).toEqual(expect.arrayContaining(['platform', 'user_id', 'chat_id', 'text']));

    // The AsyncAPI document, listed in the OpenAPI one, is read with the token and shown under "Streams".
    expect(Object.keys(doc.body.paths)).toContain('/api/v1/asyncapi.json');
    const streams = page.locator('#streams');
    expect(await streams.getByRole('heading', { level: 3 }).first().textContent()).toMatch(/\(AsyncAPI 3\.\d+\.\d+\)$/);
    const ws = streams.locator('details.op').filter({ hasText: 'Client frames' });
    await ws.locator('summary').click();
    expect(await ws.locator('pre.schema').first().textContent()).toContain('type: "auth"');

    await screenshot('docs-signed-in');
    expect(await problems()).toEqual([]);
  });

  it('has no serious or critical accessibility violations (axe-core), signed in and signed out', async () => {
    expect(await seriousAxeViolations(page)).toEqual([]);
    await page.getByRole('button', { name: 'Sign out' }).click();
    expect(await sessionToken(page)).toBeNull();
    expect(await page.getByLabel('API token').isVisible()).toBe(true);
    expect(await page.locator('#operations details').count()).toBe(0);
    expect(await seriousAxeViolations(page)).toEqual([]);
    expect(await problems()).toEqual([]);
  });

  it('says clearly when the token is refused', async () => {
    await page.getByLabel('API token').fill('not-a-token');
    await page.getByRole('button', { name: 'Sign in' }).click();
    const alert = page.getByRole('alert');
    await expect.poll(() => alert.textContent()).toContain('Token refused');
    expect(await sessionToken(page)).toBeNull();
    expect(await page.getByLabel('API token').evaluate((el) => el === el.ownerDocument.activeElement)).toBe(true);
    expect(await seriousAxeViolations(page)).toEqual([]);
    await screenshot('docs-token-refused');
    // Only the refused document request itself is reported by the browser.
    const seen = await problems();
    expect(seen.filter((p) => !(p.kind === 'console' && p.url.endsWith('/api/v1/openapi.json')))).toEqual([]);
    expect(seen.filter((p) => p.kind === 'console').map((p) => p.text)).toEqual([expect.stringContaining('401')]);
  });

  it('signs in through the #token= fragment and removes it from the URL at once', async () => {
    const tab = await browser.context.newPage();
    const watched = await watchPage(tab);
    const response = await tab.goto(`${gateway.url}/api/docs#token=${ADMIN_TOKEN}`);
    expect(response?.status()).toBe(200);
    await expect.poll(() => tab.locator('#status').textContent()).toMatch(/^Signed in\./);
    expect(tab.url()).toBe(`${gateway.url}/api/docs`);
    expect(await tab.evaluate<string>('location.hash')).toBe('');
    expect(await sessionToken(tab)).toBe(ADMIN_TOKEN);
    // Under the /api alias, the page calls the alias too.
    const health = operation(tab, 'op-get-api-v1-health');
    await health.locator('summary').click();
    await health.getByRole('button', { name: 'Send request' }).click();
    await expect.poll(() => health.locator('[data-status]').textContent()).toBe('200 OK');
    expect(await health.getByLabel('Response body').textContent()).toContain('"status"');
    // A stream (admin: GET /logs?follow=true) shows its status at once and ends with Stop.
    const logs = operation(tab, 'op-get-api-v1-logs');
    await logs.locator('summary').click();
    await logs.getByLabel(/^follow/).selectOption('true');
    await logs.getByRole('button', { name: 'Send request' }).click();
    await expect.poll(() => logs.locator('[data-status]').textContent()).toBe('200 OK');
    expect(await logs.getByLabel('Response headers').textContent()).toMatch(/^content-type: text\/event-stream/m);
    await logs.getByRole('button', { name: 'Stop' }).click();
    await expect.poll(() => logs.getByLabel('Response body').textContent()).toMatch(/\(stopped\)$/);
    expect(await logs.getByRole('button', { name: 'Stop' }).isHidden()).toBe(true);
    expect(await logs.getByRole('button', { name: 'Send request' }).isEnabled()).toBe(true);
    // The one thing reported is the stream that Stop aborted: the request itself ended, not only the reading.
    // Chromium reports the failed request a moment after the page has shown "(stopped)".
    await expect
      .poll(() => watched.problems())
      .toEqual([{ kind: 'requestfailed', text: 'net::ERR_ABORTED', url: `${gateway.url}/api/v1/logs?follow=true` }]);
    await tab.close();
  });
});
