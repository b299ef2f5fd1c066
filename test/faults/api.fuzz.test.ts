/**
 * Property-based fuzzing of every API route, driven by the route table and
 * its schemas: wrong types, huge and deeply nested values, prototype keys,
 * odd path segments, broken JSON. The property: no 5xx, and every error is
 * the envelope (or the idempotency conflict's own body, spec rule 4).
 *
 * Runs `GATEHOUSE_FUZZ_RUNS` cases (default 20 000); `GATEHOUSE_FUZZ_SEED`
 * replays a failing run.
 */
import fc from 'fast-check';
import type { LightMyRequestResponse } from 'fastify';
import { describe, expect, it } from 'vitest';
import { ERROR_STATUS } from '../../src/http/errors.js';
import type { RouteDef } from '../../src/http/route.js';
import { concreteRoutes } from '../../src/http/server.js';
import { ADMIN_TOKEN, API_TOKEN, useHarness } from '../helpers/harness.js';

const RUNS = Number(process.env.GATEHOUSE_FUZZ_RUNS ?? 20_000);
const SEED = process.env.GATEHOUSE_FUZZ_SEED === undefined ? undefined : Number(process.env.GATEHOUSE_FUZZ_SEED);
const CODES = new Set(Object.keys(ERROR_STATUS));

/** Keys of a zod object schema (through optional/default wrappers), or none. */
function shapeKeys(schema: unknown): string[] {
  let current = schema as { shape?: Record<string, unknown>; _zod?: { def?: { innerType?: unknown } } } | undefined;
  for (let i = 0; i < 5 && current; i++) {
    if (current.shape && typeof current.shape === 'object') return Object.keys(current.shape);
    current = current._zod?.def?.innerType as typeof current;
  }
  return [];
}

/** `depth` levels of nesting, built as text (no recursion anywhere). */
function nested(depth: number, open: string, close: string, leaf: string): string {
  return open.repeat(depth) + leaf + close.repeat(depth);
}

const oddSegment = fc.oneof(
  fc.constantFrom(
    '__proto__',
    'constructor',
    'prototype',
    'toString',
    '..',
    '.',
    '%',
    '%00',
    '%2e%2e',
    '%ZZ',
    '%C0%AF',
  ),
  fc.string({ maxLength: 40 }).map((s) => encodeURIComponent(s)),
  fc.string({ minLength: 1, maxLength: 20 }).map((s) => encodeURIComponent(s).repeat(60)),
  fc.constant('gateway%3Acli%3Ademo'),
);

const scalar = fc.oneof(
  fc.string({ maxLength: 30 }),
  fc.integer(),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
  fc.constantFrom('__proto__', '-1', '0', '1e309', 'NaN', 'true', '9'.repeat(40)),
);

const protoKeys = fc.constantFrom(
  '{"__proto__":{"polluted":true}}',
  '{"constructor":{"prototype":{"polluted":true}}}',
  '{"metadata":{"__proto__":{"x":1}},"text":"hi"}',
  '{"__proto__":null,"prototype":1,"constructor":2}',
);

/** A body text: valid JSON of any shape, the schema's keys with wrong values, deep nesting, prototype keys, noise. */
function bodyText(keys: string[]): fc.Arbitrary<string> {
  const fields = keys.length
    ? fc
        .dictionary(fc.constantFrom(...keys), fc.oneof(scalar, fc.jsonValue({ maxDepth: 3 })), { maxKeys: keys.length })
        .map((o) => JSON.stringify(o))
    : fc.constant('{}');
  return fc.oneof(
    { weight: 4, arbitrary: fields },
    { weight: 2, arbitrary: fc.jsonValue({ maxDepth: 4 }).map((v) => JSON.stringify(v)) },
    {
      weight: 2,
      arbitrary: fc
        .tuple(fc.constantFrom(...(keys.length ? keys : ['metadata'])), fc.integer({ min: 50, max: 20_000 }))
        .map(([key, depth]) => `{"${key}":${nested(depth, '{"a":', '}', '1')}}`),
    },
    { weight: 1, arbitrary: fc.integer({ min: 50, max: 20_000 }).map((depth) => nested(depth, '[', ']', '0')) },
    { weight: 1, arbitrary: protoKeys },
    { weight: 1, arbitrary: fc.string({ maxLength: 50 }) },
    {
      weight: 1,
      arbitrary: fc
        .constantFrom(...(keys.length ? keys : ['text']))
        .map((key) => JSON.stringify({ [key]: 'x'.repeat(200_000) })),
    },
  );
}

interface Case {
  route: RouteDef;
  url: string;
  body: string | undefined;
  token: string;
}

