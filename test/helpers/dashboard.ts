/**
 * Dashboard browser tests (ADR 0020): one call starts the fake OpenAI provider, the built gateway on it
 * (`dist/`, rebuilt first by `scripts/build-if-needed.mjs`, dashboard included) and Chromium with a watched
 * page; helpers sign in, open a page by its hash route, keep screenshots (`GATEHOUSE_SCREENSHOTS=<dir>`; on
 * failure always, by `browser.ts`: `test-results/screenshots/`), run axe-core, and call the API directly.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, expect } from 'vitest';
import { killAllNow, ROOT } from '../../bench/processes.js';
import { createGatehouseClient, type GatehouseClient } from '../../client/index.js';
import {
  ADMIN_TOKEN,
  API_TOKEN,
  call,
  e2eHome,
  removeE2EHomes,
  startGateway,
  stopGateway,
  type Answer,
  type E2EHome,
  type Running,
} from '../e2e/helpers.js';
import { launchBrowser, seriousAxeViolations, watchPage, type BrowserSession, type PageProblem } from './browser.js';
import { startFakeOpenAI, type FakeOpenAI } from './fake-openai.js';

export { ADMIN_TOKEN, API_TOKEN };

/** Everything a dashboard test drives. */
export interface Dashboard {
  fake: FakeOpenAI;
  home: E2EHome;
  gateway: Running;
  /** The gateway's base URL (`http://127.0.0.1:<port>`). */
  url: string;
  browser: BrowserSession;
  /** The first tab, watched from the start. */
  page: Page;
  /** What the first tab did that a healthy page does not (console errors, CSP violations, failed requests). */
  problems: () => Promise<PageProblem[]>;
  /** The typed client with the admin token, for checks and set-up through the API. */
  admin: GatehouseClient;
  /** The typed client with the api token. */
  api: GatehouseClient;
  /** One raw JSON call (admin token unless `token` says otherwise). */
  call<T = Record<string, unknown>>(
    method: string,
    path: string,
    options?: { token?: string; body?: unknown; headers?: Record<string, string> },
  ): Promise<Answer<T>>;
  /** Stops everything (browser, gateway, fake) and removes the temp dirs; safe to call once in `afterAll`. */
  close(): Promise<void>;
}

/** Options of `startDashboard`. */
export interface DashboardOptions {
  /** Whole top-level config blocks to add or replace (e.g. `{agent: {approval_required: ['memory_save']}}`). */
  config?: Record<string, unknown>;
  viewport?: { width: number; height: number };
}

/**
 * One dashboard for the enclosing `describe`: started in `beforeAll` (signed in with `signInAs` when given),
 * handed to `onStart`, closed in `afterAll`.
 */
export function useDashboard(
  options: DashboardOptions,
  onStart: (dash: Dashboard) => void | Promise<void>,
  signInAs?: string,
): void {
  let dash: Dashboard | undefined;
  beforeAll(async () => {
    dash = await startDashboard(options);
    if (signInAs) await signIn(dash.page, dash.url, signInAs);
    await onStart(dash);
  }, 90_000);
  afterAll(async () => {
    await dash?.close();
  });
}

/** Builds if needed, then starts the fake provider, the gateway and Chromium. Call from `beforeAll` (60 s). */
export async function startDashboard(options: DashboardOptions = {}): Promise<Dashboard> {
  execFileSync(process.execPath, [join(ROOT, 'scripts', 'build-if-needed.mjs')], { stdio: 'inherit' });
  const fake = await startFakeOpenAI();
  const home = e2eHome(fake, options.config ?? {});
  const [gateway, browser] = await Promise.all([
    startGateway(home),
    launchBrowser(options.viewport ? { viewport: options.viewport } : {}),
  ]);
  const page = browser.page;
  const { problems } = await watchPage(page);
  const url = gateway.url;
  return {
    fake,
    home,
    gateway,
    url,
    browser,
    page,
    problems,
    admin: createGatehouseClient(url, ADMIN_TOKEN),
    api: createGatehouseClient(url, API_TOKEN),
    call: (method, path, callOptions = {}) => call(url, method, path, { token: ADMIN_TOKEN, ...callOptions }),
    async close() {
      await browser.close().catch(() => undefined);
      await stopGateway(gateway, 'SIGTERM').catch(() => undefined);
      await fake.close().catch(() => undefined);
      killAllNow();
      removeE2EHomes();
    },
  };
}

