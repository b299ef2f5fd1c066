import { z } from 'zod';
import type { RouteDef } from './route.js';
import { rateGroupOf } from './route.js';
import { ERROR_STATUS } from './errors.js';

type Json = Record<string, unknown>;

function jsonSchema(schema: z.ZodType): Json {
  const out = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any', target: 'draft-2020-12' }) as Json;
  delete out.$schema;
  return out;
}

function parameters(schema: z.ZodType | undefined, where: 'path' | 'query'): Json[] {
  if (!schema) return [];
  const object = jsonSchema(schema);
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

const errorRef = (description: string): Json => ({
  description,
  content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
});

/** Error responses a route can give, from what it declares (permission, schemas, rate group). */
function errorResponses(route: RouteDef, profileLimited: boolean): Json {
  const responses: Json = {};
  if (route.body || route.query || route.params) responses['400'] = errorRef('BAD_REQUEST: invalid input');
  if (route.permission !== 'none') {
    responses['401'] = errorRef('UNAUTHORIZED: missing or invalid token');
    responses['403'] = errorRef(
      route.permission === 'admin'
        ? 'FORBIDDEN: admin token required, or cross-site request forbidden'
        : 'FORBIDDEN: cross-site request forbidden',
    );
  }
  if (route.path.includes(':')) responses['404'] = errorRef('NOT_FOUND');
  if (route.body) responses['413'] = errorRef('PAYLOAD_TOO_LARGE');
  if (profileLimited && rateGroupOf(route)) responses['429'] = errorRef('RATE_LIMITED (Retry-After)');
  responses['500'] = errorRef('INTERNAL_ERROR');
  responses['503'] = errorRef('UNAVAILABLE: draining or storage unavailable');
  return responses;
}

const STREAM_EVENTS = {
  message_stream:
    'POST /sessions/{id}/messages with Accept: text/event-stream — events `delta` {content}, `tool_call` {id, name, arguments}, `tool_result` {id, name, result}, then `done` {status, message} or `error` {error}; a `: ping` comment every 15 s.',
  turn_events:
    'GET /turns/{event_id}/events — every event has an `id:` (per-turn sequence); names `status`, `delta`, `tool_call`, `tool_result`, `done`, `error`; resume with Last-Event-ID.',
  logs_follow: 'GET /logs?follow=true — `log` events carrying a log entry.',
  websocket:
    'WebSocket at {api_prefix}/ws (alias /ws). Auth: token header, ?token= (api rights at most) or first frame {type:"auth", token} → {type:"auth_ok", role}; bad token → {type:"error", error:{code:"UNAUTHORIZED"}} and close 4401; none within 10 s → close 4401. Client frames: {type:"message", text, session_key?, idempotency_key?, ref?}, {type:"interrupt", event_id}, {type:"subscribe", topics}, {type:"ping"}. Server frames: {type:"accepted", ref, event_id, session_key}, {type:"delta", event_id, content}, {type:"tool_call"…}, {type:"tool_result"…}, {type:"final", event_id, status, message}, {type:"event", topic, event, data}, {type:"pong"}, {type:"error", ref?, event_id?, error:{code, message}}.',
};

/**
 * The OpenAPI 3.1 document of every registered route, generated from the
 * route definitions and their zod schemas (the same ones that validate
 * requests). Each operation carries `x-permission` and `x-rate-group`.
 */
export function buildOpenApi(
  routes: RouteDef[],
  options: { apiPrefix: string; version: string; rateLimited: boolean },
): Json {
  const paths: Record<string, Json> = {};
  for (const route of routes) {
    const raw = route.absolutePaths?.[0] ?? options.apiPrefix + route.path;
    const path = raw.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
    const operation: Json = {
      operationId: `${route.method.toLowerCase()}${path.replace(/[^A-Za-z0-9]+/g, '_')}`,
      summary: route.summary,
      tags: route.tags ?? [],
      'x-permission': route.permission,
      'x-rate-group': rateGroupOf(route),
      security: route.permission === 'none' ? [] : [{ apiToken: [] }, { bearer: [] }],
      parameters: [...parameters(route.params, 'path'), ...parameters(route.query, 'query')],
      responses: {
        '200': { description: 'Success (201 for creations, 202 for accepted messages)' },
        ...errorResponses(route, options.rateLimited),
      },
    };
    if (route.body) {
      operation.requestBody = {
        required: true,
        content: { 'application/json': { schema: jsonSchema(route.body) } },
      };
    }
    paths[path] = { ...(paths[path] ?? {}), [route.method.toLowerCase()]: operation };
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Gatehouse',
      version: options.version,
      description:
        `Agent gateway API. Every route is also served under the /api alias of ${options.apiPrefix}. ` +
        'Errors use the envelope {error: {code, message, details, request_id}}; the idempotency conflict is 409 {"error": "<message>"}.',
    },
    servers: [{ url: '/' }],
    paths,
    components: {
      securitySchemes: {
        apiToken: { type: 'apiKey', in: 'header', name: 'X-API-Token' },
        bearer: { type: 'http', scheme: 'bearer' },
      },
      schemas: {
        Error: {
          type: 'object',
          required: ['error'],
          properties: {
            error: {
              type: 'object',
              required: ['code', 'message', 'details', 'request_id'],
              properties: {
                code: { type: 'string', enum: Object.keys(ERROR_STATUS) },
                message: { type: 'string' },
                details: {},
                request_id: { type: 'string' },
              },
            },
          },
        },
        IdempotencyConflict: { type: 'object', required: ['error'], properties: { error: { type: 'string' } } },
      },
    },
    'x-streams': STREAM_EVENTS,
  };
}

/** A small self-contained page that renders the OpenAPI document (no external assets). */
export const DOCS_PAGE = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Gatehouse API</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>body{font:14px/1.5 system-ui,sans-serif;margin:2rem;max-width:70rem}code{background:#f3f3f3;padding:0 .25rem}
table{border-collapse:collapse;width:100%}td,th{border-bottom:1px solid #ddd;padding:.35rem;text-align:left;vertical-align:top}
.m{font-weight:600;text-transform:uppercase}.p{font-family:monospace}</style></head>
<body><h1>Gatehouse API</h1><p id="d"></p><table><thead><tr><th>Method</th><th>Path</th><th>Permission</th><th>Rate group</th><th>Summary</th></tr></thead><tbody id="t"></tbody></table>
<h2>Streams</h2><ul id="s"></ul>
<script>
fetch('openapi.json').then(r=>r.json()).then(doc=>{
  document.getElementById('d').textContent=doc.info.description;
  const t=document.getElementById('t');
  for(const [path,ops] of Object.entries(doc.paths))for(const [m,op] of Object.entries(ops)){
    const tr=document.createElement('tr');
    for(const [v,c] of [[m,'m'],[path,'p'],[op['x-permission'],''],[op['x-rate-group']||'—',''],[op.summary,'']]){const td=document.createElement('td');td.textContent=v;td.className=c;tr.appendChild(td);}
    t.appendChild(tr);}
  const s=document.getElementById('s');
  for(const [k,v] of Object.entries(doc['x-streams']||{})){const li=document.createElement('li');li.textContent=k+': '+v;s.appendChild(li);}
});
</script></body></html>
`;
