import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { concreteRoutes } from '../../src/http/server.js';
import { defineRoute, type RouteDef } from '../../src/http/route.js';
import { ManualClock } from '../../src/lib/clock.js';
import { fingerprintToken } from '../../src/security/tokens.js';
import { ADMIN_TOKEN, API_TOKEN, adminHeaders, apiHeaders, useHarness, type Harness } from '../helpers/harness.js';

/** Probe routes of both permissions, so every guard path is exercised even before resources exist. */
const probes: RouteDef[] = [
  defineRoute({
    method: 'GET',
    path: '/probe/read',
    permission: 'api',
    summary: 'probe',
    handler: (ctx) => ({ role: ctx.principal.role, loopback: ctx.loopbackTrusted }),
  }),
  defineRoute({
    method: 'POST',
    path: '/probe/admin',
    permission: 'admin',
    summary: 'probe',
    handler: (ctx) => ({ role: ctx.principal.role }),
  }),
  defineRoute({
    method: 'GET',
    path: '/probe/admin-read',
    permission: 'admin',
    summary: 'probe',
    handler: () => ({ ok: true }),
  }),
  defineRoute({
    method: 'GET',
    path: '/probe/analytics',
    permission: 'api',
    rateGroup: 'analytics',
    summary: 'probe',
    handler: () => ({ ok: true }),
  }),
];

/** Gateways with the probes and the configured rate limits, opened by each test and closed after it. */
const probed = useHarness({ extraRoutes: probes, roomyLimits: false, autoOpen: false });
const gatewayWith = (config: Record<string, unknown> = {}, clock?: ManualClock): Promise<Harness> =>
  probed.open({ config, ...(clock ? { clock } : {}) });

/** Fills path parameters with a harmless value so the route matches. */
const concreteUrl = (url: string) => url.replace(/:[a-z_]+/g, 'x1');

describe('security matrix: every registered route', () => {
  // Limits high enough that the matrix itself is never rate limited (the lifecycle group allows 5).
  const high = 1_000_000;
  const t = useHarness({
    extraRoutes: probes,
    roomyLimits: false,
    config: { security: { rate_limits: { read: high, write: high, analytics: high, lifecycle: high } } },
    scope: 'all',
  });

  it('walks the product routes and the probes', () => {
    const product = concreteRoutes(
      t.internals.routes.filter((r) => !probes.includes(r)),
      t.config.gateway.api_prefix,
    );
    expect(product.length).toBeGreaterThan(0);
  });

  it('guards each route by its declared permission', async () => {
    const all = concreteRoutes(t.internals.routes, t.config.gateway.api_prefix);
    for (const { method, url, route } of all) {
      const target = concreteUrl(url);
      const send = (headers: Record<string, string>, query = '') =>
        t.gateway.app.inject({
          method,
          url: target + query,
          headers,
          ...(method === 'GET' || method === 'DELETE' ? {} : { payload: {} }),
        });
      const label = `${method} ${url}`;

      if (route.permission === 'none') {
        const res = await send({});
        expect(res.statusCode, label).not.toBe(401);
        expect(res.statusCode, label).not.toBe(403);
        continue;
      }
      // No token → 401.
      expect((await send({})).statusCode, `${label} without token`).toBe(401);
      // A wrong token → 401.
      expect((await send({ 'x-api-token': 'wrong' })).statusCode, `${label} wrong token`).toBe(401);
      // Cross-site Origin → 403, even with a valid token.
      const crossSite = await send({ ...adminHeaders, origin: 'https://evil.example' });
      expect(crossSite.statusCode, `${label} cross-site`).toBe(403);
      expect(crossSite.json().error.message).toBe('cross-site request forbidden');
      if (route.permission === 'admin') {
        // api token on an admin route → 403.
        expect((await send(apiHeaders)).statusCode, `${label} api token`).toBe(403);
        // admin token in ?token= is never read on HTTP → 401.
        expect((await send({}, `?token=${ADMIN_TOKEN}`)).statusCode, `${label} ?token=`).toBe(401);
        // bad Host on an admin route → 403.
        const badHost = await send({ ...adminHeaders, host: 'evil.example' });
        expect(badHost.statusCode, `${label} bad host`).toBe(403);
        expect(badHost.json().error.message).toBe('cross-site request forbidden');
      }
      // With the right token the guard lets it through (whatever the handler then says).
      const ok = await send(adminHeaders);
      expect([401, 403], `${label} admin token`).not.toContain(ok.statusCode);
    }
  });
});

