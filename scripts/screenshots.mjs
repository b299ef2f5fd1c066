// `npm run screenshots`: a picture of every dashboard page, for docs/screenshots/<page>.png.
//
// Builds what is stale (scripts/build-if-needed.mjs), starts the built gateway on a temp data dir with the bench's
// fake OpenAI-compatible model, seeds a little data through the API (sessions with replies, memory, knowledge,
// a task, a cron job, a skill, a pairing code), then opens every route of web/src/routes.ts in headless Chromium
// at 1280×800 in light and dark (`<page>.png`, `<page>-dark.png`), and the most used pages at 390×844 too
// (`<page>-phone.png`, `<page>-phone-dark.png`). Whatever pages exist are taken: the route table is read, not
// listed here. Options: `--out DIR` (default docs/screenshots), `--route NAME` (repeatable).
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const ADMIN = 'screenshots-admin-token';
const API = 'screenshots-api-token';
const CHROMIUM = process.env.GATEHOUSE_CHROMIUM ?? '/usr/bin/chromium';

function option(name) {
  const values = [];
  const args = process.argv.slice(2);
  for (let i = 0; i < args.length; i++) if (args[i] === name && args[i + 1]) values.push(args[++i]);
  return values;
}
const outDir = resolve(root, option('--out')[0] ?? join('docs', 'screenshots'));
const only = option('--route');

