import { Validator } from '@seriousme/openapi-schema-validator';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { signXSignature } from '../../src/channels/webhook/webhook.signature.js';
import { honoursIdempotencyKey, operationIdOf, type Json } from '../../src/http/openapi.js';
import { defineRoute, HttpResult, type RouteDef } from '../../src/http/route.js';
import { adminHeaders, apiHeaders, useHarness } from '../helpers/harness.js';
import { ContractChecker, documentOf } from '../helpers/response-contract.js';

/**
 * The OpenAPI contract (ADR 0016). Every answer of every harness gateway is
 * checked against the document by the harness itself (helpers/response-contract.ts);
 * this file checks the document's own promises, that the check can fail,
 * representative answers of analytics, channels, config, docs, health, logs,
 * metrics and pairing, and the webhook server's document.
 */

type Operation = Json & { operationId: string; responses: Record<string, Json>; parameters?: Json[] };

function operations(doc: Json): Array<{ path: string; method: string; op: Operation }> {
  const out: Array<{ path: string; method: string; op: Operation }> = [];
  for (const [path, item] of Object.entries(doc.paths as Record<string, Record<string, Operation>>)) {
    for (const [method, op] of Object.entries(item)) out.push({ path, method, op });
  }
  return out;
}

/** A response object with its `$ref` followed. */
function resolved(doc: Json, response: Json): Json {
  if (typeof response.$ref !== 'string') return response;
  const name = response.$ref.split('/').pop()!;
  return ((doc.components as Json).responses as Record<string, Json>)[name]!;
}

/**
 * Operations under the API prefix that still answer an undescribed body.
 * Must stay empty: a new route declares its `responses` (ADR 0016).
 */
const STILL_UNTYPED: string[] = [];

describe('the OpenAPI document', () => {
  const t = useHarness({ scope: 'all' });
  const doc = (): Json => documentOf(t.internals.routes, t.config);

  it('is a valid OpenAPI 3.1 document, the same one GET /openapi.json serves', async () => {
    const served = await t.inject({ method: 'GET', url: '/api/v1/openapi.json', headers: apiHeaders });
    expect(served.statusCode).toBe(200);
    const document = served.json<Json>();
    const result = await new Validator().validate(document);
    expect(result.errors ?? []).toEqual([]);
    // The response check validates against exactly this document.
    expect(document).toEqual(doc());
  });

  it('gives every operation under the API prefix a typed success response', () => {
    const untyped = t.internals.routes
      .filter((route) => !route.absolutePaths)
      .filter((route) => !(route.responses ?? []).some((r) => r.status < 400))
      .map((route) => operationIdOf(route, t.config.gateway.api_prefix))
      .sort();
    expect(untyped, 'operations without a typed success response').toEqual(STILL_UNTYPED);
    // …and so does every other operation (/metrics, /v1/*).
    expect(t.internals.routes.filter((route) => !route.responses).map((r) => r.path)).toEqual([]);
  });

  it('declares X-Request-Id on every response, the rate-limit headers where limited, Retry-After on 429', () => {
    const document = doc();
    for (const { op } of operations(document)) {
      const limited = op['x-rate-group'] !== null;
      for (const [status, raw] of Object.entries(op.responses)) {
        const headers = Object.keys((resolved(document, raw).headers as Json | undefined) ?? {});
        const where = `${op.operationId} ${status}`;
        expect(headers, where).toContain('X-Request-Id');
        if (limited) expect(headers, where).toEqual(expect.arrayContaining(['X-RateLimit-Limit', 'X-RateLimit-Reset']));
        if (status === '429') expect(headers, where).toContain('Retry-After');
      }
      if (limited) expect(Object.keys(op.responses), op.operationId).toContain('429');
    }
  });

  it('declares Idempotency-Key and the 409 conflict body exactly where a route honours a key', () => {
    const document = doc();
    const byId = new Map(operations(document).map(({ op }) => [op.operationId, op]));
    const idempotent = t.internals.routes.filter(honoursIdempotencyKey).map((route) => operationIdOf(route, '/api/v1'));
    expect(idempotent).toEqual(expect.arrayContaining(['post_api_v1_message']));
    for (const { op } of operations(document)) {
      const refs = (op.parameters ?? []).map((p) => p.$ref);
      const has = refs.includes('#/components/parameters/IdempotencyKey');
      expect(has, op.operationId).toBe(idempotent.includes(op.operationId));
      if (has) expect(refs, op.operationId).toContain('#/components/parameters/XIdempotencyKey');
    }
    const conflict = resolved(document, byId.get('post_api_v1_message')!.responses['409']!);
    expect(conflict.content).toEqual({
      'application/json': { schema: { $ref: '#/components/schemas/IdempotencyConflict' } },
    });
  });

  it('types query parameters as what they mean, not as the strings the wire carries', () => {
    const document = doc();
    const logs = operations(document).find(({ op }) => op.operationId === 'get_api_v1_logs')!.op;
    const param = (name: string) => logs.parameters!.find((p) => p.name === name)!.schema;
    expect(param('limit')).toEqual({ type: 'integer', minimum: 1, maximum: 1000, default: 100 });
    expect(param('follow')).toMatchObject({ type: 'boolean', default: false });
    expect(param('since')).toEqual({ type: 'string', format: 'date-time' });
    expect(param('level')).toMatchObject({ type: 'string', enum: ['debug', 'info', 'warning', 'error'] });
    const cost = operations(document).find(({ op }) => op.operationId === 'get_api_v1_analytics_cost')!.op;
    expect(cost.parameters!.find((p) => p.name === 'period')!.schema).toEqual({
      type: 'string',
      enum: ['today', 'week', 'month', 'all'],
      default: 'today',
    });
    // No query parameter anywhere is an integer written as a string pattern.
    for (const { op } of operations(document)) {
      for (const p of op.parameters ?? []) {
        if (p.in === 'query')
          expect(JSON.stringify(p.schema), `${op.operationId} ${String(p.name)}`).not.toMatch(/\\\\d/);
      }
    }
  });

  it('declares 204 without a body and streams as text/event-stream', () => {
    const document = doc();
    const events = operations(document).find(({ op }) => op.operationId === 'get_api_v1_turns_event_id_events');
    expect(events?.op.responses['204']).toBeDefined();
    expect(events?.op.responses['204']!.content).toBeUndefined();
    const logs = operations(document).find(({ op }) => op.operationId === 'get_api_v1_logs')!.op;
    expect(Object.keys(logs.responses['200']!.content as Json).sort()).toEqual([
      'application/json',
      'text/event-stream',
    ]);
  });
});