describe('tokens', () => {
  const t = useHarness({
    extraRoutes: probes,
    roomyLimits: false,
    config: { gateway: { auth: { token_header: 'X-Gatehouse-Key' } } },
    scope: 'all',
  });
  const get = (headers: Record<string, string>) =>
    t.gateway.app.inject({ method: 'GET', url: '/api/v1/probe/read', headers });

  it('accepts the configured header and Authorization: Bearer', async () => {
    expect((await get({ 'x-gatehouse-key': API_TOKEN })).json().role).toBe('api');
    expect((await get({ authorization: `Bearer ${ADMIN_TOKEN}` })).json().role).toBe('admin');
    expect((await get({ authorization: `bearer ${API_TOKEN}` })).statusCode).toBe(200);
  });

  it('does not read the default header once another is configured', async () => {
    expect((await get({ 'x-api-token': API_TOKEN })).statusCode).toBe(401);
  });

  it('rejects an admin token given as ?token= on HTTP routes', async () => {
    const res = await t.gateway.app.inject({ method: 'GET', url: `/api/v1/probe/read?token=${API_TOKEN}` });
    expect(res.statusCode).toBe(401);
    expect(res.json().error.code).toBe('UNAUTHORIZED');
  });
});

describe('admin fallback', () => {
  it('api tokens carry admin rights when admin_tokens is empty', async () => {
    const t = await gatewayWith({ gateway: { auth: { admin_tokens: [] } } });
    const res = await t.gateway.app.inject({
      method: 'POST',
      url: '/api/v1/probe/admin',
      headers: apiHeaders,
      payload: {},
    });
    expect(res.statusCode).toBe(200);
    expect(res.json().role).toBe('admin');
  });
});

describe('rate limits', () => {
  it('counts per token and group, with headers on every limited response and Retry-After on 429', async () => {
    const clock = new ManualClock(Date.UTC(2026, 10, 21, 10, 0, 10));
    const t = await gatewayWith({ security: { rate_limits: { read: 3, analytics: 1 } } }, clock);
    const get = (url: string, headers = apiHeaders) => t.gateway.app.inject({ method: 'GET', url, headers });
    for (let i = 1; i <= 3; i++) {
      const res = await get('/api/v1/probe/read');
      expect(res.statusCode).toBe(200);
      expect(res.headers['x-ratelimit-limit']).toBe('3');
      expect(res.headers['x-ratelimit-remaining']).toBe(String(3 - i));
      expect(res.headers['x-ratelimit-reset']).toBe('50');
    }
    const limited = await get('/api/v1/probe/read');
    expect(limited.statusCode).toBe(429);
    expect(limited.json().error.code).toBe('RATE_LIMITED');
    expect(limited.headers['retry-after']).toBe('50');
    expect(limited.headers['x-ratelimit-remaining']).toBe('0');
    // Another token has its own budget; another group too.
    expect((await get('/api/v1/probe/read', adminHeaders)).statusCode).toBe(200);
    expect((await get('/api/v1/probe/analytics')).statusCode).toBe(200);
    expect((await get('/api/v1/probe/analytics')).statusCode).toBe(429);
    // Health is not limited.
    expect((await get('/api/v1/health')).headers['x-ratelimit-limit']).toBeUndefined();
    clock.advance(50_000);
    expect((await get('/api/v1/probe/read')).statusCode).toBe(200);
  });
});

