import { describe, expect, it } from 'vitest';
import { adminHeaders, useHarness } from '../../test/helpers/harness.js';
import { DOCS_CSP } from './docs.routes.js';

const REQUIRED_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "connect-src 'self'",
  "img-src 'self' data:",
  "style-src 'self'",
  "frame-ancestors 'none'",
];

describe('docs page: static, tokenless, strict CSP', () => {
  const t = useHarness({ scope: 'all' });
  const get = (url: string, headers: Record<string, string> = {}) =>
    t.gateway.app.inject({ method: 'GET', url, headers });

  it('serves the page without a token, with the CSP and no inline script or style', async () => {
    const res = await get('/api/v1/docs');
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(res.headers['content-security-policy']).toBe(DOCS_CSP);
    for (const directive of REQUIRED_CSP) expect(DOCS_CSP.split('; ')).toContain(directive);
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    expect(res.headers['referrer-policy']).toBe('no-referrer');
    expect(res.headers['x-ratelimit-limit']).toBeUndefined();

    const html = res.body;
    expect(html).toContain('<script type="module" src="/api/v1/docs/docs.js"></script>');
    expect(html).toContain('<link rel="stylesheet" href="/api/v1/docs/docs.css" />');
    expect(html).toContain('data-api-base="/api/v1"');
    expect(html).toContain('data-token-header="X-API-Token"');
    expect(html).not.toContain('%API_BASE%');
    // Every <script> has a src and is empty; no <style> element, no style or on* attribute.
    expect(
      [...html.matchAll(/<script\b[^>]*>([\s\S]*?)<\/script>/g)].map((m) => [m[0].includes(' src='), m[1]]),
    ).toEqual([[true, '']]);
    expect(html).not.toMatch(/<style\b|\sstyle=|\son[a-z]+=/i);
  });

  it('serves the script and the style sheet without a token', async () => {
    const js = await get('/api/v1/docs/docs.js');
    expect(js.statusCode).toBe(200);
    expect(js.headers['content-type']).toBe('text/javascript; charset=utf-8');
    expect(js.headers['x-content-type-options']).toBe('nosniff');
    expect(js.body).toContain("const TOKEN_KEY = 'gatehouse.token'");
    const css = await get('/api/v1/docs/docs.css');
    expect(css.statusCode).toBe(200);
    expect(css.headers['content-type']).toBe('text/css; charset=utf-8');
    expect(css.body).toContain('[hidden]');
  });

  it('under the /api alias, points the page at the alias', async () => {
    const res = await get('/api/docs');
    expect(res.statusCode).toBe(200);
    expect(res.body).toContain('src="/api/docs/docs.js"');
    expect(res.body).toContain('data-api-base="/api"');
    expect((await get('/api/docs/docs.css')).statusCode).toBe(200);
  });

  it('keeps the document behind a token', async () => {
    expect((await get('/api/v1/openapi.json')).statusCode).toBe(401);
    expect((await get('/api/v1/openapi.json', adminHeaders)).statusCode).toBe(200);
  });

  it('lists the page and its files in the document as tokenless', async () => {
    const doc = (await get('/api/v1/openapi.json', adminHeaders)).json<{
      paths: Record<string, { get: { 'x-permission': string } }>;
    }>();
    for (const path of ['/api/v1/docs', '/api/v1/docs/docs.js', '/api/v1/docs/docs.css']) {
      expect(doc.paths[path]?.get['x-permission'], path).toBe('none');
    }
  });

  it('refuses a cross-site Origin like every route', async () => {
    for (const url of ['/api/v1/docs', '/api/v1/docs/docs.js', '/api/v1/docs/docs.css']) {
      const res = await get(url, { origin: 'https://evil.example' });
      expect(res.statusCode, url).toBe(403);
      expect(res.json().error.message).toBe('cross-site request forbidden');
    }
    expect((await get('/api/v1/docs', { origin: 'http://127.0.0.1:58123', host: '127.0.0.1:58123' })).statusCode).toBe(
      200,
    );
  });
});

describe('docs page: configuration', () => {
  const t = useHarness({ autoOpen: false });

  it('extended profile: a foreign Host is refused', async () => {
    await t.open({ config: { security: { profile: 'extended' } } });
    const foreign = await t.gateway.app.inject({
      method: 'GET',
      url: '/api/v1/docs',
      headers: { host: 'evil.example' },
    });
    expect(foreign.statusCode).toBe(403);
    const local = await t.gateway.app.inject({ method: 'GET', url: '/api/v1/docs', headers: { host: '127.0.0.1' } });
    expect(local.statusCode).toBe(200);
  });

  it('the page sends the configured token header', async () => {
    await t.open({ config: { gateway: { auth: { token_header: 'X-Gatehouse-Key' } } } });
    const res = await t.gateway.app.inject({ method: 'GET', url: '/api/v1/docs' });
    expect(res.body).toContain('data-token-header="X-Gatehouse-Key"');
  });
});
