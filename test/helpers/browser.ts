/**
 * Chromium for browser tests (ADR 0018): Debian's `/usr/bin/chromium` driven by `playwright-core`, headless,
 * in a new empty profile per launch that is removed on close. CI installs Chromium (`.ci/run`); a missing
 * binary fails the test with an install hint, it never skips it. Also: a watcher for what a page must not do
 * (console errors, uncaught exceptions, CSP violations, failed requests), an axe-core run, and screenshots on
 * failure: when a test of a file that imports this module fails, every page still open in a browser it
 * launched is saved whole into `test-results/screenshots/<file> - <test>.png` (git-ignored) and the path is
 * printed, so a failure can be seen as the browser saw it.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { afterEach } from 'vitest';

/** The Chromium binary: Debian's package, or `GATEHOUSE_CHROMIUM` where it lives elsewhere. */
export const CHROMIUM_PATH = process.env.GATEHOUSE_CHROMIUM ?? '/usr/bin/chromium';

/** Flags for a quiet, reproducible headless run on a CI container (no sandbox: containers run as root). */
const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-default-apps',
  '--disable-extensions',
  '--disable-sync',
  '--disable-dev-shm-usage',
  '--disable-gpu',
  '--no-first-run',
  '--no-default-browser-check',
  '--metrics-recording-only',
  '--mute-audio',
  '--password-store=basic',
];

/** Where the screenshots of failed tests go (`.ci/run` names it when the tests fail). */
export const FAILURE_SCREENSHOTS_DIR = join(import.meta.dirname, '..', '..', 'test-results', 'screenshots');

/** The contexts of the browsers launched by this test file and not closed yet. */
const openContexts = new Set<BrowserContext>();

/** `text` as a file name: letters, digits, dots, dashes and spaces; at most 150 characters. */
function fileName(text: string): string {
  return text
    .replace(/[^A-Za-z0-9._ -]+/g, ' ')
    .replace(/\s+/g, ' ')
    .trim()
    .slice(0, 150)
    .trim();
}

/**
 * Saves a full-page screenshot of every page open in the browsers this file launched, as
 * `<dir>/<name>.png` (then `<name> (2).png`, … for further pages), and answers the paths written. A page that
 * cannot be captured (closed, hung) is skipped.
 */
export async function screenshotOpenPages(name: string, dir = FAILURE_SCREENSHOTS_DIR): Promise<string[]> {
  const pages = [...openContexts].flatMap((context) => context.pages()).filter((page) => !page.isClosed());
  if (pages.length === 0) return [];
  mkdirSync(dir, { recursive: true });
  const written: string[] = [];
  for (const [index, page] of pages.entries()) {
    const path = join(dir, `${fileName(name)}${index === 0 ? '' : ` (${index + 1})`}.png`);
    try {
      await page.screenshot({ path, fullPage: true, timeout: 10_000 });
      written.push(path);
    } catch {
      // A closed or stuck page: nothing to show.
    }
  }
  return written;
}

// Once for every test file that drives a browser: a failed test leaves a picture of each open page.
afterEach(async ({ task }) => {
  if (task.result?.state !== 'fail' || openContexts.size === 0) return;
  const name = `${basename(task.file.name).replace(/\.test\.ts$/, '')} - ${task.name}`;
  const paths = await screenshotOpenPages(name);
  for (const path of paths) process.stderr.write(`screenshot of the failed test "${task.name}": ${path}\n`);
}, 60_000);

/** A launched browser: its one context, the first page, and `close()` (browser closed, profile removed). */
export interface BrowserSession {
  context: BrowserContext;
  page: Page;
  close(): Promise<void>;
}

export interface LaunchOptions {
  /** Playwright's `bypassCSP` (default false): only for injecting test tools, never for the checks themselves. */
  bypassCSP?: boolean;
  viewport?: { width: number; height: number };
}

/**
 * Launches headless Chromium with a fresh profile (`launchPersistentContext` on a new `mkdtemp` dir).
 * Throws when the binary is missing (CI must have it; `apt-get install -y chromium`).
 */