describe('profiles', () => {
  it('minimal: no token, no Origin/Host checks, no rate limits', async () => {
    const t = await gatewayWith({ security: { profile: 'minimal' } });
    const res = await t.gateway.app.inject({
      method: 'POST',
      url: '/api/v1/probe/admin',
      headers: { origin: 'https://elsewhere.example', host: 'elsewhere.example' },
      payload: {},
    });
    expect(res.statusCode).toBe(200);
    expect(res.headers['x-ratelimit-limit']).toBeUndefined();
  });

  it('standard: the Host rule applies to admin routes only', async () => {
    const t = await gatewayWith();
    const api = await t.gateway.app.inject({
      method: 'GET',
      url: '/api/v1/probe/read',
      headers: { ...apiHeaders, host: 'evil.example' },
    });
    expect(api.statusCode).toBe(200);
    const admin = await t.gateway.app.inject({
      method: 'GET',
      url: '/api/v1/probe/admin-read',
      headers: { ...adminHeaders, host: 'evil.example' },
    });
    expect(admin.statusCode).toBe(403);
  });

  it('extended: the Host rule applies to every route', async () => {
    const t = await gatewayWith({ security: { profile: 'extended' } });
    const api = await t.gateway.app.inject({
      method: 'GET',
      url: '/api/v1/probe/read',
      headers: { ...apiHeaders, host: 'evil.example' },
    });
    expect(api.statusCode).toBe(403);
    expect(api.json().error.message).toBe('cross-site request forbidden');
    const good = await t.gateway.app.inject({
      method: 'GET',
      url: '/api/v1/probe/read',
      headers: { ...apiHeaders, host: 'localhost:58123' },
    });
    expect(good.statusCode).toBe(200);
  });
});

describe('Origin and CORS', () => {
  const t = useHarness({
    extraRoutes: probes,
    roomyLimits: false,
    config: { gateway: { auth: { allowed_origins: ['https://Dash.Example.com'] } } },
    scope: 'all',
  });

  it('allows a listed origin and adds CORS headers', async () => {
    const res = await t.gateway.app.inject({
      method: 'GET',
      url: '/api/v1/probe/read',
      headers: { ...apiHeaders, origin: 'https://dash.example.com' },
    });
    expect(res.statusCode).toBe(200);
    expect(res.headers['access-control-allow-origin']).toBe('https://dash.example.com');
  });

  it('allows the gateway own origin', async () => {
    const res = await t.gateway.app.inject({
      method: 'GET',
      url: '/api/v1/probe/read',
      headers: { ...apiHeaders, host: '127.0.0.1:58123', origin: 'http://127.0.0.1:58123' },
    });
    expect(res.statusCode).toBe(200);
  });

  it('answers preflight for allowed origins and refuses others', async () => {
    const ok = await t.gateway.app.inject({
      method: 'OPTIONS',
      url: '/api/v1/probe/admin',
      headers: { origin: 'https://dash.example.com', 'access-control-request-method': 'POST' },
    });
    expect(ok.statusCode).toBe(204);
    expect(ok.headers['access-control-allow-methods']).toContain('POST');
    expect(String(ok.headers['access-control-allow-headers'])).toContain('X-API-Token');
    const bad = await t.gateway.app.inject({
      method: 'OPTIONS',
      url: '/api/v1/probe/admin',
      headers: { origin: 'https://evil.example', 'access-control-request-method': 'POST' },
    });
    expect(bad.statusCode).toBe(403);
  });
});