/** Routes whose answers disagree with what they declare, on purpose. */
const drifting: RouteDef[] = [
  defineRoute({
    method: 'GET',
    path: '/contract/wrong-field',
    permission: 'api',
    summary: 'Declares a number, answers a string',
    responses: [{ status: 200, description: 'n', schema: z.object({ n: z.number() }) }],
    handler: () => ({ n: 'seven' }),
  }),
  defineRoute({
    method: 'POST',
    path: '/contract/undeclared-status',
    permission: 'api',
    summary: 'Declares 200, answers 201',
    responses: [{ status: 200, description: 'ok', schema: z.object({}) }],
    handler: () => new HttpResult(201, {}),
  }),
  defineRoute({
    method: 'GET',
    path: '/contract/wrong-type',
    permission: 'api',
    summary: 'Declares JSON, answers text',
    responses: [{ status: 200, description: 'ok', schema: z.object({}) }],
    handler: () => new HttpResult(200, 'plain', { 'content-type': 'text/plain' }),
  }),
  defineRoute({
    method: 'GET',
    path: '/contract/faithful',
    permission: 'api',
    summary: 'Answers what it declares',
    responses: [{ status: 200, description: 'ok', schema: z.object({ n: z.number().int() }) }],
    handler: () => ({ n: 7 }),
  }),
];

