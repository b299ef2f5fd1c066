/**
 * Input that can't hurt (issue 10, ADR 0013), over `inject` on a real
 * gateway: every JSON body is bounded (depth 64, 10 000 keys) before
 * validation, prototype keys are refused, prototype words as ids are plain
 * data, and no such request is ever answered 5xx.
 */
import type { LightMyRequestResponse } from 'fastify';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { concreteRoutes } from '../../src/http/server.js';
import { defineRoute, type RouteDef } from '../../src/http/route.js';
import { JSON_LIMITS } from '../../src/lib/json.js';
import { adminHeaders, apiHeaders, useHarness } from '../helpers/harness.js';

/** `{"a":{"a":…1…}}`: `depth` nested objects. */
const nestedObject = (depth: number): string => '{"a":'.repeat(depth) + '1' + '}'.repeat(depth);
/** `[[[…]]]`: `depth` nested arrays. */
const nestedArray = (depth: number): string => '['.repeat(depth) + ']'.repeat(depth);
/** One object of `count` keys. */
const wideObject = (count: number): string => `{${Array.from({ length: count }, (_, i) => `"k${i}":${i}`).join(',')}}`;

/** Echoes the validated body: what a route sees after the parser. */
const echoRoutes: RouteDef[] = [
  defineRoute({
    method: 'POST',
    path: '/probe/echo',
    permission: 'api',
    summary: 'probe',
    body: z.record(z.string(), z.unknown()),
    handler: (_ctx, { body }) => ({
      body,
      prototype_is_object: Object.getPrototypeOf(body) === Object.prototype,
    }),
  }),
];

function expectEnvelope(res: LightMyRequestResponse, status: number, code: string): Record<string, unknown> {
  expect(res.statusCode, res.body.slice(0, 300)).toBe(status);
  const error = res.json<{ error: Record<string, unknown> }>().error;
  expect(error.code).toBe(code);
  expect(typeof error.message).toBe('string');
  expect(error).toHaveProperty('details');
  expect(error.request_id).toBe(res.headers['x-request-id']);
  return error;
}

