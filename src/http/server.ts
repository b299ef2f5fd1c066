import Fastify, { LogController, type FastifyReply, type FastifyRequest } from 'fastify';
import type { Config } from '../config/config.schema.js';
import type { Logger } from '../lib/logger.js';
import { ApiError, errorEnvelope, errorResponse, errors } from './errors.js';
import { corsAllowHeaders, type Guard, type GuardRequest } from './guard.js';
import { parseJsonBody } from './json.js';
import { closeAfterEarlyAnswer, protocolServerOptions, refuseMissingHost } from './protocol.js';
import { LazyChildLogger } from './lazy-logger.js';
import { requestIdFor } from './request-id.js';
import { HANDLED, HttpResult, rateGroupOf, type ErrorBodyWriter, type RequestContext, type RouteDef } from './route.js';
import { validatePart } from './validation.js';

/** The alias every prefixed route is also served under (DECISIONS §2). */
export const API_ALIAS_PREFIX = '/api';

export interface HttpServerOptions {
  config: Config;
  routes: RouteDef[];
  guard: Guard;
  logger: Logger;
  /** True once shutdown began: every request is answered 503 (DECISIONS §12). */
  isDraining: () => boolean;
  /** Told of every response (metrics). */
  onResponse?: (method: string, route: string, status: number) => void;
  /** Keepalive interval of SSE answers in ms (default 15 s, DECISIONS §5); tests shorten it. */
  ssePingMs?: number;
}

/** One concrete registration: method + full URL of a route definition. */
export interface RegisteredRoute {
  method: RouteDef['method'];
  url: string;
  route: RouteDef;
}

/** Every concrete URL a set of route definitions is served at: prefix and alias. */
export function concreteRoutes(routes: RouteDef[], apiPrefix: string): RegisteredRoute[] {
  const out: RegisteredRoute[] = [];
  for (const route of routes) {
    const urls = route.absolutePaths ?? [...new Set([apiPrefix + route.path, API_ALIAS_PREFIX + route.path])];
    for (const url of urls) out.push({ method: route.method, url, route });
  }
  return out;
}

declare module 'fastify' {
  interface FastifyRequest {
    gatehouse: RequestContext | null;
  }
}

function guardRequest(request: FastifyRequest): GuardRequest {
  const url = request.url;
  const q = url.indexOf('?');
  return {
    method: request.method,
    path: q === -1 ? url : url.slice(0, q),
    headers: request.headers,
    remoteAddress: request.socket.remoteAddress,
  };
}

/**
 * The error body writer of the route a path that Fastify could not route (a malformed %-escape in a parameter, an
 * empty or dot-segment parameter, another method) was meant for: the route with its own error shape (OpenAI's,
 * JSON-RPC) whose template has the path's segments, a parameter standing for any one, so `/v1/responses/%ZZ`
 * still answers in OpenAI's shape.
 */
function errorBodyForPath(routes: readonly RouteDef[], path: string): ErrorBodyWriter | undefined {
  const segments = path.split('/');
  const fits = (template: string): boolean => {
    const parts = template.split('/');
    return parts.length === segments.length && parts.every((part, i) => part.startsWith(':') || part === segments[i]);
  };
  return routes.find((route) => route.errorBody && (route.absolutePaths ?? []).some(fits))?.errorBody;
}

/**
 * Builds the Fastify app (not listening). Every route passes one pipeline:
 * request id → draining gate → Origin/Host → token → rate group →
 * permission → schema validation → handler → one error handler.
 */
