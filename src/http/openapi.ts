import { z } from 'zod';
import { ERROR_STATUS } from './errors.js';
import type { RouteDef, RouteResponse } from './route.js';
import { rateGroupOf } from './route.js';
import { queryWireTypes } from './validation.js';

/** A JSON value of the document (OpenAPI objects are plain JSON). */
export type Json = Record<string, unknown>;

const JSON_TYPE = 'application/json';

/** What each error status means on this API (DECISIONS §3), the description of its response. */
export const ERROR_DESCRIPTIONS: Record<number, string> = {
  400: 'BAD_REQUEST: invalid input, a malformed request or a state change that is not allowed',
  401: 'UNAUTHORIZED: missing or invalid token',
  403: 'FORBIDDEN: not allowed for this token or user, or cross-site request forbidden',
  404: 'NOT_FOUND',
  409: 'Idempotency conflict: the key was used with other content (spec rule 4: `{"error": "<message>"}`)',
  413: 'PAYLOAD_TOO_LARGE: the body exceeds the limit',
  429: 'RATE_LIMITED: wait `Retry-After` seconds',
  500: 'INTERNAL_ERROR: the cause is in the log, never in the answer',
  502: 'UPSTREAM_ERROR: the model provider failed (`details.event_id` names the turn)',
  503: 'UNAVAILABLE: overloaded, storage unavailable or draining (`Retry-After` unless draining)',
  504: 'TIMEOUT: the wait ran out; the turn goes on and a retry with the same key gets the late result',
};

/** The response headers the document knows by name, with their meaning and schema. */
const KNOWN_HEADERS: Record<string, { description: string; schema: Json }> = {
  'X-Request-Id': {
    description: "The request's id: the client's `X-Request-Id` (1..200 printable characters) or a generated one",
    schema: { type: 'string' },
  },
  'X-RateLimit-Limit': {
    description: 'Requests allowed per one-minute window in this rate group',
    schema: intSchema(),
  },
  'X-RateLimit-Remaining': { description: 'Requests left in the current window', schema: intSchema() },
  'X-RateLimit-Reset': { description: 'Seconds until the current window ends', schema: intSchema(1) },
  'Retry-After': { description: 'Seconds to wait before trying again', schema: intSchema(1) },
  'X-Gatehouse-Event-Id': {
    description: 'The event id of the turn this request submitted',
    schema: { type: 'string' },
  },
  'X-Config-Applied': { description: 'Dotted keys now in effect, comma-separated', schema: { type: 'string' } },
  'X-Config-Restart-Required': {
    description: 'Dotted keys changed that take effect after a restart, comma-separated',
    schema: { type: 'string' },
  },
  'Cache-Control': { description: '`no-store`: the answer holds a secret', schema: { type: 'string' } },
  'X-Log-Cursor': {
    description:
      'The id of the newest log entry when the page was read: send it as `Last-Event-ID` on the follow ' +
      '(`follow=true`) to continue exactly after this page',
    schema: { type: 'string' },
  },
};

function intSchema(minimum = 0): Json {
  return { type: 'integer', minimum };
}

/** The envelope every error answers with (DECISIONS §3). */
const ERROR_SCHEMA: Json = {
  type: 'object',
  required: ['error'],
  properties: {
    error: {
      type: 'object',
      required: ['code', 'message', 'details', 'request_id'],
      properties: {
        code: { type: 'string', enum: Object.keys(ERROR_STATUS) },
        message: { type: 'string' },
        details: {
          description: 'An object, or `[{path, message}]` for validation errors',
          anyOf: [
            { type: 'object' },
            {
              type: 'array',
              items: {
                type: 'object',
                required: ['path', 'message'],
                properties: { path: { type: 'string' }, message: { type: 'string' } },
              },
            },
          ],
        },
        request_id: { type: 'string' },
      },
    },
  },
};

/** The idempotency conflict's own body (spec rule 4), the one exception to the envelope. */
const CONFLICT_SCHEMA: Json = {
  type: 'object',
  required: ['error'],
  properties: { error: { type: 'string' } },
};

/**
 * JSON Schemas already converted, per zod schema and kind: route schemas are
 * module constants, so a second document (another gateway in the same
 * process) costs little.
 */
const converted = new WeakMap<z.ZodType, Map<string, Json>>();

