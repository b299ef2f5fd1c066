import { Validator } from '@seriousme/openapi-schema-validator';
import { describe, expect, it } from 'vitest';
import { concreteRoutes } from '../../src/http/server.js';
import { adminHeaders, apiHeaders, useHarness } from '../helpers/harness.js';

describe('OpenAPI document and docs page', () => {
  const t = useHarness({ roomyLimits: false, scope: 'all' });

  it('validates against the OpenAPI 3.1 schema', async () => {
    expect((await t.gateway.app.inject({ method: 'GET', url: '/api/v1/openapi.json' })).statusCode).toBe(401);
    const res = await t.gateway.app.inject({ method: 'GET', url: '/api/v1/openapi.json', headers: apiHeaders });
    expect(res.statusCode).toBe(200);
    const doc = res.json();
    expect(doc.openapi).toBe('3.1.0');
    const result = await new Validator().validate(doc);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
  });

  it('lists every registered route with its permission', async () => {
    const doc = (await t.gateway.app.inject({ method: 'GET', url: '/api/openapi.json', headers: apiHeaders })).json<{
      paths: Record<string, Record<string, { 'x-permission': string }>>;
    }>();
    const prefix = t.config.gateway.api_prefix;
    const registered = concreteRoutes(t.internals.routes, prefix).filter(
      (r) => r.url.startsWith(prefix) || r.route.absolutePaths,
    );
    expect(registered.length).toBeGreaterThan(20);
    for (const { method, url, route } of registered) {
      const path = url.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
      const op = doc.paths[path]?.[method.toLowerCase()];
      expect(op, `${method} ${path}`).toBeDefined();
      expect(op!['x-permission']).toBe(route.permission);
    }
  });

  it('serves a browsable page', async () => {
    const res = await t.gateway.app.inject({ method: 'GET', url: '/api/v1/docs', headers: apiHeaders });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toContain('text/html');
    expect(res.body).toContain('openapi.json');
  });
});

describe('Prometheus metrics', () => {
  const t = useHarness({ roomyLimits: false, scope: 'all' });

  it('is guarded like a read endpoint', async () => {
    expect((await t.gateway.app.inject({ method: 'GET', url: '/metrics' })).statusCode).toBe(401);
    const ok = await t.gateway.app.inject({ method: 'GET', url: '/metrics', headers: apiHeaders });
    expect(ok.statusCode).toBe(200);
    expect(ok.headers['x-ratelimit-limit']).toBe('120');
  });

  it('counts requests, turns, replays and store commits', async () => {
    const send = (key: string) =>
      t.gateway.app.inject({
        method: 'POST',
        url: '/api/v1/message?wait=true',
        headers: { ...adminHeaders, 'idempotency-key': key },
        payload: { platform: 'cli', user_id: 'u', chat_id: 'c', text: 'hi' },
      });
    expect((await send('m1')).statusCode).toBe(200);
    expect((await send('m1')).statusCode).toBe(200); // replay
    const text = (await t.gateway.app.inject({ method: 'GET', url: '/metrics', headers: apiHeaders })).body;
    expect(text).toMatch(/gatehouse_http_requests_total\{method="POST",route="\/api\/v1\/message",status="200"\} 2/);
    expect(text).toMatch(/gatehouse_turn_duration_seconds_count\{status="completed"\} 1/);
    expect(text).toMatch(/gatehouse_idempotency_replays_total 1/);
    expect(text).toMatch(/gatehouse_store_commit_seconds_count [1-9]/);
    expect(text).toMatch(/gatehouse_turn_queue_depth 0/);
    expect(text).toMatch(/gatehouse_process_resident_memory_bytes/);
  });
});