export async function launchBrowser(options: LaunchOptions = {}): Promise<BrowserSession> {
  if (!existsSync(CHROMIUM_PATH)) {
    throw new Error(
      `Chromium not found at ${CHROMIUM_PATH}: install it (apt-get install -y chromium) or set GATEHOUSE_CHROMIUM. ` +
        'Browser tests never skip.',
    );
  }
  const profileDir = mkdtempSync(join(tmpdir(), 'gatehouse-chromium-'));
  let context: BrowserContext;
  try {
    context = await chromium.launchPersistentContext(profileDir, {
      executablePath: CHROMIUM_PATH,
      headless: true,
      args: CHROMIUM_ARGS,
      viewport: options.viewport ?? { width: 1280, height: 900 },
      bypassCSP: options.bypassCSP ?? false,
      timeout: 30_000,
    });
  } catch (err) {
    rmSync(profileDir, { recursive: true, force: true });
    throw err;
  }
  context.setDefaultTimeout(10_000);
  openContexts.add(context);
  const page = context.pages()[0] ?? (await context.newPage());
  return {
    context,
    page,
    async close() {
      openContexts.delete(context);
      try {
        await context.close();
      } finally {
        rmSync(profileDir, { recursive: true, force: true, maxRetries: 3 });
      }
    },
  };
}

/** One thing a page did that a healthy page does not. */
export interface PageProblem {
  kind: 'console' | 'pageerror' | 'csp' | 'requestfailed';
  text: string;
  /** The resource concerned, when known. */
  url: string;
}

/**
 * Records console errors, uncaught exceptions, failed requests and CSP violations (a `securitypolicyviolation`
 * listener installed before any page script runs, read back by `problems()`). Install before navigating.
 */
export async function watchPage(page: Page): Promise<{ problems: () => Promise<PageProblem[]> }> {
  const seen: PageProblem[] = [];
  page.on('console', (message) => {
    if (message.type() === 'error') seen.push({ kind: 'console', text: message.text(), url: message.location().url });
  });
  page.on('pageerror', (error) => seen.push({ kind: 'pageerror', text: String(error), url: page.url() }));
  page.on('requestfailed', (request) =>
    seen.push({ kind: 'requestfailed', text: request.failure()?.errorText ?? 'failed', url: request.url() }),
  );
  // Page-side JavaScript, as text: the project's type library has no DOM.
  await page.addInitScript({
    content: `globalThis.__cspViolations = [];
      document.addEventListener('securitypolicyviolation', (e) => {
        globalThis.__cspViolations.push(e.violatedDirective + ' blocked ' + (e.blockedURI || 'inline') +
          ' (' + e.sourceFile + ':' + e.lineNumber + ')');
      });`,
  });
  return {
    async problems() {
      const csp = await page.evaluate(
        () => (globalThis as unknown as { __cspViolations?: string[] }).__cspViolations ?? [],
      );
      return [...seen, ...csp.map((text) => ({ kind: 'csp' as const, text, url: page.url() }))];
    },
  };
}

/** One axe-core rule violation, reduced to what a failing assertion should show. */
export interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  targets: string[];
}

const AXE_SOURCE_PATH = join(import.meta.dirname, '..', '..', 'node_modules', 'axe-core', 'axe.min.js');

/**
 * Runs axe-core on the page as it is and answers the violations of impact `serious` or `critical`. The
 * source is evaluated through the DevTools protocol, which the page's CSP does not govern, so the page keeps
 * its real policy.
 */
export async function seriousAxeViolations(page: Page): Promise<AxeViolation[]> {
  const loaded = await page.evaluate(() => typeof (globalThis as unknown as { axe?: unknown }).axe === 'object');
  if (!loaded) await page.evaluate(readFileSync(AXE_SOURCE_PATH, 'utf8'));
  const violations = await page.evaluate(async () => {
    const axe = (globalThis as unknown as { axe: { run: (context: unknown, options: unknown) => Promise<unknown> } })
      .axe;
    const results = (await axe.run((globalThis as unknown as { document: unknown }).document, {
      resultTypes: ['violations'],
    })) as {
      violations: Array<{ id: string; impact: string | null; help: string; nodes: Array<{ target: unknown[] }> }>;
    };
    return results.violations.map((v) => ({
      id: v.id,
      impact: v.impact,
      help: v.help,
      targets: v.nodes.map((n) => n.target.join(' ')),
    }));
  });
  return violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
}
