import type { InjectOptions } from 'fastify';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { IdempotencyConflictError } from '../../src/http/errors.js';
import { defineRoute, created, type RouteDef } from '../../src/http/route.js';
import { objectBody, q } from '../../src/http/validation.js';
import { adminHeaders, apiHeaders, useHarness } from '../helpers/harness.js';

/** Probe routes exercising the kernel: body/query validation, results and failures. */
const probeRoutes: RouteDef[] = [
  defineRoute({
    method: 'POST',
    path: '/probe/items',
    permission: 'api',
    summary: 'probe',
    body: objectBody({ title: z.string().min(1), priority: z.number().int().optional() }),
    handler: (_ctx, { body }) => created({ title: body.title, priority: body.priority ?? 5 }),
  }),
  defineRoute({
    method: 'GET',
    path: '/probe/list',
    permission: 'api',
    summary: 'probe',
    query: z.object({ limit: q.int(1, 100, 20), follow: q.bool(false) }),
    handler: (_ctx, { query }) => ({ limit: query.limit, follow: query.follow }),
  }),
  defineRoute({
    method: 'GET',
    path: '/probe/boom',
    permission: 'api',
    summary: 'probe',
    handler: () => {
      throw new Error('database password is hunter2');
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/probe/conflict',
    permission: 'api',
    summary: 'probe',
    handler: () => {
      throw new IdempotencyConflictError('idempotency key reused with different content');
    },
  }),
];

describe('HTTP kernel', () => {
  const t = useHarness({
    config: { gateway: { max_body_bytes: 1024 } },
    roomyLimits: false,
    extraRoutes: probeRoutes,
    scope: 'all',
  });

  const inject = (opts: InjectOptions) => t.gateway.app.inject(opts);

  describe('happy', () => {
    it('serves every route under the prefix and the /api alias', async () => {
      for (const url of ['/api/v1/probe/list', '/api/probe/list']) {
        const res = await inject({ method: 'GET', url, headers: apiHeaders });
        expect(res.statusCode).toBe(200);
        expect(res.json()).toEqual({ limit: 20, follow: false });
      }
    });

    it('parses query values strictly', async () => {
      const res = await inject({ method: 'GET', url: '/api/v1/probe/list?limit=100&follow=true', headers: apiHeaders });
      expect(res.json()).toEqual({ limit: 100, follow: true });
    });

    it('answers 201 with the created object', async () => {
      const res = await inject({
        method: 'POST',
        url: '/api/v1/probe/items',
        headers: apiHeaders,
        payload: { title: 'a', priority: 7 },
      });
      expect(res.statusCode).toBe(201);
      expect(res.json()).toEqual({ title: 'a', priority: 7 });
    });

    it('echoes a client request id and generates one otherwise', async () => {
      const echoed = await inject({
        method: 'GET',
        url: '/api/v1/health',
        headers: { 'x-request-id': 'trace-42 abc' },
      });
      expect(echoed.headers['x-request-id']).toBe('trace-42 abc');
      const generated = await inject({ method: 'GET', url: '/api/v1/health' });
      expect(generated.headers['x-request-id']).toMatch(/^req_[0-9a-f]{32}$/);
      const tooLong = await inject({
        method: 'GET',
        url: '/api/v1/health',
        headers: { 'x-request-id': 'x'.repeat(201) },
      });
      expect(tooLong.headers['x-request-id']).toMatch(/^req_/);
      const control = await inject({ method: 'GET', url: '/api/v1/health', headers: { 'x-request-id': 'a\tb' } });
      expect(control.headers['x-request-id']).toMatch(/^req_/);
    });
  });

  describe('errors', () => {
    const expectEnvelope = (res: Awaited<ReturnType<typeof inject>>, status: number, code: string) => {
      expect(res.statusCode).toBe(status);
      const body = res.json();
      expect(body.error.code).toBe(code);
      expect(typeof body.error.message).toBe('string');
      expect(body.error.request_id).toBe(res.headers['x-request-id']);
      expect(body.error).toHaveProperty('details');
      return body.error;
    };

    it('unknown routes are 404 in the envelope, with the request id', async () => {
      const res = await inject({
        method: 'GET',
        url: '/api/v1/nope',
        headers: { ...apiHeaders, 'x-request-id': 'rid-1' },
      });
      const error = expectEnvelope(res, 404, 'NOT_FOUND');
      expect(error.request_id).toBe('rid-1');
      expectEnvelope(await inject({ method: 'DELETE', url: '/elsewhere' }), 404, 'NOT_FOUND');
    });

    it('invalid JSON is 400', async () => {
      const res = await inject({
        method: 'POST',
        url: '/api/v1/probe/items',
        headers: { ...apiHeaders, 'content-type': 'application/json' },
        payload: '{"title": ',
      });
      expectEnvelope(res, 400, 'BAD_REQUEST');
    });

    it.each([['[]'], ['null'], ['"text"'], ['5'], ['true']])('a non-object body %s is 400', async (payload) => {
      const res = await inject({
        method: 'POST',
        url: '/api/v1/probe/items',
        headers: { ...apiHeaders, 'content-type': 'application/json' },
        payload,
      });
      const error = expectEnvelope(res, 400, 'BAD_REQUEST');
      expect(Array.isArray(error.details)).toBe(true);
    });

    it('never coerces: a boolean is not an integer, a string is not a number', async () => {
      for (const priority of [true, '7', 5.5, null]) {
        const res = await inject({
          method: 'POST',
          url: '/api/v1/probe/items',
          headers: apiHeaders,
          payload: { title: 'a', priority },
        });
        const error = expectEnvelope(res, 400, 'BAD_REQUEST');
        expect(error.details).toEqual([expect.objectContaining({ path: 'body.priority' })]);
      }
    });

    it('lists every bad field at once', async () => {
      const res = await inject({
        method: 'POST',
        url: '/api/v1/probe/items',
        headers: apiHeaders,
        payload: { title: '', priority: 'x' },
      });
      const error = expectEnvelope(res, 400, 'BAD_REQUEST');
      expect(error.details.map((d: { path: string }) => d.path).sort()).toEqual(['body.priority', 'body.title']);
    });

    it.each([['limit=0'], ['limit=101'], ['limit=abc'], ['limit=1.5'], ['limit='], ['follow=maybe']])(
      'bad query %s is 400',
      async (qs) => {
        const res = await inject({ method: 'GET', url: `/api/v1/probe/list?${qs}`, headers: apiHeaders });
        expectEnvelope(res, 400, 'BAD_REQUEST');
      },
    );

    it('a body over max_body_bytes is 413', async () => {
      const res = await inject({
        method: 'POST',
        url: '/api/v1/probe/items',
        headers: apiHeaders,
        payload: { title: 'x'.repeat(2000) },
      });
      expectEnvelope(res, 413, 'PAYLOAD_TOO_LARGE');
    });

    it('a non-JSON content type is 400', async () => {
      const res = await inject({
        method: 'POST',
        url: '/api/v1/probe/items',
        headers: { ...apiHeaders, 'content-type': 'text/plain' },
        payload: 'title=a',
      });
      expectEnvelope(res, 400, 'BAD_REQUEST');
    });

    it('an unexpected error is a generic 500; the cause goes to the log only', async () => {
      const res = await inject({ method: 'GET', url: '/api/v1/probe/boom', headers: apiHeaders });
      const error = expectEnvelope(res, 500, 'INTERNAL_ERROR');
      expect(res.body).not.toContain('hunter2');
      expect(error.message).toBe('internal error');
      expect(t.logs.some((line) => line.includes('hunter2') && line.includes(error.request_id))).toBe(true);
    });

    it('the idempotency conflict is the one body outside the envelope', async () => {
      const res = await inject({ method: 'POST', url: '/api/v1/probe/conflict', headers: adminHeaders, payload: {} });
      expect(res.statusCode).toBe(409);
      expect(res.json()).toEqual({ error: 'idempotency key reused with different content' });
    });
  });
});

describe('draining', () => {
  const t = useHarness({ roomyLimits: false });

  it('answers 503 UNAVAILABLE to every request and reports unhealthy', async () => {
    const before = await t.gateway.app.inject({ method: 'GET', url: '/api/v1/health' });
    expect(before.statusCode).toBe(200);
    t.internals.beginDrain();
    const res = await t.gateway.app.inject({ method: 'GET', url: '/api/v1/nothing-here', headers: apiHeaders });
    expect(res.statusCode).toBe(503);
    expect(res.json().error.code).toBe('UNAVAILABLE');
    const health = await t.gateway.app.inject({ method: 'GET', url: '/api/v1/health' });
    expect(health.statusCode).toBe(503);
    expect(health.json()).toMatchObject({
      status: 'unhealthy',
      server_running: false,
      error: { code: 'UNAVAILABLE' },
    });
  });
});