/** `override` of a query schema: a node registered in `queryWireTypes` is documented as its meaning. */
function documentQueryType(ctx: { zodSchema: z.core.$ZodType; jsonSchema: Json }): void {
  const wire = queryWireTypes.get(ctx.zodSchema as z.ZodType);
  if (!wire) return;
  for (const key of Object.keys(ctx.jsonSchema)) delete ctx.jsonSchema[key];
  Object.assign(ctx.jsonSchema, structuredClone(wire.schema));
}

/** A copy of `node` with every `#/$defs/<name>` reference pointing at `components/schemas/<names.get(name)>`. */
function rewriteRefs(node: unknown, names: Map<string, string>): unknown {
  if (Array.isArray(node)) return node.map((item) => rewriteRefs(item, names));
  if (!node || typeof node !== 'object') return node;
  const copy: Json = {};
  for (const [key, value] of Object.entries(node)) {
    copy[key] =
      key === '$ref' && typeof value === 'string' && value.startsWith('#/$defs/')
        ? `#/components/schemas/${names.get(value.slice('#/$defs/'.length)) ?? ''}`
        : rewriteRefs(value, names);
  }
  return copy;
}

/** Header component name for a header name: `X-RateLimit-Limit` → `XRateLimitLimit`. */
function componentName(header: string): string {
  return header.replace(/[^A-Za-z0-9]+/g, '');
}

/**
 * The shared parts of a document under construction: JSON Schemas from zod
 * (definitions hoisted into `components/schemas`), header components named
 * by `$ref`, and the error responses. The API document and the webhook's
 * are built with it.
 */
export class OpenApiComponents {
  private readonly schemas: Record<string, Json> = { Error: ERROR_SCHEMA };
  private readonly headers: Record<string, Json> = {};
  private readonly parameters: Record<string, Json> = {};
  private readonly responses: Record<string, Json> = {};
  private conflictUsed = false;

  /**
   * A zod schema as JSON Schema (draft 2020-12, OpenAPI 3.1's dialect):
   * `input` for what the server accepts, `output` for what it answers.
   * `query: true` documents the `q` helpers' parsed meaning (`queryWireTypes`).
   */
  schema(schema: z.ZodType, io: 'input' | 'output', options: { query?: boolean } = {}): Json {
    const key = `${io}${options.query ? ':query' : ''}`;
    let byKind = converted.get(schema);
    if (!byKind) converted.set(schema, (byKind = new Map<string, Json>()));
    let out = byKind.get(key);
    if (!out) {
      out = z.toJSONSchema(schema, {
        io,
        unrepresentable: 'any',
        target: 'draft-2020-12',
        ...(options.query ? { override: documentQueryType } : {}),
      });
      delete out.$schema;
      byKind.set(key, out);
    }
    return this.hoist(structuredClone(out));
  }

  /** Moves `$defs` into `components/schemas` and points their `$ref`s there. */
  private hoist(schema: Json): Json {
    const defs = schema.$defs as Record<string, Json> | undefined;
    if (!defs) return schema;
    delete schema.$defs;
    // A definition already hoisted under its name with the same content is shared (one schema, many routes).
    const names = new Map<string, string>(Object.keys(defs).map((name) => [name, name]));
    for (const name of Object.keys(defs)) {
      const existing = this.schemas[name];
      if (existing === undefined) continue;
      const same = JSON.stringify(existing) === JSON.stringify(rewriteRefs(defs[name], names));
      let unique = name;
      for (let i = 2; !same && unique in this.schemas; i++) unique = `${name}${i}`;
      names.set(name, unique);
    }
    const rewrite = (node: unknown): unknown => rewriteRefs(node, names);
    for (const [name, def] of Object.entries(defs)) this.schemas[names.get(name)!] = rewrite(def) as Json;
    return rewrite(schema) as Json;
  }

  /** A `$ref` to the header component of `name` (created on first use). */
  header(name: string): Json {
    const key = componentName(name);
    if (!this.headers[key]) {
      const known = KNOWN_HEADERS[name];
      this.headers[key] = {
        description: known?.description ?? `\`${name}\``,
        schema: known?.schema ?? { type: 'string' },
      };
    }
    return { $ref: `#/components/headers/${key}` };
  }

  /** A `$ref` to a request-header parameter component (created on first use). */
  headerParameter(name: string, description: string): Json {
    const key = componentName(name);
    this.parameters[key] ??= { name, in: 'header', required: false, description, schema: { type: 'string' } };
    return { $ref: `#/components/parameters/${key}` };
  }

