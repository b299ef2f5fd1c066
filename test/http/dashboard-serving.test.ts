/**
 * The dashboard's static serving (DECISIONS §14, ADR 0021): `/` and `/assets/*` from a built folder, without a
 * token, under the strict CSP, behind the unchanged Origin/Host rules, with no way out of the folder; a
 * missing build answers a 503 page naming the build command, logged once; dashboard requests are neither
 * rate limited nor counted as API requests. Runs against a small fixture build.
 */
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, truncateSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/logs/index.js';
import { createGateway, type Gateway } from '../../src/gateway.js';
import { defaultDashboardRoot } from '../../src/dashboard/index.js';
import { dashboardSignInLink } from '../../src/security/admin-token.js';
import { apiHeaders, testConfig } from '../helpers/harness.js';

const CSP =
  "default-src 'self'; script-src 'self'; connect-src 'self'; img-src 'self' data:; style-src 'self'; " +
  "frame-ancestors 'none'; base-uri 'none'; form-action 'none'";
const SECRET = 'TOP-SECRET-OUTSIDE-THE-BUILD';
const INDEX =
  '<!doctype html><html lang="en"><head><title>Gatehouse</title></head><body><div id="app"></div></body></html>';
const SCRIPT = 'export const hello = "dashboard";\n';

/** A fixture build: `<dir>/web/{index.html, assets/…}` with a secret file beside it and a link pointing out. */
function fixtureBuild(): { dir: string; root: string } {
  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-dashboard-'));
  const root = join(dir, 'web');
  mkdirSync(join(root, 'assets', 'fonts'), { recursive: true });
  writeFileSync(join(root, 'index.html'), INDEX);
  writeFileSync(join(root, 'assets', 'index-B2x_9fQa.js'), SCRIPT);
  writeFileSync(join(root, 'assets', 'index-C3y_8eRb.css'), 'body{margin:0}');
  writeFileSync(join(root, 'assets', 'plain.css'), 'p{}');
  writeFileSync(join(root, 'assets', 'logo-Dd4a7b2c.svg'), '<svg xmlns="http://www.w3.org/2000/svg"/>');
  writeFileSync(join(root, 'assets', 'fonts', 'ui-Ee5f6a7b.woff2'), 'wOF2');
  writeFileSync(join(root, 'assets', 'data.bin'), 'raw');
  writeFileSync(join(root, 'assets', '.hidden'), SECRET);
  writeFileSync(join(dir, 'secret.txt'), SECRET);
  symlinkSync(join(dir, 'secret.txt'), join(root, 'assets', 'link-Ff6a7b8c.txt'));
  writeFileSync(join(root, 'assets', 'huge.js'), '');
  truncateSync(join(root, 'assets', 'huge.js'), 17 * 1024 * 1024); // sparse: over the cap, no disk used
  return { dir, root };
}

interface Started {
  gateway: Gateway;
  logs: string[];
  close(): Promise<void>;
}

/** A gateway serving `root`, its log lines collected (level `warning`, so the unbuilt warning shows). */
async function start(root: string, overrides: Record<string, unknown> = {}): Promise<Started> {
  const config = testConfig({ logs: { level: 'warning' }, ...overrides });
  const logs: string[] = [];
  const logger = createLogger({ level: 'warning', stdout: { write: (line) => void logs.push(line) } });
  const gateway = await createGateway({ config, logger, dashboardRoot: root });
  await gateway.app.ready();
  return {
    gateway,
    logs,
    async close() {
      await gateway.shutdown(0);
      rmSync(config.data_dir, { recursive: true, force: true });
    },
  };
}

