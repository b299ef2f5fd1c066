/**
 * The dashboard's shell in Chromium (ADR 0020), at 1280×800 and on a 390×844 phone: the command palette
 * (Ctrl+K / ⌘+K), the list of shortcuts (`?`), the light/dark toggle remembered across reloads, the navigation
 * folded behind a menu button on a phone, the live count of paused turns on Approvals, where the token is when
 * sign-in is refused, the start-up output naming the dashboard, and the offline banner while the gateway is
 * stopped (last: it stops and restarts the gateway on the same port).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import type { Page } from 'playwright-core';
import { afterAll, describe, expect, it } from 'vitest';
import { humanBanner, jsonBanner, type BannerFacts } from '../../src/cli/banner.js';
import { startGateway, stopGateway, type Running } from '../e2e/helpers.js';
import {
  ADMIN_TOKEN,
  expectAccessible,
  openPage,
  screenshot,
  useDashboard,
  type Dashboard,
} from '../helpers/dashboard.js';

const DESKTOP = { width: 1280, height: 800 };
const PHONE = { width: 390, height: 844 };

/** The `data-theme` on `<html>`. */
const themeOf = (page: Page) => page.evaluate<string | null>('document.documentElement.dataset.theme ?? null');
/** The page's background colour as computed. */
const background = (page: Page) => page.evaluate<string>('getComputedStyle(document.body).backgroundColor');
const DARK_BG = 'rgb(13, 17, 23)';
const LIGHT_BG = 'rgb(246, 247, 249)';