  /** A response object: its description, headers by name, and one body per content type (none: no body). */
  response(description: string, headers: string[], content: Array<{ type: string; schema: Json }>): Json {
    const response: Json = { description };
    if (headers.length > 0) response.headers = Object.fromEntries(headers.map((h) => [h, this.header(h)]));
    if (content.length > 0) response.content = Object.fromEntries(content.map((c) => [c.type, { schema: c.schema }]));
    return response;
  }

  /**
   * An error response: the envelope (or `body`, inline), the conflict's own
   * body for 409, `Retry-After` on 429 and 503. Shared ones are `$ref`s to
   * `components/responses` (`Error404`, `Error404Limited` with the rate-limit headers).
   */
  errorResponse(status: number, headers: string[], body?: Json): Json {
    const conflict = status === 409 && !body;
    if (conflict) this.conflictUsed = true;
    const schema = body ?? { $ref: `#/components/schemas/${conflict ? 'IdempotencyConflict' : 'Error'}` };
    const withRetry = status === 429 || status === 503 ? [...headers, 'Retry-After'] : headers;
    const response = this.response(ERROR_DESCRIPTIONS[status] ?? `HTTP ${status}`, withRetry, [
      { type: JSON_TYPE, schema },
    ]);
    if (body) return response;
    const base = `Error${status}${headers.includes('X-RateLimit-Limit') ? 'Limited' : ''}`;
    const text = JSON.stringify(response);
    let name = base;
    for (let i = 2; this.responses[name] && JSON.stringify(this.responses[name]) !== text; i++) name = `${base}_${i}`;
    this.responses[name] = response;
    return { $ref: `#/components/responses/${name}` };
  }

  /** The `components` object of everything used so far. */
  components(securitySchemes: Json): Json {
    const schemas = this.conflictUsed ? { ...this.schemas, IdempotencyConflict: CONFLICT_SCHEMA } : this.schemas;
    return {
      ...(Object.keys(securitySchemes).length > 0 ? { securitySchemes } : {}),
      schemas,
      headers: this.headers,
      ...(Object.keys(this.responses).length > 0 ? { responses: this.responses } : {}),
      ...(Object.keys(this.parameters).length > 0 ? { parameters: this.parameters } : {}),
    };
  }
}

/** The document path of a route: its first absolute path or prefix + path, `{param}` syntax. */
export function openApiPath(route: RouteDef, apiPrefix: string): string {
  const raw = route.absolutePaths?.[0] ?? apiPrefix + route.path;
  return raw.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
}

/** The operation id of a route: method + path, e.g. `get_api_v1_sessions_session_id_`. */
export function operationIdOf(route: RouteDef, apiPrefix: string): string {
  return `${route.method.toLowerCase()}${openApiPath(route, apiPrefix).replace(/[^A-Za-z0-9]+/g, '_')}`;
}

/** Whether a route takes `Idempotency-Key` (it declares the idempotency conflict, 409: DECISIONS §3, §6). */
export function honoursIdempotencyKey(route: RouteDef): boolean {
  return route.errors?.includes(409) ?? false;
}

/**
 * Every error status a route can answer: derived from its declaration (400
 * for any malformed request or missing Host, 401 with a permission, 403 for
 * the cross-site rule and permissions, 404 with a path parameter, 413 with a
 * body, 429 when rate-limited, 500, 503), its `errors`, and any error status
 * among its `responses`.
 */
export function errorStatusesOf(route: RouteDef, rateLimited: boolean): number[] {
  const statuses = new Set<number>([400, 403, 500, 503]);
  if (route.permission !== 'none') statuses.add(401);
  if (route.path.includes(':')) statuses.add(404);
  if (route.body) statuses.add(413);
  if (rateLimited && rateGroupOf(route)) statuses.add(429);
  for (const status of route.errors ?? []) statuses.add(status);
  for (const response of route.responses ?? []) if (response.status >= 400) statuses.add(response.status);
  return [...statuses].sort((a, b) => a - b);
}

/** The fallback of a route that declares no `responses`: a generic 200 with any JSON body. */
const UNTYPED_SUCCESS: RouteResponse = { status: 200, description: 'Success (body not described yet)' };

/** Declared responses grouped by status (several content types may share one). */
function byStatus(responses: RouteResponse[]): Map<number, RouteResponse[]> {
  const groups = new Map<number, RouteResponse[]>();
  for (const response of responses) groups.set(response.status, [...(groups.get(response.status) ?? []), response]);
  return groups;
}