describe('hostile input', () => {
  const t = useHarness({ scope: 'all', extraRoutes: echoRoutes });
  const send = (
    method: 'POST' | 'PUT' | 'PATCH',
    url: string,
    payload: string,
    headers: Record<string, string> = adminHeaders,
  ) => t.inject({ method, url, payload, headers: { ...headers, 'content-type': 'application/json' } });

  describe('errors: nesting and key bounds, before validation', () => {
    // spec: issue 10 — each of these answered 500 INTERNAL_ERROR for ~10 000-deep bodies.
    const deep = nestedObject(10_000);
    const cases: Array<[string, 'POST' | 'PUT' | 'PATCH', string, string, Record<string, string>]> = [
      ['POST /config/validate', 'POST', '/api/v1/config/validate', deep, apiHeaders],
      ['PUT /config', 'PUT', '/api/v1/config', deep, adminHeaders],
      ['PATCH /config', 'PATCH', '/api/v1/config', deep, adminHeaders],
      ['POST /sessions (metadata)', 'POST', '/api/v1/sessions', `{"metadata":${deep}}`, apiHeaders],
      [
        'POST /knowledge (metadata)',
        'POST',
        '/api/v1/knowledge',
        `{"title":"t","content":"c","metadata":${deep}}`,
        adminHeaders,
      ],
      ['POST /message (arrays)', 'POST', '/api/v1/message', `{"text":${nestedArray(10_000)}}`, apiHeaders],
    ];
    it.each(cases)('%s: a 10 000-deep body is 400 BAD_REQUEST', async (_label, method, url, payload, headers) => {
      const error = expectEnvelope(await send(method, url, payload, headers), 400, 'BAD_REQUEST');
      expect(error.message).toBe(`JSON is nested deeper than ${JSON_LIMITS.maxDepth} levels`);
      expect(error.details).toEqual({ max_depth: JSON_LIMITS.maxDepth });
    });

    it('accepts exactly the depth bound and refuses one more level', async () => {
      const at = `{"x":${nestedObject(JSON_LIMITS.maxDepth - 1)}}`;
      const ok = await send('POST', '/api/v1/probe/echo', at, apiHeaders);
      expect(ok.statusCode, ok.body.slice(0, 200)).toBe(200);
      const over = `{"x":${nestedObject(JSON_LIMITS.maxDepth)}}`;
      expectEnvelope(await send('POST', '/api/v1/probe/echo', over, apiHeaders), 400, 'BAD_REQUEST');
    });

    it('refuses a body with more keys than the bound, counted across the whole document', async () => {
      const ok = await send('POST', '/api/v1/probe/echo', wideObject(JSON_LIMITS.maxKeys), apiHeaders);
      expect(ok.statusCode).toBe(200);
      const error = expectEnvelope(
        await send('POST', '/api/v1/probe/echo', `{"a":${wideObject(JSON_LIMITS.maxKeys)}}`, apiHeaders),
        400,
        'BAD_REQUEST',
      );
      expect(error.details).toEqual({ max_keys: JSON_LIMITS.maxKeys });
    });

    it('counts only structure: brackets and colons inside strings are text', async () => {
      const text = `${'[{:'.repeat(5_000)}\\"${'{'.repeat(100)}`;
      const res = await send('POST', '/api/v1/probe/echo', JSON.stringify({ text }), apiHeaders);
      expect(res.statusCode, res.body.slice(0, 200)).toBe(200);
      expect(res.json<{ body: { text: string } }>().body.text).toBe(text);
    });

    it('GET /knowledge?filter= with a deeply nested filter is 400', async () => {
      const res = await t.inject({
        method: 'GET',
        url: `/api/v1/knowledge?filter=${encodeURIComponent(nestedObject(5_000))}`,
        headers: apiHeaders,
      });
      expectEnvelope(res, 400, 'BAD_REQUEST');
    });
  });

  describe('security: prototype keys', () => {
    it.each([
      ['__proto__', '{"__proto__":{"polluted":true}}'],
      ['__proto__ (escaped)', '{"\\u005f_proto__":{"polluted":true}}'],
      ['__proto__ (nested in an array)', '{"list":[{"a":1},{"__proto__":{"polluted":true}}]}'],
      ['constructor.prototype', '{"constructor":{"prototype":{"polluted":true}}}'],
    ])('a body with %s is 400 and pollutes nothing', async (_label, payload) => {
      const error = expectEnvelope(await send('POST', '/api/v1/probe/echo', payload, apiHeaders), 400, 'BAD_REQUEST');
      expect(String(error.message)).toMatch(/^JSON key "(__proto__|constructor\.prototype)" is not allowed$/);
      expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    });

    it.each([
      ['at the top', 'name: proto-top\ndescription: d\n__proto__: {polluted: 1}'],
      ['in metadata', 'name: proto-meta\ndescription: d\nmetadata:\n  __proto__: x'],
    ])('SKILL.md front matter with __proto__ %s is 400, not silently dropped', async (_label, front) => {
      const skill_md = `---\n${front}\n---\n\nDo things.\n`;
      const error = expectEnvelope(
        await send('POST', '/api/v1/skills', JSON.stringify({ skill_md })),
        400,
        'BAD_REQUEST',
      );
      expect(error.details).toEqual([
        { path: 'body.skill_md.front_matter', message: 'the key "__proto__" is not allowed' },
      ]);
    });

    it('session metadata may not carry __proto__ (it used to vanish and become the prototype)', async () => {
      const res = await send('POST', '/api/v1/sessions', '{"metadata":{"__proto__":{"admin":true}}}', apiHeaders);
      expectEnvelope(res, 400, 'BAD_REQUEST');
    });

    it('constructor and prototype are plain data keys', async () => {
      const metadata = { constructor: 'x', prototype: { version: 2 }, toString: 1, hasOwnProperty: null };
      const res = await send('POST', '/api/v1/probe/echo', JSON.stringify(metadata), apiHeaders);
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json()).toEqual({ body: metadata, prototype_is_object: true });

      const created = await send(
        'POST',
        '/api/v1/knowledge',
        JSON.stringify({ title: 't', content: 'c', metadata: { constructor: 'x', prototype: { version: 2 } } }),
      );
      expect(created.statusCode, created.body).toBe(201);
      const id = created.json<{ id: string }>().id;
      expect(created.json<{ metadata: unknown }>().metadata).toEqual({ constructor: 'x', prototype: { version: 2 } });
      const filtered = await t.inject({
        method: 'GET',
        url: `/api/v1/knowledge?filter=${encodeURIComponent('{"prototype":{"version":2}}')}`,
        headers: apiHeaders,
      });
      expect(filtered.statusCode, filtered.body).toBe(200);
      expect(filtered.json<{ items: Array<{ id: string }> }>().items.map((item) => item.id)).toEqual([id]);
    });
  });

  describe('a path the router cannot take, on a route with its own error shape', () => {
    it('answers in that shape: OpenAI error objects under /v1/responses, JSON-RPC under /a2a', async () => {
      const ask = (method: 'GET' | 'POST', url: string) =>
        t.inject({
          method,
          url,
          headers: { ...apiHeaders, ...(method === 'POST' ? { 'content-type': 'application/json' } : {}) },
          ...(method === 'POST' ? { payload: '{}' } : {}),
        });
      for (const url of ['/v1/responses/%ZZ', '/v1/responses/%E0%A4%A']) {
        const res = await ask('GET', url);
        expect(res.statusCode, url).toBe(400);
        expect(res.json(), url).toMatchObject({ error: { message: expect.any(String), type: expect.any(String) } });
      }
      const unknown = await ask('GET', '/v1/responses/');
      expect(unknown.statusCode).toBe(404);
      expect(unknown.json()).toMatchObject({ error: { type: expect.any(String), param: null } });
      const rpc = await ask('POST', '/a2a/%ZZ');
      expect(rpc.statusCode).toBe(400);
      expect(rpc.json()).toMatchObject({ jsonrpc: '2.0', error: { code: expect.any(Number) } });
      const envelope = await ask('GET', '/api/v1/sessions/%ZZ');
      expect(envelope.json()).toMatchObject({ error: { code: 'BAD_REQUEST', request_id: expect.any(String) } });
    });
  });

  describe('security: prototype words as ids', () => {
    const WORDS = ['__proto__', 'constructor', 'prototype', 'hasOwnProperty', 'toString', '__defineGetter__'];

    it('every route with a path parameter answers them without a 5xx, in the envelope', async () => {
      const routes = concreteRoutes(t.internals.routes, t.config.gateway.api_prefix).filter(
        (r) => r.url.startsWith('/api/v1/') && r.url.includes(':'),
      );
      expect(routes.length).toBeGreaterThan(20);
      for (const word of WORDS) {
        for (const { method, url } of routes) {
          const res = await t.inject({
            method,
            url: url.replace(/:[a-z_]+/g, encodeURIComponent(word)),
            headers: {
              ...adminHeaders,
              ...(method === 'GET' || method === 'DELETE' ? {} : { 'content-type': 'application/json' }),
            },
            ...(method === 'GET' || method === 'DELETE' ? {} : { payload: '{"content":"x","text":"x"}' }),
          });
          expect(res.statusCode, `${method} ${url} ${word}: ${res.body.slice(0, 200)}`).toBeLessThan(500);
          if (res.statusCode >= 400 && String(res.headers['content-type']).includes('json')) {
            expect(res.json<{ error: { code: string } }>().error.code, `${method} ${url} ${word}`).toBeTypeOf('string');
          }
        }
      }
    });

    it('a memory entry keyed __proto__ takes concurrent updates without a 5xx', async () => {
      const created = await send('POST', '/api/v1/memory', JSON.stringify({ content: 'x', key: '__proto__' }));
      expect(created.statusCode, created.body).toBe(201);
      const answers = await Promise.all(
        Array.from({ length: 40 }, (_, i) =>
          send('PUT', '/api/v1/memory/__proto__', JSON.stringify({ content: `v${i}` })),
        ),
      );
      const statuses = answers.map((res) => res.statusCode);
      expect(
        statuses.filter((status) => status >= 500),
        answers.find((r) => r.statusCode >= 500)?.body,
      ).toEqual([]);
      expect(statuses.every((status) => status === 200)).toBe(true);
      const final = await t.inject({ method: 'GET', url: '/api/v1/memory/__proto__', headers: apiHeaders });
      expect(final.json<{ content: string }>().content).toMatch(/^v\d+$/);
      expect(
        (await t.inject({ method: 'DELETE', url: '/api/v1/memory/__proto__', headers: adminHeaders })).statusCode,
      ).toBe(200);
    });
  });
});