describe('loopback exemption', () => {
  const probe = (t: Harness, remoteAddress: string, headers: Record<string, string> = {}) =>
    t.gateway.app.inject({
      method: 'GET',
      url: '/api/v1/probe/read',
      remoteAddress,
      headers: { ...apiHeaders, ...headers },
    });

  it('trusts a loopback peer with an accepted Host, never X-Forwarded-For', async () => {
    const t = await gatewayWith();
    expect((await probe(t, '127.0.0.1', { host: 'localhost:58123' })).json().loopback).toBe(true);
    expect((await probe(t, '::1', { host: '[::1]:58123' })).json().loopback).toBe(true);
    expect((await probe(t, '127.0.0.1', { host: 'evil.example' })).json().loopback).toBe(false);
    expect((await probe(t, '203.0.113.9', { host: 'localhost', 'x-forwarded-for': '127.0.0.1' })).json().loopback).toBe(
      false,
    );
  });

  it('is off when loopback_trust is false (behind a reverse proxy)', async () => {
    const t = await gatewayWith({ gateway: { auth: { loopback_trust: false } } });
    expect((await probe(t, '127.0.0.1', { host: 'localhost' })).json().loopback).toBe(false);
  });
});

describe('audit log', () => {
  it('records token use and failures by fingerprint, never the token', async () => {
    const t = await gatewayWith();
    await t.gateway.app.inject({ method: 'POST', url: '/api/v1/probe/admin', headers: adminHeaders, payload: {} });
    await t.gateway.app.inject({ method: 'GET', url: '/api/v1/probe/read', headers: apiHeaders });
    await t.gateway.app.inject({ method: 'GET', url: '/api/v1/probe/read', headers: apiHeaders });
    await t.gateway.app.inject({
      method: 'GET',
      url: '/api/v1/probe/read',
      headers: { 'x-api-token': 'not-a-real-token-xyz' },
    });
    await t.internals.audit.flush();
    const text = readFileSync(join(t.config.data_dir, 'gateway_auth', 'audit.jsonl'), 'utf8');
    expect(text).not.toContain(ADMIN_TOKEN);
    expect(text).not.toContain(API_TOKEN);
    expect(text).not.toContain('not-a-real-token-xyz');
    const lines = text
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    const used = lines.filter((l) => l.event === 'token_used');
    expect(used.map((l) => l.user)).toEqual([fingerprintToken(ADMIN_TOKEN), fingerprintToken(API_TOKEN)]); // api: once a minute
    const failure = lines.find((l) => l.event === 'auth_failure');
    expect(failure).toMatchObject({
      user: fingerprintToken('not-a-real-token-xyz'),
      reason: 'invalid_token',
      mode: 'pairing',
    });
    for (const line of lines) {
      expect(line.ts).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
      expect(line).toHaveProperty('ip');
    }
  });
});

describe('health', () => {
  // The product routes only, no probes.
  const plain = useHarness({ roomyLimits: false, autoOpen: false });
  it('needs no token and reports degraded on the echo provider', async () => {
    const t = await plain.open();
    const res = await t.gateway.app.inject({ method: 'GET', url: '/api/health' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      status: 'degraded',
      message: 'provider: echo provider: offline answers, no model',
      server_running: true,
      active_channels: { websocket: 'connected' },
      ws_clients: 0,
      provider: 'echo:echo',
      media_cache_mb: 0,
      active_sessions: 0,
      total_sessions: 0,
      version: expect.stringMatching(/^\d+\.\d+\.\d+/),
      uptime_seconds: expect.any(Number),
      instance_id: expect.stringMatching(/^gw_/),
      components: {
        store: { status: 'ok' },
        provider: { status: 'degraded', message: 'echo provider: offline answers, no model' },
        channels: { status: 'ok' },
        bus: { status: 'ok', message: 'local (in-process)' },
        mcp: { status: 'ok' },
        memory: { status: 'ok', measure: 'heap', value_mb: expect.any(Number), watermark_mb: null, shedding: false },
      },
    });
  });

  it('is unhealthy (503) when the store is unreachable', async () => {
    const t = await plain.open();
    await t.internals.store.close();
    const res = await t.gateway.app.inject({ method: 'GET', url: '/api/v1/health' });
    expect(res.statusCode).toBe(503);
    expect(res.json().status).toBe('unhealthy');
  });
});