function contentOf(
  components: OpenApiComponents,
  declared: RouteResponse[],
  typed: boolean,
): Array<{ type: string; schema: Json }> {
  const content: Array<{ type: string; schema: Json }> = [];
  for (const response of declared) {
    if (response.status === 204) continue;
    const type = response.contentType ?? JSON_TYPE;
    if (content.some((c) => c.type === type)) continue;
    if (response.schema) content.push({ type, schema: components.schema(response.schema, 'output') });
    else if (type === 'text/event-stream') content.push({ type, schema: { type: 'string' } });
    else if (!typed || type === JSON_TYPE) content.push({ type, schema: {} });
    else content.push({ type, schema: { type: 'string' } });
  }
  return content;
}

function parameters(components: OpenApiComponents, schema: z.ZodType | undefined, where: 'path' | 'query'): Json[] {
  if (!schema) return [];
  const object = components.schema(schema, 'input', { query: where === 'query' });
  const properties = (object.properties ?? {}) as Record<string, Json>;
  const required = new Set((object.required as string[] | undefined) ?? []);
  return Object.entries(properties).map(([name, property]) => ({
    name,
    in: where,
    required: where === 'path' ? true : required.has(name),
    schema: property,
    ...(typeof property.description === 'string' ? { description: property.description } : {}),
  }));
}

/** Options of `buildOpenApi`. */
export interface OpenApiOptions {
  apiPrefix: string;
  version: string;
  /** Rate limits apply (profile standard or extended): 429 and the `X-RateLimit-*` headers are declared. */
  rateLimited: boolean;
  /** `gateway.auth.token_header` (default `X-API-Token`); `Authorization: Bearer` is always accepted too. */
  tokenHeader?: string;
}

/** Tag descriptions; a tag not listed is described by its name. */
const TAG_DESCRIPTIONS: Record<string, string> = {
  sessions: 'Conversations: create, list, read, delete, history, run a turn',
  messages: 'POST /message: the one way in for a platform message',
  turns: 'The turn ledger, approvals and turn event streams',
  memory: 'Memory entries and their ranked search',
  knowledge: 'Knowledge entries, chunked and indexed for search',
  skills: 'Agent Skills (SKILL.md): create, stage, approve, enable, disable',
  tasks: 'Tasks run by the agent or waiting for a person',
  cron: 'Scheduled prompts (five-field UTC cron) and their runs',
  channels: 'Channels (WebSocket, webhook, platforms) and their state',
  pairing: 'Pairing codes and their verification (auth mode `pairing`)',
  config: 'The running configuration (secrets redacted)',
  logs: 'Recent log entries and their live feed',
  analytics: 'Cost and usage aggregates over UTC days',
  health: 'Liveness and readiness',
  metrics: 'Prometheus metrics',
  docs: 'This document, the AsyncAPI document and the docs page',
  openai: 'The OpenAI-compatible API (`/v1`, OpenAI error shape)',
  subscriptions: 'Event subscriptions: signed outbound webhooks, their deliveries and retries',
};

/** The error body of a route with its own (`errorBody`), or undefined for the envelope. */
function errorBodySchema(route: RouteDef, components: OpenApiComponents): Json | undefined {
  if (!route.errorBody) return undefined;
  return route.errorSchema ? components.schema(route.errorSchema, 'output') : { type: 'object' };
}

function operationOf(route: RouteDef, components: OpenApiComponents, options: OpenApiOptions): Json {
  const rateLimited = options.rateLimited && rateGroupOf(route) !== null;
  const common = [
    'X-Request-Id',
    ...(rateLimited ? ['X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset'] : []),
  ];
  const typed = route.responses !== undefined && route.responses.some((r) => r.status < 400);
  const declared = typed ? route.responses! : [UNTYPED_SUCCESS];
  const responses: Json = {};
  for (const [status, group] of byStatus(declared)) {
    const headers = [...new Set([...common, ...group.flatMap((r) => r.headers ?? [])])];
    const description = group.map((r) => r.description).join('; or: ');
    responses[String(status)] = components.response(description, headers, contentOf(components, group, typed));
  }
  for (const status of errorStatusesOf(route, options.rateLimited)) {
    if (responses[String(status)]) continue;
    responses[String(status)] = components.errorResponse(status, common, errorBodySchema(route, components));
  }
  const idempotent = honoursIdempotencyKey(route);
  const operation: Json = {
    operationId: operationIdOf(route, options.apiPrefix),
    summary: route.summary,
    tags: route.tags ?? [],
    'x-permission': route.permission,
    'x-rate-group': rateGroupOf(route),
    security: route.permission === 'none' ? [] : [{ apiToken: [] }, { bearer: [] }],
    parameters: [
      ...parameters(components, route.params, 'path'),
      ...parameters(components, route.query, 'query'),
      ...(idempotent
        ? [
            components.headerParameter(
              'Idempotency-Key',
              'Makes the request idempotent (spec: idempotent retries): a retry with the same key and content answers what the original answered; other content → 409',
            ),
            components.headerParameter('X-Idempotency-Key', 'The same as `Idempotency-Key` (either header)'),
          ]
        : []),
    ],
    responses,
  };
  if (route.body) {
    operation.requestBody = {
      required: true,
      content: { [JSON_TYPE]: { schema: components.schema(route.body, 'input') } },
    };
  }
  return operation;
}