describe('dashboard shell', () => {
  let dash: Dashboard;
  let restarted: Running | undefined;

  useDashboard(
    { config: { agent: { approval_required: ['memory_save'] } }, viewport: DESKTOP },
    (started) => void (dash = started),
    ADMIN_TOKEN,
  );
  afterAll(async () => {
    if (restarted) await stopGateway(restarted, 'SIGTERM').catch(() => undefined);
  });

  it('Ctrl+K opens a labelled palette of pages, sessions and actions; arrows and Enter run, Esc closes', async () => {
    const { page } = dash;
    const created = await dash.call<{ id: string }>('POST', '/api/v1/sessions', { body: { channel: 'palette' } });
    expect(created.status).toBe(201);
    const key = created.body.id;
    await openPage(page, 'overview');
    const palette = page.getByRole('dialog', { name: 'Command palette' });
    const field = palette.getByRole('combobox', { name: 'Search pages, sessions and actions' });

    // A page, by its title.
    await page.locator('main h1').first().click();
    await page.keyboard.press('Control+k');
    await palette.waitFor();
    await expect.poll(() => page.evaluate<string | undefined>('document.activeElement?.id')).toBe('palette-input');
    await expectAccessible(page);
    await screenshot(page, 'shell-palette');
    await field.fill('logs');
    await expect.poll(() => palette.getByRole('option', { selected: true }).textContent()).toContain('Logs');
    await page.keyboard.press('Enter');
    await expect.poll(() => page.evaluate<string>('location.hash')).toBe('#/logs');
    expect(await palette.count()).toBe(0);

    // Focus stays inside: Tab and Shift+Tab wrap within the dialog; Esc closes and gives focus back.
    await page.locator('main h1').first().click();
    await page.keyboard.press('Meta+k');
    await palette.waitFor();
    for (const key of ['Tab', 'Tab', 'Shift+Tab', 'Tab']) {
      await page.keyboard.press(key);
      expect(await page.evaluate<boolean>("document.activeElement?.closest('dialog')?.open ?? false")).toBe(true);
    }
    await page.keyboard.press('Escape');
    await expect.poll(() => palette.count()).toBe(0);

    // Arrow keys move the active option (named by aria-activedescendant).
    await page.keyboard.press('Control+k');
    await field.fill('');
    // The list is rendered after the keystroke: every read after one polls.
    const active = (): Promise<string | null> => field.getAttribute('aria-activedescendant');
    await expect.poll(() => palette.getByRole('option').first().getAttribute('id')).toBe(await active());
    const first = await active();
    await page.keyboard.press('ArrowDown');
    await expect.poll(active).not.toBe(first);
    const second = await active();
    await expect.poll(() => palette.getByRole('option', { selected: true }).getAttribute('id')).toBe(second);
    await page.keyboard.press('ArrowUp');
    await expect.poll(active).toBe(first);
    // Up from the first wraps to the last.
    await page.keyboard.press('ArrowUp');
    const last = await palette.getByRole('option').last().getAttribute('id');
    await expect.poll(active).toBe(last);

    // An action.
    await field.fill('approvals');
    await palette.getByRole('option', { name: /Go to approvals/ }).click();
    await expect.poll(() => page.evaluate<string>('location.hash')).toBe('#/approvals');

    // A session, by its key (its title when the API gives one), opens on the sessions page.
    await page.keyboard.press('Control+k');
    await field.fill(key.slice(-12));
    const option = palette.getByRole('option').filter({ hasText: 'Sessions' });
    await expect.poll(() => option.count()).toBe(1);
    await page.keyboard.press('Enter');
    await expect.poll(() => page.evaluate<string>('location.hash')).toBe(`#/sessions?key=${encodeURIComponent(key)}`);

    // New chat.
    await page.keyboard.press('Control+k');
    await field.fill('new chat');
    await page.keyboard.press('Enter');
    await expect.poll(() => page.evaluate<string>('location.hash')).toMatch(/^#\/chat/);
  });

  it('a palette opened at once after Esc stays open (the closed one’s late close event is its own)', async () => {
    const { page } = dash;
    await openPage(page, 'overview');
    const palette = page.getByRole('dialog', { name: 'Command palette' });
    await page.keyboard.press('Control+k');
    await palette.waitFor();
    // In one task: Esc's cancel closes the palette; once the shell has rendered (microtasks), Ctrl+K asks for
    // a new one before the browser delivers the old element's queued `close` event.
    await page.evaluate(`(async () => {
      const dialog = document.querySelector('dialog.palette');
      dialog.dispatchEvent(new Event('cancel', { cancelable: true }));
      for (let i = 0; i < 5; i++) await Promise.resolve();
      document.dispatchEvent(new KeyboardEvent('keydown', { key: 'k', ctrlKey: true, bubbles: true, cancelable: true }));
    })()`);
    // Two frames later every queued event has been delivered: the new palette is still open.
    await page.evaluate('new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))');
    await palette.waitFor();
    expect(await page.evaluate<boolean>("document.querySelector('dialog.palette')?.open ?? false")).toBe(true);
    await page.keyboard.press('Escape');
    await expect.poll(() => palette.count()).toBe(0);
  });

  it('? lists the shortcuts outside text fields; g then a letter goes to a page', async () => {
    const { page } = dash;
    await openPage(page, 'overview');
    await page.locator('main h1').first().click();
    await page.keyboard.press('?');
    const help = page.getByRole('dialog', { name: 'Keyboard shortcuts' });
    await help.waitFor();
    const text = (await help.textContent()) ?? '';
    for (const key of ['Ctrl+K or ⌘+K', '?', 'g then a', 'Esc']) expect(text).toContain(key);
    await expectAccessible(page);
    await page.keyboard.press('Escape');
    await expect.poll(() => help.count()).toBe(0);

    // Typing `?` into a text field is typing.
    await page.keyboard.press('Control+k');
    await page.getByRole('combobox', { name: 'Search pages, sessions and actions' }).waitFor();
    await page.keyboard.press('?');
    expect(await page.getByRole('combobox', { name: 'Search pages, sessions and actions' }).inputValue()).toBe('?');
    expect(await help.count()).toBe(0);
    await page.keyboard.press('Escape');

    await page.locator('main h1').first().click();
    await page.keyboard.press('g');
    await page.keyboard.press('a');
    await expect.poll(() => page.evaluate<string>('location.hash')).toBe('#/approvals');
  });

  it('the theme follows the system until toggled, then stays across reloads; axe passes in both', async () => {
    const { page } = dash;
    await page.evaluate("localStorage.removeItem('gatehouse.theme')");
    await page.emulateMedia({ colorScheme: 'dark' });
    await page.reload();
    await page.getByRole('navigation', { name: 'Pages' }).waitFor();
    expect(await themeOf(page)).toBe('dark');
    expect(await background(page)).toBe(DARK_BG);

    await page.emulateMedia({ colorScheme: 'light' });
    await expect.poll(() => themeOf(page)).toBe('light');
    await openPage(page, 'overview');
    await expectAccessible(page);

    await page.getByRole('button', { name: 'Switch to dark theme' }).click();
    expect(await themeOf(page)).toBe('dark');
    expect(await background(page)).toBe(DARK_BG);
    expect(await page.evaluate<string | null>("localStorage.getItem('gatehouse.theme')")).toBe('dark');
    // The choice wins over the system's setting, also after a reload.
    await page.reload();
    await page.getByRole('navigation', { name: 'Pages' }).waitFor();
    expect(await themeOf(page)).toBe('dark');
    expect(await background(page)).toBe(DARK_BG);
    await page.locator('main h1').first().waitFor();
    await expectAccessible(page);
    await screenshot(page, 'shell-dark');

    await page.getByRole('button', { name: 'Switch to light theme' }).click();
    expect(await themeOf(page)).toBe('light');
    expect(await background(page)).toBe(LIGHT_BG);
    await page.emulateMedia({ colorScheme: 'dark' });
    await page.reload();
    await page.getByRole('navigation', { name: 'Pages' }).waitFor();
    expect(await themeOf(page)).toBe('light');
    await page.emulateMedia({ colorScheme: 'light' });
  });

  it('the Approvals entry counts the paused turns live', async () => {
    const { page, fake } = dash;
    await openPage(page, 'overview');
    const approvals = page.getByRole('navigation', { name: 'Pages' }).getByRole('link', { name: /^Approvals/ });
    expect(await approvals.textContent()).toBe('Approvals');
    fake.enqueue(
      { tool_calls: [{ name: 'memory_save', arguments: { content: 'The badge counts this.' } }] },
      { content: 'Saved.' },
    );
    const sent = await dash.call<{ event_id: string }>('POST', '/api/v1/message', {
      body: { platform: 'api', user_id: 'badge', chat_id: 'badge', text: 'Remember the badge', wait: false },
    });
    expect(sent.status).toBe(202);
    await expect.poll(() => approvals.textContent(), { timeout: 10_000 }).toBe('Approvals1 pending');
    expect(await page.getByTestId('pending-badge').textContent()).toBe('1 pending');
    await expectAccessible(page);

    const approved = await dash.call('POST', `/api/v1/turns/${encodeURIComponent(sent.body.event_id)}/approve`);
    expect(approved.status).toBeLessThan(300);
    await expect.poll(() => approvals.textContent(), { timeout: 10_000 }).toBe('Approvals');
  });

  it('a refused token says where the token is', async () => {
    const tab = await dash.browser.context.newPage();
    try {
      await tab.goto(`${dash.url}/#token=not-a-token`);
      const alert = tab.getByRole('alert');
      await alert.waitFor();
      expect(await alert.textContent()).toContain('Token refused');
      const help = (await tab.locator('.signin-help').textContent()) ?? '';
      expect(help).toContain('<data_dir>/gateway_auth/admin_token');
      expect(help).toContain('gatehouse token show');
      expect(help).toMatch(/start.*log.*link/);
      await expectAccessible(tab);
    } finally {
      await tab.close();
    }
  });

  it('every start prints the dashboard address and how to sign in; only the first prints the token', async () => {
    // This gateway's tokens are configured: the banner says where they are, and no token.
    const line = await dash.gateway.gw.line('stderr', /Open the dashboard/);
    expect(line).toContain(`Open the dashboard: ${dash.url}/ and sign in with a token set under gateway.auth`);
    expect(dash.gateway.gw.stderr.join('\n')).not.toContain(ADMIN_TOKEN);

    // A later start with a generated token file: its path and the command, not the token.
    const file = '/srv/gh/gateway_auth/admin_token';
    const facts: BannerFacts = {
      url: 'http://127.0.0.1:4000',
      apiPrefix: '/api/v1',
      version: '1.0.0',
      provider: { type: 'echo', model: 'echo', modelConfigured: false, source: 'default', variable: null },
      configPath: null,
      dataDir: '/srv/gh',
      webhookUrl: null,
      generatedToken: null,
      adminTokenFile: file,
    };
    const hint = 'sign in with the token in /srv/gh/gateway_auth/admin_token (gatehouse token show)';
    expect(humanBanner(facts, false)).toContain(`dashboard   http://127.0.0.1:4000/ (${hint})`);
    const later = jsonBanner(facts, new Date(0))
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { message: string; dashboard?: string });
    expect(later.map((l) => l.message)).toContain(`Open the dashboard: http://127.0.0.1:4000/ and ${hint}`);

    // The first start: the signed-in link, once.
    const first = { ...facts, adminTokenFile: null, generatedToken: { token: 'tok-123', path: file } };
    const firstLines = jsonBanner(first, new Date(0)).trim().split('\n');
    expect(firstLines.filter((l) => l.includes('Open the dashboard'))).toHaveLength(1);
    expect(firstLines.join('\n')).toContain('http://127.0.0.1:4000/#token=tok-123');
    expect(humanBanner(first, false)).not.toContain('sign in with');
  });

  describe('on a 390-px phone', () => {
    it('the navigation folds behind a menu button', async () => {
      const { page } = dash;
      await page.setViewportSize(PHONE);
      try {
        await openPage(page, 'overview');
        const nav = page.getByRole('navigation', { name: 'Pages' });
        const menu = nav.getByRole('button', { name: /^Menu/ });
        expect(await menu.getAttribute('aria-expanded')).toBe('false');
        expect(await menu.getAttribute('aria-controls')).toBe('nav-pages');
        expect(await page.locator('#nav-pages').isVisible()).toBe(false);
        // One short row instead of three rows of links.
        expect((await nav.boundingBox())?.height ?? 0).toBeLessThan(70);
        await expectAccessible(page);
        await screenshot(page, 'shell-phone');

        await menu.click();
        expect(await nav.getByRole('button', { name: /^Close menu/ }).getAttribute('aria-expanded')).toBe('true');
        const logs = nav.getByRole('link', { name: 'Logs' });
        expect(await logs.isVisible()).toBe(true);
        await expectAccessible(page);
        await screenshot(page, 'shell-phone-menu');
        await logs.click();
        await expect.poll(() => page.evaluate<string>('location.hash')).toBe('#/logs');
        // Choosing a page folds the menu again.
        await expect.poll(() => menu.getAttribute('aria-expanded')).toBe('false');

        // The palette fits the phone, in the dark theme too.
        await page.getByRole('button', { name: 'Switch to dark theme' }).click();
        await page.getByRole('button', { name: 'Search all' }).click();
        const palette = page.getByRole('dialog', { name: 'Command palette' });
        await palette.waitFor();
        const box = await palette.boundingBox();
        expect((box?.x ?? -1) >= 0 && (box?.x ?? 0) + (box?.width ?? 0) <= PHONE.width).toBe(true);
        await expectAccessible(page);
        await page.keyboard.press('Escape');
        await page.getByRole('button', { name: 'Switch to light theme' }).click();
      } finally {
        await page.setViewportSize(DESKTOP);
      }
      // Wide enough: no menu button, every link in view.
      await expect.poll(() => page.locator('.menu-button').isVisible()).toBe(false);
      expect(await page.locator('#nav-pages').isVisible()).toBe(true);
    });
  });

  it('one offline banner while the gateway is stopped, gone by itself when it is back', async () => {
    const { page } = dash;
    await openPage(page, 'overview');
    await expect.poll(() => page.locator('.live-dot').textContent()).toBe('Live');
    const banner = page.getByTestId('offline-banner');
    expect(await banner.count()).toBe(0);

    await stopGateway(dash.gateway, 'SIGTERM');
    await banner.waitFor({ timeout: 10_000 });
    expect(await banner.getByRole('alert').textContent()).toBe(
      `Can't reach the gateway at ${dash.url} — reconnecting…`,
    );
    await expect.poll(() => banner.textContent()).toMatch(/Next attempt in \d+ s|Trying now/);
    // Requests that get no answer add no notices of their own: the palette's session list, Retry.
    await page.keyboard.press('Control+k');
    await page.getByRole('dialog', { name: 'Command palette' }).waitFor();
    await page.keyboard.press('Escape');
    await banner.getByRole('button', { name: 'Retry' }).click();
    await banner.getByRole('button', { name: 'Retry' }).click();
    await expect.poll(() => banner.textContent()).toMatch(/Next attempt in \d+ s|Trying now/);
    expect(await page.getByTestId('offline-banner').count()).toBe(1);
    expect(await page.locator('.notices').textContent()).not.toMatch(/fetch/i);
    await expectAccessible(page);
    await screenshot(page, 'shell-offline');

    // The same gateway again on the same port: the live socket's next attempt finds it.
    const home = dash.home;
    const config = JSON.parse(readFileSync(home.configFile, 'utf8')) as { gateway: { port: number } };
    config.gateway.port = Number(new URL(dash.url).port);
    writeFileSync(home.configFile, JSON.stringify(config, null, 2));
    restarted = await startGateway(home);
    expect(restarted.url).toBe(dash.url);
    await expect.poll(() => banner.count(), { timeout: 25_000 }).toBe(0);
    await expect.poll(() => page.locator('.live-dot').textContent()).toBe('Live');
    expect(await page.locator('.notices').textContent()).not.toMatch(/fetch/i);
  }, 60_000);
});