/** One request over a bare socket, the path sent exactly as given (no client-side normalisation). */
function rawGet(port: number, path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolvePromise, reject) => {
    const socket = connect(port, '127.0.0.1');
    let raw = '';
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => (raw += chunk));
    socket.on('error', reject);
    socket.on('end', () => {
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(raw)?.[1] ?? 0);
      resolvePromise({ status, body: raw.slice(raw.indexOf('\r\n\r\n') + 4) });
    });
    socket.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: close\r\n\r\n`);
  });
}

describe('dashboard serving: a built dashboard', () => {
  let fixture: { dir: string; root: string };
  let s: Started;
  beforeAll(async () => {
    fixture = fixtureBuild();
    s = await start(fixture.root);
  });
  afterAll(async () => {
    await s.close();
    rmSync(fixture.dir, { recursive: true, force: true });
  });
  const get = (url: string, headers: Record<string, string> = {}) =>
    s.gateway.app.inject({ method: 'GET', url, headers });

  describe('happy', () => {
    it('answers GET / with index.html, no token, no-cache, under the strict CSP', async () => {
      const res = await get('/');
      expect(res.statusCode).toBe(200);
      expect(res.body).toBe(INDEX);
      expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
      expect(res.headers['cache-control']).toBe('no-cache');
      expect(res.headers['content-security-policy']).toBe(CSP);
      expect(res.headers['x-content-type-options']).toBe('nosniff');
      expect(res.headers['referrer-policy']).toBe('no-referrer');
      expect(res.headers['content-length']).toBe(String(INDEX.length));
      expect(res.headers['x-request-id']).toBeTruthy();
    });

    it('serves hashed assets as immutable with their content types', async () => {
      const cases: Array<[string, string]> = [
        ['/assets/index-B2x_9fQa.js', 'text/javascript; charset=utf-8'],
        ['/assets/index-C3y_8eRb.css', 'text/css; charset=utf-8'],
        ['/assets/logo-Dd4a7b2c.svg', 'image/svg+xml'],
        ['/assets/fonts/ui-Ee5f6a7b.woff2', 'font/woff2'],
      ];
      for (const [url, type] of cases) {
        const res = await get(url);
        expect(res.statusCode, url).toBe(200);
        expect(res.headers['content-type'], url).toBe(type);
        expect(res.headers['cache-control'], url).toBe('public, max-age=31536000, immutable');
        expect(res.headers['content-security-policy'], url).toBe(CSP);
        expect(res.headers['x-content-type-options'], url).toBe('nosniff');
      }
      expect((await get('/assets/index-B2x_9fQa.js')).body).toBe(SCRIPT);
    });

    it('revalidates an unhashed asset and sends an unknown type as octet-stream', async () => {
      const plain = await get('/assets/plain.css');
      expect(plain.headers['cache-control']).toBe('no-cache');
      const bin = await get('/assets/data.bin');
      expect(bin.statusCode).toBe(200);
      expect(bin.headers['content-type']).toBe('application/octet-stream');
    });

    it('answers HEAD with the headers and no body', async () => {
      const res = await s.gateway.app.inject({ method: 'HEAD', url: '/assets/index-B2x_9fQa.js' });
      expect(res.statusCode).toBe(200);
      expect(res.body).toBe('');
      expect(res.headers['content-length']).toBe(String(SCRIPT.length));
    });

    it('ignores a query string', async () => {
      expect((await get('/?v=1')).body).toBe(INDEX);
      expect((await get('/assets/index-B2x_9fQa.js?x=../../secret.txt')).body).toBe(SCRIPT);
    });

    it('builds the banner link with the token in the fragment only', () => {
      expect(dashboardSignInLink('http://127.0.0.1:8080', 'a-b_c')).toBe('http://127.0.0.1:8080/#token=a-b_c');
      expect(dashboardSignInLink('http://127.0.0.1:8080/', 'a+b')).toBe('http://127.0.0.1:8080/#token=a%2Bb');
    });
  });

  describe('errors', () => {
    it('keeps the JSON 404 for unknown paths, dashboard or not', async () => {
      for (const url of ['/nope', '/index.html', '/assets/missing-AAAAAAAA.js', '/assets/', '/api/v1/nope']) {
        const res = await get(url);
        expect(res.statusCode, url).toBe(404);
        expect(res.headers['content-type'], url).toContain('application/json');
        const body = res.json<{ error: { code: string; request_id: string } }>();
        expect(body.error.code, url).toBe('NOT_FOUND');
        expect(body.error.request_id, url).toBe(res.headers['x-request-id']);
      }
    });

    it('refuses directories, hidden files, links out of the build and files over the cap', async () => {
      for (const url of ['/assets/fonts', '/assets/.hidden', '/assets/link-Ff6a7b8c.txt', '/assets/huge.js']) {
        const res = await get(url);
        expect(res.statusCode, url).toBe(404);
        expect(res.body, url).not.toContain(SECRET);
      }
    });

    it('refuses path traversal, encoded or not, over a real socket', async () => {
      const { gateway } = s;
      const base = await gateway.listen();
      const port = Number(new URL(base).port);
      const attempts = [
        '/assets/../secret.txt',
        '/assets/../../web/index.html',
        '/assets/%2e%2e/secret.txt',
        '/assets/%2E%2E/%2e%2e/secret.txt',
        '/assets/..%2fsecret.txt',
        '/assets/%2e%2e%2fsecret.txt',
        '/assets/%252e%252e/secret.txt',
        '/assets/..%5csecret.txt',
        '/assets/..\\secret.txt',
        '/assets/fonts/../../secret.txt',
        '/assets/index-B2x_9fQa.js%00.png',
        '/assets/%c0%ae%c0%ae/secret.txt',
        `/assets/${resolve(fixture.dir, 'secret.txt')}`,
        '/assets//etc/passwd',
      ];
      for (const path of attempts) {
        const res = await rawGet(port, path);
        expect([400, 404], path).toContain(res.status);
        expect(res.body, path).not.toContain(SECRET);
      }
    });
  });

  describe('security', () => {
    it('applies the Origin rule unchanged: a foreign Origin is refused, the own origin passes', async () => {
      const foreign = await get('/', { origin: 'https://evil.example' });
      expect(foreign.statusCode).toBe(403);
      expect(foreign.json<{ error: { code: string } }>().error.code).toBe('FORBIDDEN');
      const asset = await get('/assets/index-B2x_9fQa.js', { origin: 'https://evil.example' });
      expect(asset.statusCode).toBe(403);
      const own = await get('/assets/index-B2x_9fQa.js', { host: '127.0.0.1:8080', origin: 'http://127.0.0.1:8080' });
      expect(own.statusCode).toBe(200);
    });

    it('is not rate limited and not counted as API traffic', async () => {
      for (let i = 0; i < 3; i++) {
        const res = await get('/', apiHeaders);
        expect(res.headers['x-ratelimit-limit']).toBeUndefined();
      }
      await get('/assets/index-B2x_9fQa.js');
      await get('/assets/missing-AAAAAAAA.js');
      await get('/api/v1/health');
      const metrics = (await get('/metrics', apiHeaders)).body;
      expect(metrics).toMatch(/gatehouse_dashboard_requests_total\{status="200"\} [1-9]/);
      expect(metrics).toMatch(/gatehouse_dashboard_requests_total\{status="404"\} [1-9]/);
      expect(metrics).not.toMatch(/gatehouse_http_requests_total\{[^}]*route="\/"/);
      expect(metrics).not.toMatch(/gatehouse_http_requests_total\{[^}]*route="\/assets\/\*"/);
      // API requests are still counted as before.
      expect(metrics).toMatch(/gatehouse_http_requests_total\{method="GET",route="\/api\/v1\/health"/);
    });
  });
});

describe('dashboard serving: the Host rule under extended', () => {
  let fixture: { dir: string; root: string };
  let s: Started;
  beforeAll(async () => {
    fixture = fixtureBuild();
    s = await start(fixture.root, { security: { profile: 'extended' } });
  });
  afterAll(async () => {
    await s.close();
    rmSync(fixture.dir, { recursive: true, force: true });
  });

  it('refuses a foreign Host and serves a loopback one', async () => {
    const bad = await s.gateway.app.inject({ method: 'GET', url: '/', headers: { host: 'evil.example' } });
    expect(bad.statusCode).toBe(403);
    const good = await s.gateway.app.inject({ method: 'GET', url: '/', headers: { host: '127.0.0.1:8080' } });
    expect(good.statusCode).toBe(200);
  });
});

describe('dashboard serving: no build', () => {
  let dir: string;
  let s: Started | null = null;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'gatehouse-dashboard-empty-'));
  });
  afterEach(async () => {
    await s?.close();
    s = null;
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('answers a 503 page naming the build command, logged once', async () => {
    s = await start(join(dir, 'web'));
    for (let i = 0; i < 3; i++) {
      const res = await s.gateway.app.inject({ method: 'GET', url: '/' });
      expect(res.statusCode).toBe(503);
      expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
      expect(res.headers['content-security-policy']).toBe(CSP);
      expect(res.body).toContain('npm run prepare');
    }
    const warnings = s.logs.filter((line) => line.includes('the dashboard is not built'));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain('npm run prepare');
    // The API is unaffected.
    expect((await s.gateway.app.inject({ method: 'GET', url: '/api/v1/health' })).statusCode).toBeLessThan(500);
    expect((await s.gateway.app.inject({ method: 'GET', url: '/assets/index.js' })).statusCode).toBe(404);
  });

  it('finds the default build under dist/web of the package', () => {
    expect(defaultDashboardRoot()).toBe(resolve(import.meta.dirname, '..', '..', 'dist', 'web'));
  });
});
