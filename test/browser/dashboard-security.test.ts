/**
 * The dashboard's security in Chromium (ADR 0020, DECISIONS §4 and §14): without a token it shows only the
 * sign-in screen under the strict CSP; an api token sees no admin controls and the server still refuses an
 * admin call forced from the page; signing in through the start-up link (`/#token=…`) leaves the token in no
 * URL, no request line, no log line and no audit line.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Request } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import {
  ADMIN_TOKEN,
  API_TOKEN,
  expectAccessible,
  openPage,
  screenshot,
  signIn,
  useDashboard,
  unexpectedProblems,
  withFailureScreenshot,
  type Dashboard,
} from '../helpers/dashboard.js';

const CSP_DIRECTIVES = [
  "default-src 'self'",
  "script-src 'self'",
  "connect-src 'self'",
  "img-src 'self' data:",
  "style-src 'self'",
  "frame-ancestors 'none'",
];

/** The role probe of an api token (admin-only GET /logs) is the one refused request an api sign-in makes. */
const ROLE_PROBE_403 = /console .*403.*\/api\/v1\/logs\?limit=1/;

describe('dashboard security in Chromium', () => {
  let dash: Dashboard;

  // Info-level logs, so request lines are written and can be searched for the token.
  useDashboard({ config: { logs: { level: 'debug' } } }, (started) => void (dash = started));

  it('shows only the sign-in screen without a token, under the strict CSP', async () => {
    const { page } = dash;
    await withFailureScreenshot(page, 'security-signed-out', async () => {
      const response = await page.goto(`${dash.url}/`);
      expect(response?.status()).toBe(200);
      const csp = (response?.headers()['content-security-policy'] ?? '').split(/;\s*/);
      for (const directive of CSP_DIRECTIVES) expect(csp).toContain(directive);
      const field = page.getByLabel('API token');
      await field.waitFor();
      await expect.poll(() => field.evaluate((el) => el === el.ownerDocument.activeElement)).toBe(true);
      expect(await page.getByRole('navigation', { name: 'Pages' }).count()).toBe(0);
      await page.goto(`${dash.url}/#/sessions`);
      await field.waitFor();
      expect(await page.getByRole('navigation', { name: 'Pages' }).count()).toBe(0);
      await expectAccessible(page);
      await screenshot(page, 'dashboard-sign-in');

      // A refused token is said, with the request id, and nothing is kept.
      await field.fill('not-a-token');
      await page.getByRole('button', { name: 'Sign in' }).click();
      const alert = page.getByRole('alert');
      await expect.poll(() => alert.textContent()).toMatch(/Token refused: .+Request id: \S+/);
      expect(await page.evaluate("sessionStorage.getItem('gatehouse.token')")).toBeNull();
      await expectAccessible(page);
      const problems = unexpectedProblems(await dash.problems(), [/console .*401/]);
      expect(problems).toEqual([]);
    });
  });

  it('hides admin controls from an api token, and the server refuses a forced admin call', async () => {
    const tab = await dash.browser.context.newPage();
    await withFailureScreenshot(tab, 'security-api-role', async () => {
      const session = await dash.call<{ id: string }>('POST', '/api/v1/sessions', {
        token: API_TOKEN,
        body: { channel: 'sectest' },
      });
      expect(session.status).toBe(201);
      await tab.goto(`${dash.url}/`);
      await tab.getByLabel('API token').fill(API_TOKEN);
      await tab.getByRole('button', { name: 'Sign in' }).click();
      await tab.getByRole('navigation', { name: 'Pages' }).waitFor();
      expect(await tab.locator('.role strong').textContent()).toBe('api');
      expect(await tab.evaluate("sessionStorage.getItem('gatehouse.token')")).toBe(API_TOKEN);

      await openPage(tab, 'sessions');
      await tab.getByRole('button', { name: `Open ${session.body.id}`, exact: true }).waitFor();
      await tab.getByRole('button', { name: `Open ${session.body.id}` }).click();
      await tab.getByRole('heading', { name: 'History' }).waitFor();
      expect(await tab.getByRole('button', { name: /^Delete/ }).count()).toBe(0);
      await openPage(tab, 'approvals');
      expect(await tab.getByRole('button', { name: /^(Approve|Deny)/ }).count()).toBe(0);
      expect(await tab.getByText('An admin token is needed').count()).toBeGreaterThan(0);
      await expectAccessible(tab);
      await screenshot(tab, 'dashboard-api-role');

      // Forced from the page with the signed-in token: the server refuses it.
      const forced = await tab.evaluate(`(async () => {
        const token = sessionStorage.getItem('gatehouse.token');
        const res = await fetch('/api/v1/memory', {
          method: 'POST',
          headers: { authorization: 'Bearer ' + token, 'content-type': 'application/json' },
          body: JSON.stringify({ content: 'forced' }),
        });
        return { status: res.status, body: await res.json() };
      })()`);
      expect(forced).toMatchObject({ status: 403, body: { error: { code: 'FORBIDDEN' } } });
      const memory = await dash.call<{ items: unknown[] }>('GET', '/api/v1/memory');
      expect(memory.body.items).toEqual([]);
    });
    await tab.close();
  });

  it('signs in through #token= and leaves the token in no URL, log line or audit line', async () => {
    const tab = await dash.browser.context.newPage();
    const requests: Request[] = [];
    tab.on('request', (request) => requests.push(request));
    await withFailureScreenshot(tab, 'security-fragment', async () => {
      await signIn(tab, dash.url, ADMIN_TOKEN, 'overview');
      expect(tab.url()).toBe(`${dash.url}/#/overview`);
      expect(await tab.evaluate<string>('location.href')).not.toContain(ADMIN_TOKEN);
      expect(await tab.evaluate('history.length')).toBeGreaterThan(0);
      expect(await tab.locator('.role strong').textContent()).toBe('admin');
      await openPage(tab, 'sessions');
      await openPage(tab, 'overview');
      await expect.poll(() => tab.locator('.live-dot').textContent()).toBe('Live');

      // The token travelled in headers and the WebSocket auth frame only.
      expect(requests.length).toBeGreaterThan(3);
      for (const request of requests) expect(request.url()).not.toContain(ADMIN_TOKEN);
      expect(requests.some((r) => r.headers().authorization === `Bearer ${ADMIN_TOKEN}`)).toBe(true);

      // Nothing the gateway wrote holds it: stdout/stderr, the day log files, the audit log.
      const written: string[] = [...dash.gateway.gw.stdout, ...dash.gateway.gw.stderr];
      const logsDir = join(dash.home.dataDir, 'logs');
      if (existsSync(logsDir)) {
        for (const file of readdirSync(logsDir)) written.push(readFileSync(join(logsDir, file), 'utf8'));
      }
      const audit = join(dash.home.dataDir, 'gateway_auth', 'audit.jsonl');
      expect(existsSync(audit)).toBe(true);
      const auditText = readFileSync(audit, 'utf8');
      expect(auditText).toMatch(/"event":"(token_used|auth_success)"/);
      written.push(auditText);
      expect(written.join('\n').length).toBeGreaterThan(0);
      for (const text of written) expect(text).not.toContain(ADMIN_TOKEN);
      expect(written.join('\n')).toMatch(/GET \/api\/v1\/|"url":"\/api\/v1\/|\/api\/v1\//);
    });
    await tab.close();
  });

  it('reports nothing unexpected in the first tab', async () => {
    expect(unexpectedProblems(await dash.problems(), [/console .*401/, ROLE_PROBE_403])).toEqual([]);
  });
});