/**
 * Signs in through the start-up link (`/#token=…`) and waits for the shell (its navigation) to show.
 * `route` opens that page afterwards (`'chat'` → `#/chat`).
 */
export async function signIn(page: Page, url: string, token: string, route?: string): Promise<void> {
  await page.goto(`${url}/#token=${encodeURIComponent(token)}`);
  await page.getByRole('navigation', { name: 'Pages' }).waitFor();
  if (route) await openPage(page, route);
}

/**
 * Opens `#/<route>` in the signed-in shell and waits for its navigation link to be current and its heading (`h1`)
 * to show. The link need not be visible: on a phone the navigation is folded behind its menu button.
 */
export async function openPage(page: Page, route: string): Promise<void> {
  await page.evaluate(`location.hash = ${JSON.stringify(`#/${route}`)}`);
  await page.locator(`nav a[href="#/${route}"][aria-current="page"]`).waitFor({ state: 'attached' });
  await page.locator('main h1').first().waitFor();
}

/** Writes `<name>.png` of the whole page into `GATEHOUSE_SCREENSHOTS` when it names a folder. */
export async function screenshot(page: Page, name: string): Promise<void> {
  const dir = process.env.GATEHOUSE_SCREENSHOTS;
  if (!dir) return;
  mkdirSync(dir, { recursive: true });
  await page.screenshot({ path: join(dir, `${name}.png`), fullPage: true });
}

/**
 * Runs one scenario. The screenshots of a failure are taken for every test by `browser.ts` (each open page,
 * into `test-results/screenshots/`, the paths printed), so this only runs it; `name` stays for the scenarios
 * that name themselves with it.
 */
export async function withFailureScreenshot(_page: Page, _name: string, scenario: () => Promise<void>): Promise<void> {
  await scenario();
}

/** Asserts axe-core finds no serious or critical violation on the page as it is. */
export async function expectAccessible(page: Page): Promise<void> {
  expect(await seriousAxeViolations(page)).toEqual([]);
}

/** The problems of a page minus those `allowed` expects (e.g. the role probe's 403 for an api token). */
export function unexpectedProblems(problems: PageProblem[], allowed: RegExp[] = []): PageProblem[] {
  return problems.filter((p) => !allowed.some((pattern) => pattern.test(`${p.kind} ${p.text} ${p.url}`)));
}

/** Screenshots of the page as it is: light at 1280×800, dark, and on a 390-px phone (when `GATEHOUSE_SCREENSHOTS` is set). */
export async function screenshotsInEveryMode(page: Page, name: string): Promise<void> {
  if (!process.env.GATEHOUSE_SCREENSHOTS) return;
  const size = page.viewportSize();
  await page.setViewportSize({ width: 1280, height: 800 });
  await screenshot(page, `dashboard-${name}`);
  await page.emulateMedia({ colorScheme: 'dark' });
  await screenshot(page, `dashboard-${name}-dark`);
  await page.emulateMedia({ colorScheme: 'light' });
  await page.setViewportSize({ width: 390, height: 844 });
  await screenshot(page, `dashboard-${name}-phone`);
  if (size) await page.setViewportSize(size);
}

/** The text of `field`'s error (its `aria-describedby` target ending in `-error`), once it is marked invalid. */
export async function fieldError(field: Locator): Promise<string> {
  await expect.poll(() => field.getAttribute('aria-invalid')).toBe('true');
  const ids = (await field.getAttribute('aria-describedby')) ?? '';
  const id = ids.split(' ').find((candidate) => candidate.endsWith('-error')) ?? '';
  return (await field.page().locator(`[id="${id}"]`).textContent()) ?? '';
}