function caseFor(route: RouteDef, url: string): fc.Arbitrary<Case> {
  const params = url.match(/:[A-Za-z_]+/g) ?? [];
  const queryKeys = [...shapeKeys(route.query), 'limit', 'offset', 'cursor', '__proto__'];
  return fc
    .record({
      segments: fc.array(oddSegment, { minLength: params.length, maxLength: params.length }),
      query: fc.dictionary(fc.constantFrom(...queryKeys), fc.oneof(scalar.map(String), oddSegment), { maxKeys: 4 }),
      body:
        route.method === 'GET' || route.method === 'DELETE' ? fc.constant(undefined) : bodyText(shapeKeys(route.body)),
      token: fc.constantFrom(ADMIN_TOKEN, API_TOKEN),
    })
    .map(({ segments, query, body, token }) => {
      let path = url;
      params.forEach((param, i) => {
        // A dot segment (`..`, `%2e%2e`) is resolved by the client's URL parser before it is sent: the request
        // would name another path (`/v1/responses/..` is `/v1`), whose error shape is that path's, not this route's.
        const segment = segments[i] ?? 'x';
        path = path.replace(param, /^(\.|%2e){1,2}$/i.test(segment) ? `${segment}x` : segment);
      });
      // Never follow forever: streaming modes are asked for with a value that is not `true`.
      const search = Object.entries(query)
        .filter(([key]) => key !== 'follow' && key !== 'wait')
        .map(([key, value]) => `${encodeURIComponent(key)}=${value}`)
        .join('&');
      const target = search ? `${path}?${search}` : path;
      // Counterexamples print short: method, URL and the start of the body.
      const show = () =>
        `${route.method} ${target} ${body === undefined ? '' : `${body.length} bytes: ${body.slice(0, 120)}`}`;
      return { route, url: target, body, token, [fc.toStringMethod]: show };
    });
}

/** OpenAI's error object, on the routes that answer in it (`errorBody`, ADR 0015). */
function openAiConforms(body: unknown): string | null {
  const e = (body as { error?: { message?: unknown; type?: unknown; code?: unknown; param?: unknown } }).error;
  if (!e || typeof e !== 'object') return 'no OpenAI error object';
  if (typeof e.message !== 'string' || typeof e.type !== 'string' || typeof e.code !== 'string') {
    return 'OpenAI error fields missing';
  }
  return e.param === null ? null : 'OpenAI error param is not null';
}

/** The routes that answer in JSON-RPC: the MCP server (DECISIONS §19) and A2A (§22). */
const JSON_RPC_PATHS = new Set(['/mcp', '/a2a', '/a2a/:agent']);

/** A JSON-RPC error object, on the JSON-RPC routes (ADR 0038, ADR 0042). */
function jsonRpcConforms(body: unknown): string | null {
  const rpc = body as { jsonrpc?: unknown; error?: { code?: unknown; message?: unknown } };
  if (rpc.jsonrpc !== '2.0') return 'not a JSON-RPC 2.0 message';
  if (!rpc.error || typeof rpc.error !== 'object') return 'no JSON-RPC error object';
  if (!Number.isInteger(rpc.error.code) || typeof rpc.error.message !== 'string')
    return 'JSON-RPC error fields missing';
  return null;
}

/** The response is no 5xx, and an error has the envelope (or the conflict body, or the route's own shape). */
function conforms(res: LightMyRequestResponse, route: RouteDef): string | null {
  if (res.statusCode >= 500) return `status ${res.statusCode}: ${res.body.slice(0, 300)}`;
  if (res.statusCode < 400) return null;
  if (!res.headers['x-request-id']) return 'error without X-Request-Id';
  let body: unknown;
  try {
    body = JSON.parse(res.body);
  } catch {
    return `error body is not JSON: ${res.body.slice(0, 200)}`;
  }
  if (route.absolutePaths?.some((path) => JSON_RPC_PATHS.has(path))) return jsonRpcConforms(body);
  if (route.errorBody) return openAiConforms(body);
  const error = (body as { error?: unknown }).error;
  if (res.statusCode === 409 && typeof error === 'string') return null;
  const e = error as { code?: unknown; message?: unknown; request_id?: unknown; details?: unknown } | undefined;
  if (!e || typeof e !== 'object') return `no error object: ${res.body.slice(0, 200)}`;
  if (typeof e.code !== 'string' || !CODES.has(e.code)) return `unknown code ${String(e.code)}`;
  if (typeof e.message !== 'string' || typeof e.request_id !== 'string') return 'envelope fields missing';
  if (typeof e.details !== 'object' || e.details === null) return 'details is not an object or array';
  return null;
}

describe('fuzzing every route', () => {
  const h = useHarness({ scope: 'all', config: { gateway: { max_body_bytes: 1_048_576 } } });

  it(`answers ${RUNS} hostile requests without a 5xx, every error in the envelope`, async () => {
    const { internals, config } = h;
    const skipped = new Set(['/api/v1/ws', '/api/ws', '/ws']);
    const targets = concreteRoutes(internals.routes, config.gateway.api_prefix).filter(
      (r) => !skipped.has(r.url) && !r.url.endsWith('/events'),
    );
    const arbitrary = fc.oneof(...targets.map((t) => caseFor(t.route, t.url)));
    await fc.assert(
      fc.asyncProperty(arbitrary, async (c) => {
        const res = await h.inject({
          method: c.route.method,
          url: c.url,
          headers: {
            'x-api-token': c.token,
            ...(c.body !== undefined ? { 'content-type': 'application/json' } : {}),
          },
          ...(c.body !== undefined ? { payload: c.body } : {}),
        });
        const problem = conforms(res, c.route);
        if (problem) throw new Error(`${c.route.method} ${c.url} body ${String(c.body).slice(0, 120)} → ${problem}`);
        expect(Object.prototype).not.toHaveProperty('polluted');
      }),
      { numRuns: RUNS, ...(SEED !== undefined ? { seed: SEED } : {}), endOnFailure: true },
    );
  }, 600_000);
});
