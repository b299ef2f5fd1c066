import type { FastifyReply, FastifyRequest } from 'fastify';
import { errors } from '../http/errors.js';
import type { Guard } from '../http/guard.js';
import type { HttpApp } from '../http/server.js';
import type { Logger } from '../lib/logger.js';
import {
  createDashboardFiles,
  DASHBOARD_CSP,
  unbuiltPage,
  type DashboardFiles,
  type DashboardLookup,
} from './dashboard.service.js';

/** What the dashboard routes need: the guard (Origin/Host rules), the logger, and optionally the build's root. */
export interface DashboardRoutesDeps {
  guard: Guard;
  logger: Logger;
  /** The built dashboard (`index.html` + `assets/`); default `dist/web/` of this package. */
  root?: string;
}

/** Headers of every dashboard answer (DECISIONS §14): the strict CSP, no sniffing, no referrer. */
const SECURITY_HEADERS = {
  'content-security-policy': DASHBOARD_CSP,
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
} as const;

/** The raw path of a request (still percent-encoded), without its query. */
function rawPath(request: FastifyRequest): string {
  const url = request.raw.url ?? request.url;
  const q = url.indexOf('?');
  return q === -1 ? url : url.slice(0, q);
}

/**
 * The Origin/Host rules, unchanged (DECISIONS §4): a static route is `permission: none` and not rate
 * limited, so the guard checks only the Origin (and the Host under `extended`). Throws the 403 envelope.
 */
function guardStatic(guard: Guard, request: FastifyRequest): void {
  guard.check(
    {
      method: request.method,
      path: rawPath(request),
      headers: request.headers,
      remoteAddress: request.socket.remoteAddress,
    },
    { permission: 'none', rateGroup: null },
  );
}

/** Sends a lookup's file (streamed), the 503 page of an unbuilt dashboard, or throws the 404 envelope. */
function send(reply: FastifyReply, found: DashboardLookup): FastifyReply {
  if (found.kind === 'not_found') throw errors.notFound('dashboard file');
  if (found.kind === 'unbuilt') {
    return reply
      .code(503)
      .headers({ ...SECURITY_HEADERS, 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' })
      .send(unbuiltPage());
  }
  const { file } = found;
  reply.code(200).headers({
    ...SECURITY_HEADERS,
    'content-type': file.contentType,
    'content-length': String(file.size),
    'cache-control': file.cacheControl,
  });
  // HEAD: Fastify's HEAD route drains the stream and keeps the declared length.
  return reply.send(file.stream());
}

/**
 * Serves the dashboard (ADR 0021): `GET /` answers `index.html` (`no-cache`), `GET /assets/*` the built files
 * (`immutable` when content-hashed), without a token but behind the Origin/Host rules, under the strict CSP.
 * Registered on the app directly rather than as `RouteDef`s: they are not API operations, so they stay out
 * of the OpenAPI document, the rate limits and the API's request metrics. Unknown paths keep the JSON 404.
 */
export function registerDashboardRoutes(app: HttpApp, deps: DashboardRoutesDeps): DashboardFiles {
  const files = createDashboardFiles({ logger: deps.logger, ...(deps.root ? { root: deps.root } : {}) });
  const onRequest = async (request: FastifyRequest): Promise<void> => guardStatic(deps.guard, request);

  app.get('/', { onRequest }, async (_request, reply) => send(reply, await files.index()));
  app.get('/assets/*', { onRequest }, async (request, reply) => {
    const rest = rawPath(request).slice('/assets/'.length);
    return send(reply, await files.asset(rest));
  });
  return files;
}