describe('the response check', () => {
  const t = useHarness({ extraRoutes: drifting });

  it('names the operation, the status and the schema error of a drifting answer', async () => {
    await t.inject({ method: 'GET', url: '/api/v1/contract/wrong-field', headers: apiHeaders });
    const violations = t.responses.take();
    expect(violations).toHaveLength(1);
    expect(violations[0]).toContain('GET /api/v1/contract/wrong-field (get_api_v1_contract_wrong_field) → 200');
    expect(violations[0]).toContain('/n must be number');
  });

  it('refuses an undeclared status and an undeclared content type; passes a faithful answer', async () => {
    await t.inject({ method: 'POST', url: '/api/v1/contract/undeclared-status', headers: apiHeaders });
    await t.inject({ method: 'GET', url: '/api/contract/wrong-type', headers: apiHeaders });
    await t.inject({ method: 'GET', url: '/api/v1/contract/faithful', headers: apiHeaders });
    const violations = t.responses.take();
    expect(violations).toHaveLength(2);
    expect(violations[0]).toMatch(/post_api_v1_contract_undeclared_status\) → 201: status 201 is not declared/);
    expect(violations[1]).toMatch(/get_api_v1_contract_wrong_type\) → 200: content type "text\/plain" is not declared/);
  });

  it('checks error answers against the envelope, and fails the test on close', async () => {
    const missing = await t.inject({ method: 'GET', url: '/api/v1/contract/faithful' });
    expect(missing.statusCode).toBe(401);
    expect(t.responses.seen).toContain('get_api_v1_contract_faithful 401');
    await t.inject({ method: 'GET', url: '/api/v1/contract/wrong-field', headers: apiHeaders });
    await expect(t.close()).rejects.toThrow(
      /1 response\(s\) do not match the OpenAPI document[\s\S]*\/n must be number/,
    );
  });
});

describe('representative answers match the document', () => {
  const t = useHarness({ scope: 'all' });

  it('health, metrics, docs', async () => {
    expect((await t.inject({ method: 'GET', url: '/api/v1/health' })).statusCode).toBe(200);
    const metrics = await t.inject({ method: 'GET', url: '/metrics', headers: apiHeaders });
    expect(metrics.statusCode).toBe(200);
    for (const url of ['/api/v1/openapi.json', '/api/v1/asyncapi.json']) {
      expect((await t.inject({ method: 'GET', url, headers: apiHeaders })).statusCode).toBe(200);
    }
    expect((await t.inject({ method: 'GET', url: '/api/v1/docs' })).statusCode).toBe(200);
    expect(t.responses.take()).toEqual([]);
  });

  it('channels: list, one, 404, disable and enable', async () => {
    expect((await t.inject({ method: 'GET', url: '/api/v1/channels', headers: apiHeaders })).statusCode).toBe(200);
    expect((await t.inject({ method: 'GET', url: '/api/v1/channels/websocket', headers: apiHeaders })).statusCode).toBe(
      200,
    );
    expect((await t.inject({ method: 'GET', url: '/api/v1/channels/nope', headers: apiHeaders })).statusCode).toBe(404);
    for (const op of ['disable', 'enable', 'reconnect']) {
      const r = await t.inject({ method: 'POST', url: `/api/v1/channels/websocket/${op}`, headers: adminHeaders });
      expect(r.statusCode, op).toBe(200);
    }
    expect(t.responses.take()).toEqual([]);
  });

  it('analytics: the three answers, by every grouping', async () => {
    await t.message({ platform: 'cli', user_id: 'u', chat_id: 'c', text: 'hello', wait: true });
    for (const url of [
      '/api/v1/analytics/cost?period=all&group_by=model',
      '/api/v1/analytics/cost?group_by=channel',
      '/api/v1/analytics/cost?group_by=session',
      '/api/v1/analytics/cost?group_by=day&period=week',
      '/api/v1/analytics/usage?period=month',
      '/api/v1/analytics?group_by=channel',
      '/api/v1/analytics?group_by=tool',
    ]) {
      expect((await t.inject({ method: 'GET', url, headers: apiHeaders })).statusCode, url).toBe(200);
    }
    expect(
      (await t.inject({ method: 'GET', url: '/api/v1/analytics?period=year', headers: apiHeaders })).statusCode,
    ).toBe(400);
    expect(t.responses.take()).toEqual([]);
  });

  it('config: read, validate, change live', async () => {
    expect((await t.inject({ method: 'GET', url: '/api/v1/config', headers: apiHeaders })).statusCode).toBe(200);
    const check = await t.inject({
      method: 'POST',
      url: '/api/v1/config/validate',
      headers: apiHeaders,
      payload: { logs: { level: 'loud' } },
    });
    expect(check.json()).toMatchObject({ valid: false });
    const patched = await t.inject({
      method: 'PATCH',
      url: '/api/v1/config',
      headers: adminHeaders,
      payload: { logs: { level: 'warning' } },
    });
    expect(patched.statusCode).toBe(200);
    expect(t.responses.take()).toEqual([]);
  });

  it('logs: a page', async () => {
    const page = await t.inject({ method: 'GET', url: '/api/v1/logs?limit=5&level=debug', headers: adminHeaders });
    expect(page.statusCode).toBe(200);
    expect((await t.inject({ method: 'GET', url: '/api/v1/logs?limit=0', headers: adminHeaders })).statusCode).toBe(
      400,
    );
    expect(t.responses.take()).toEqual([]);
  });

  it('pairing: issue, verify, refuse', async () => {
    const issued = await t.inject({
      method: 'POST',
      url: '/api/v1/pair',
      headers: adminHeaders,
      payload: { platform: 'tg' },
    });
    expect(issued.statusCode).toBe(201);
    const { code } = issued.json<{ code: string }>();
    const wrong = await t.inject({
      method: 'POST',
      url: '/api/v1/pair/verify',
      headers: apiHeaders,
      payload: { platform: 'tg', user_id: 'u1', code: 'WRONGONE' },
    });
    expect(wrong.statusCode).toBe(401);
    const right = await t.inject({
      method: 'POST',
      url: '/api/v1/pair/verify',
      headers: apiHeaders,
      payload: { platform: 'tg', user_id: 'u1', code },
    });
    expect(right.statusCode).toBe(200);
    expect(t.responses.take()).toEqual([]);
  });
});