export function buildHttpServer(options: HttpServerOptions) {
  const { config, guard, logger, isDraining } = options;
  const httpLogger = logger.child({ source: 'http' });
  const app = Fastify({
    loggerInstance: httpLogger,
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: config.gateway.max_body_bytes,
    genReqId: (req) => requestIdFor(req.headers['x-request-id']),
    childLoggerFactory: (parent, bindings, childOptions) => new LazyChildLogger(parent, bindings, childOptions),
    trustProxy: false,
    return503OnClosing: true,
    // Shutdown must not wait for clients holding streams open (SSE follow, idle keep-alive):
    // by the time the server closes, draining has already answered them 503 or ended their turns.
    forceCloseConnections: true,
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 1000 },
    // Protocol errors (malformed request, oversized headers, no Host) in the envelope too (ADR 0013).
    ...protocolServerOptions(httpLogger),
    // Errors Fastify raises before routing (a malformed %-escape, an over-long path segment)
    // still get the envelope and the request id.
    frameworkErrors: (error, request, reply) => {
      const notFound = error.code === 'FST_ERR_MAX_PARAM_LENGTH';
      const apiError = notFound ? new ApiError('NOT_FOUND', 'route not found') : errors.badRequest('malformed URL');
      const raw = reply as unknown as FastifyReply;
      const body = errorBodyForPath(options.routes, guardRequest(request).path);
      const answer = body ? body(apiError, { requestId: request.id, conflict: false }) : null;
      void raw
        .code(apiError.status)
        .header('x-request-id', request.id)
        .send(answer ?? errorEnvelope(apiError, request.id));
    },
  });
  app.decorateRequest('gatehouse', null);

  // Strict JSON: an empty body is "no body"; anything unparsable, too deep, too wide or carrying a
  // prototype key is 400 before validation (ADR 0013).
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_req, text, done) => {
    const body = text as string;
    if (body.trim() === '') return done(null, undefined);
    try {
      done(null, parseJsonBody(body));
    } catch (err) {
      done(err as Error, undefined);
    }
  });

  // The hooks take Fastify's callback form: an async hook costs every request a promise and a microtask.
  // A hook that throws takes the same error path as `done(error)` (Fastify catches it).
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id);
    refuseMissingHost(request, reply);
    const cors = guard.corsHeaders(guardRequest(request));
    if (cors) reply.headers(cors);
    const drainExempt = (request.routeOptions.config as { drainExempt?: boolean } | undefined)?.drainExempt;
    if (isDraining() && !drainExempt) throw errors.unavailable('gateway is shutting down');
    done();
  });

  app.addHook('onSend', (request, reply, payload, done) => {
    closeAfterEarlyAnswer(request, reply);
    done(null, payload);
  });

  app.setErrorHandler((error, request, reply) => {
    const errorBody = (request.routeOptions.config as { errorBody?: ErrorBodyWriter } | undefined)?.errorBody;
    const response = errorResponse(error, request.id, httpLogger, errorBody ? { body: errorBody } : {});
    void reply.code(response.status).headers(response.headers).send(response.body);
  });

  app.setNotFoundHandler((request, reply) => {
    const error = new ApiError('NOT_FOUND', 'route not found');
    const body = errorBodyForPath(options.routes, guardRequest(request).path);
    void reply
      .code(404)
      .send(body ? body(error, { requestId: request.id, conflict: false }) : errorEnvelope(error, request.id));
  });

  app.addHook('onResponse', (request, reply, done) => {
    const status = reply.statusCode;
    options.onResponse?.(request.method, request.routeOptions.url ?? 'unmatched', status);
    const failed = status >= 500;
    if (failed || httpLogger.isLevelEnabled('debug')) {
      const line = {
        request_id: request.id,
        method: request.method,
        route: request.routeOptions.url,
        status,
        ms: Math.round(reply.elapsedTime),
      };
      if (failed) httpLogger.error(line, 'request failed');
      else httpLogger.debug(line, 'request');
    }
    done();
  });

  // CORS preflight: allowed origins get the answer, others the cross-site 403.
  app.options('/*', async (request, reply) => {
    const cors = guard.corsHeaders(guardRequest(request));
    if (!cors) throw errors.crossSite();
    return reply
      .code(204)
      .headers({
        'access-control-allow-methods': 'GET, POST, PUT, PATCH, DELETE, OPTIONS',
        'access-control-allow-headers': corsAllowHeaders(config.gateway.auth.token_header),
        'access-control-max-age': '600',
      })
      .send();
  });

  for (const { method, url, route } of concreteRoutes(options.routes, config.gateway.api_prefix)) {
    const rateGroup = config.security.profile === 'minimal' ? null : rateGroupOf(route);
    app.route({
      method,
      url,
      config: { drainExempt: route.drainExempt ?? false, ...(route.errorBody ? { errorBody: route.errorBody } : {}) },
      ...(route.bodyLimit ? { bodyLimit: route.bodyLimit } : {}),
      onRequest: (request, reply, done) => {
        const result = guard.check(guardRequest(request), { permission: route.permission, rateGroup });
        reply.headers(result.rateHeaders);
        request.gatehouse = makeContext(request, reply, result.principal, result.loopbackTrusted);
        if (options.ssePingMs !== undefined) request.gatehouse.ssePingMs = options.ssePingMs;
        request.gatehouse.sseMaxBufferedBytes = config.limits.streams.max_buffered_bytes;
        done();
      },
      handler: async (request, reply) => {
        const ctx = request.gatehouse!;
        const input = {
          params: route.params ? validatePart(route.params, request.params, 'params') : request.params,
          query: route.query ? validatePart(route.query, request.query, 'query') : request.query,
          body: route.body ? validatePart(route.body, request.body, 'body') : request.body,
        };
        const result = await route.handler(ctx, input);
        if (result === HANDLED) return reply;
        if (result instanceof HttpResult) return reply.code(result.status).headers(result.headers).send(result.body);
        return reply.send(result);
      },
    });
  }
  return app;
}

function makeContext(
  request: FastifyRequest,
  reply: FastifyReply,
  principal: RequestContext['principal'],
  loopbackTrusted: boolean,
): RequestContext {
  let controller: AbortController | undefined;
  return {
    requestId: request.id,
    principal,
    ip: request.socket.remoteAddress ?? '',
    loopbackTrusted,
    request,
    reply,
    get signal(): AbortSignal {
      if (!controller) {
        const c = new AbortController();
        controller = c;
        reply.raw.once('close', () => {
          if (!reply.raw.writableFinished) c.abort();
        });
      }
      return controller.signal;
    },
  };
}

/** The Fastify app type with our logger. */
export type HttpApp = ReturnType<typeof buildHttpServer>;