/** The route names of the dashboard, in navigation order, read from the route table. */
function routeNames() {
  const table = readFileSync(join(root, 'web', 'src', 'routes.ts'), 'utf8');
  return [...table.matchAll(/\{\s*name:\s*'([a-z0-9-]+)'/g)].map((m) => m[1]);
}

/** The pages also taken at phone width. */
const PHONE_PAGES = ['overview', 'chat', 'sessions', 'approvals'];

const log = (line) => process.stderr.write(`screenshots: ${line}\n`);

execFileSync(process.execPath, [join(root, 'scripts', 'build-if-needed.mjs')], { stdio: 'inherit', cwd: root });
if (!existsSync(join(root, 'dist', 'web', 'index.html')))
  throw new Error('dist/web/index.html missing after the build');
if (!existsSync(CHROMIUM)) throw new Error(`Chromium not found at ${CHROMIUM}: apt-get install -y chromium`);

const { spawnNode, spawnGateway, announcedUrl, stopChild, ROOT } = await import(
  join(root, 'dist', 'bench', 'processes.js')
);
const { chromium } = await import('playwright-core');

const home = mkdtempSync(join(tmpdir(), 'gatehouse-screenshots-'));
const children = [];
let browser;
try {
  const model = spawnNode({
    name: 'fake model',
    args: [join(ROOT, 'dist', 'bench', 'fake-openai.js')],
    cwd: ROOT,
    env: { PATH: process.env.PATH },
    findUrl: announcedUrl,
    startTimeoutMs: 10_000,
    stdin: 'pipe',
  });
  children.push(model);
  const modelUrl = await model.ready;

  const configFile = join(home, 'gatehouse.yaml');
  writeFileSync(
    configFile,
    JSON.stringify({
      data_dir: join(home, 'data'),
      gateway: { port: 0, auth: { api_tokens: [API], admin_tokens: [ADMIN], mode: 'pairing' } },
      provider: { type: 'openai', base_url: `${modelUrl}/v1`, model: 'gpt-4o-mini', timeout_seconds: 10 },
      channels: { webhook: { enabled: true, host: '127.0.0.1', port: 0, secret: 'screenshots-webhook-secret' } },
      logs: { level: 'info' },
    }),
  );
  let gateway = spawnGateway(['--config', configFile], { startTimeoutMs: 15_000 });
  children.push(gateway);
  let url;
  try {
    url = await gateway.ready;
  } catch {
    // An older config schema may not know a key above: start without the webhook.
    log('retrying without the webhook channel');
    await stopChild(gateway, 5_000, 'SIGTERM');
    const config = JSON.parse(readFileSync(configFile, 'utf8'));
    delete config.channels;
    writeFileSync(configFile, JSON.stringify(config));
    gateway = spawnGateway(['--config', configFile], { startTimeoutMs: 15_000 });
    children.push(gateway);
    url = await gateway.ready;
  }
  log(`gateway at ${url}`);

  /** One API call as admin; a failed seed is reported and skipped (the pictures still come). */
  const call = async (method, path, body) => {
    try {
      const res = await fetch(`${url}/api/v1${path}`, {
        method,
        headers: { 'x-api-token': ADMIN, ...(body ? { 'content-type': 'application/json' } : {}) },
        ...(body ? { body: JSON.stringify(body) } : {}),
        signal: AbortSignal.timeout(20_000),
      });
      const text = await res.text();
      if (!res.ok) log(`seed ${method} ${path} → ${res.status} ${text.slice(0, 200)}`);
      return text ? JSON.parse(text) : null;
    } catch (err) {
      log(`seed ${method} ${path} failed: ${err.message}`);
      return null;
    }
  };

  const session = await call('POST', '/sessions', { channel: 'api', metadata: { purpose: 'screenshots' } });
  if (session?.id) {
    await call('POST', `/sessions/${encodeURIComponent(session.id)}/messages`, {
      role: 'user',
      content: 'What is on my plate today?',
    });
  }
  for (const [user, text] of [
    ['alice', 'Summarise the release notes'],
    ['bob', 'Remind me to renew the certificate'],
  ]) {
    await call('POST', '/message', { platform: 'api', user_id: user, chat_id: `${user}-chat`, text, wait: true });
  }
  await call('POST', '/memory', { content: 'Alice prefers short answers in the morning.', tags: ['preferences'] });
  await call('POST', '/memory', { content: 'The staging certificate expires on 1 December.', tags: ['ops'] });
  await call('POST', '/knowledge', {
    title: 'Release checklist',
    content: 'Before a release: run the tests, tag the commit, update the changelog, announce it in #releases.',
    source: 'handbook',
    metadata: { team: 'platform' },
  });
  await call('POST', '/tasks', { title: 'Renew the staging certificate', priority: 8, assignee: 'alice' });
  await call('POST', '/tasks', { title: 'Write the quarterly summary', priority: 4, assignee: 'bob' });
  await call('POST', '/cron', { schedule: '0 8 * * 1-5', prompt: 'Post the daily stand-up reminder' });
  await call('POST', '/skills', {
    name: 'release-notes',
    description: 'Writes release notes from a list of merged changes',
    instructions: 'Group the changes by area, one line each, newest first.',
  });

  mkdirSync(outDir, { recursive: true });
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-background-networking', '--disable-component-update', '--disable-gpu'],
  });

  const shoot = async (viewport, name, file, colorScheme = 'light') => {
    const context = await browser.newContext({ viewport, colorScheme });
    const page = await context.newPage();
    await page.goto(`${url}/#token=${ADMIN}`);
    await page.waitForFunction("!location.hash.includes('token=')", null, { timeout: 10_000 });
    await page.goto(`${url}/#/${name}`);
    await page.waitForLoadState('networkidle').catch(() => undefined); // a live tail never goes idle
    // The hash change keeps the document: wait for this page's own heading, not the overview's.
    await page
      .waitForFunction(
        // eslint-disable-next-line no-undef -- this function runs in the page, where `document` exists
        (route) => document.querySelector('nav [aria-current="page"]')?.getAttribute('href') === `#/${route}`,
        name,
        { timeout: 10_000 },
      )
      .catch(() => undefined);
    await page.locator('main h1').first().waitFor({ timeout: 10_000 });
    await page.waitForTimeout(700); // live data and the first tick of countdowns
    await page.screenshot({ path: join(outDir, file), fullPage: false });
    await context.close();
    log(`wrote ${join(outDir, file)}`);
  };

  const names = routeNames().filter((n) => only.length === 0 || only.includes(n));
  if (names.length === 0) throw new Error('no routes found in web/src/routes.ts');
  const DESKTOP = { width: 1280, height: 800 };
  const PHONE = { width: 390, height: 844 };
  if (names.includes('pairing')) {
    // A pairing page with a live countdown: issue a code from the page itself.
    for (const colorScheme of ['light', 'dark']) {
      const context = await browser.newContext({ viewport: DESKTOP, colorScheme });
      const page = await context.newPage();
      await page.goto(`${url}/#token=${ADMIN}`);
      await page.waitForFunction("!location.hash.includes('token=')");
      await page.goto(`${url}/#/pairing`);
      const generate = page.getByRole('button', { name: /generate/i });
      if (await generate.count()) {
        await generate.click();
        await page.waitForTimeout(1200);
      }
      const file = colorScheme === 'dark' ? 'pairing-dark.png' : 'pairing.png';
      await page.screenshot({ path: join(outDir, file) });
      await context.close();
      log(`wrote ${join(outDir, file)}`);
    }
  }
  // Every page on a desktop, light and dark (the OS setting, which the dashboard follows until a theme is
  // picked); the pages used most also on a phone, light and dark.
  for (const name of names) {
    if (name === 'pairing') continue;
    await shoot(DESKTOP, name, `${name}.png`);
    await shoot(DESKTOP, name, `${name}-dark.png`, 'dark');
  }
  for (const name of names.filter((n) => PHONE_PAGES.includes(n))) {
    await shoot(PHONE, name, `${name}-phone.png`);
    await shoot(PHONE, name, `${name}-phone-dark.png`, 'dark');
  }
} finally {
  await browser?.close().catch(() => undefined);
  for (const child of children.reverse()) await stopChild(child, 10_000, 'SIGTERM').catch(() => undefined);
  rmSync(home, { recursive: true, force: true, maxRetries: 3 });
}