const STREAM_EVENTS = {
  message_stream:
    'POST /sessions/{id}/messages with Accept: text/event-stream — first `accepted` {event_id, session_key} (id 0), then events `delta` {content}, `tool_call` {id, name, arguments}, `tool_result` {id, name, result}, then `done` (the Message) or `error` (the error object); each with an `id:` (the per-turn sequence of /turns/{event_id}/events, where Last-Event-ID resumes); a `: ping` comment every 15 s. Schemas: asyncapi.json.',
  turn_events:
    'GET /turns/{event_id}/events — every event has an `id:` (per-turn sequence); names `status`, `delta`, `tool_call`, `tool_result`, `done`, `error`; resume with Last-Event-ID; 204 when resumed after the end.',
  logs_follow:
    'GET /logs?follow=true — `log` events carrying a log entry, `id:` `<run>-<n>`; resume with Last-Event-ID.',
  websocket:
    'WebSocket at {api_prefix}/ws (alias /ws). Auth: token header, ?token= (api rights at most) or first frame {type:"auth", token} → {type:"auth_ok", role}; bad token → {type:"error", error:{code:"UNAUTHORIZED"}} and close 4401; none within 10 s → close 4401. Client frames: {type:"message", text, session_key?, idempotency_key?, ref?}, {type:"interrupt", event_id}, {type:"subscribe", topics}, {type:"ping"}. Server frames: {type:"accepted", ref, event_id, session_key}, {type:"delta", event_id, content}, {type:"tool_call"…}, {type:"tool_result"…}, {type:"final", event_id, status, message}, {type:"event", topic, event, data}, {type:"pong"}, {type:"error", ref?, event_id?, error:{code, message}}.',
};

/**
 * The OpenAPI 3.1 document of every registered route, generated from the
 * route definitions and their zod schemas (the same ones that validate
 * requests and describe responses, ADR 0016). Each operation declares its
 * success statuses with their bodies (a route without `responses` gets a
 * generic 200), every error status it can answer, `X-Request-Id` on every
 * response, `X-RateLimit-*` on rate-limited ones, `Retry-After` on 429 and 503, and
 * `Idempotency-Key` where honoured; `x-permission` and `x-rate-group` too.
 */
export function buildOpenApi(routes: RouteDef[], options: OpenApiOptions): Json {
  const components = new OpenApiComponents();
  const paths: Record<string, Json> = {};
  for (const route of routes) {
    const path = openApiPath(route, options.apiPrefix);
    paths[path] = { ...(paths[path] ?? {}), [route.method.toLowerCase()]: operationOf(route, components, options) };
  }
  const tags = [...new Set(routes.flatMap((route) => route.tags ?? []))]
    .sort()
    .map((name) => ({ name, description: TAG_DESCRIPTIONS[name] ?? name }));
  return {
    openapi: '3.1.0',
    info: {
      title: 'Gatehouse',
      version: options.version,
      license: { name: 'MIT', identifier: 'MIT' },
      description:
        `Agent gateway API. Every route is also served under the /api alias of ${options.apiPrefix}. ` +
        'Errors use the envelope {error: {code, message, details, request_id}}; the idempotency conflict is 409 {"error": "<message>"}.',
    },
    servers: [{ url: '/', description: 'The gateway that served this document' }],
    tags,
    paths,
    components: components.components({
      apiToken: { type: 'apiKey', in: 'header', name: options.tokenHeader ?? 'X-API-Token' },
      bearer: { type: 'http', scheme: 'bearer' },
    }),
    'x-streams': STREAM_EVENTS,
  };
}