describe("the webhook server's document", () => {
  const SECRET = 'contract-secret';
  const t = useHarness({
    config: {
      gateway: { auth: { mode: 'open' } },
      channels: { webhook: { enabled: true, host: '127.0.0.1', port: 0, secret: SECRET } },
    },
  });

  it('is served without a token at {path}/openapi.json, valid, and describes the real answers', async () => {
    await t.gateway.listen();
    const base = `${t.internals.webhook!.address!}/webhook`;
    const served = await fetch(`${base}/openapi.json`);
    expect(served.status).toBe(200);
    const doc = (await served.json()) as Json;
    const result = await new Validator().validate(doc);
    expect(result.errors ?? []).toEqual([]);
    expect(Object.keys(doc.paths as Json)).toEqual(['/webhook', '/webhook/health', '/webhook/openapi.json']);

    const checker = new ContractChecker(doc);
    const observe = async (path: string, method: string, response: Response): Promise<string[]> =>
      checker.check({
        path,
        method,
        status: response.status,
        contentType: response.headers.get('content-type') ?? undefined,
        body: await response.text(),
        requestId: response.headers.get('x-request-id') ?? undefined,
        retryAfter: response.headers.get('retry-after') ?? undefined,
      });
    const post = (body: string, headers: Record<string, string>) =>
      fetch(base, { method: 'POST', body, headers: { 'content-type': 'application/json', ...headers } });
    const good = JSON.stringify({ sender_id: 's1', chat_id: 'c1', text: 'hi' });
    const waited = JSON.stringify({ sender_id: 's1', chat_id: 'c2', text: 'hi', wait: true });
    const invalid = JSON.stringify({ chat_id: 'c1' });
    const answers = [
      ['/webhook', 'post', 202, await post(good, { 'x-signature': signXSignature(SECRET, good) })],
      ['/webhook', 'post', 200, await post(waited, { 'x-signature': signXSignature(SECRET, waited) })],
      ['/webhook', 'post', 401, await post(good, {})],
      ['/webhook', 'post', 400, await post(invalid, { 'x-signature': signXSignature(SECRET, invalid) })],
      ['/webhook/health', 'get', 200, await fetch(`${base}/health`)],
    ] as const;
    for (const [path, method, status, response] of answers) {
      expect(response.status, `${method} ${path}`).toBe(status);
      expect(await observe(path, method, response)).toEqual([]);
    }
    expect(checker.operationId('/webhook', 'post')).toBe('post_webhook');
  });
});
