import type { FastifyReply, FastifyRequest } from 'fastify';
import type { z } from 'zod';
import type { RateGroup } from '../lib/rate-groups.js';
import type { ApiError } from './errors.js';

/** Who may call a route (spec: Permission column; DECISIONS §4). */
export type Permission = 'none' | 'api' | 'admin';

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/** The caller as established by the security pipeline. */
export interface Principal {
  /** `admin` ⊇ `api`. `anonymous`: no token (minimal profile, or a `none` route). */
  role: 'admin' | 'api' | 'anonymous';
  /**
   * Who owns what this request creates (DECISIONS §18): a configured principal's id, `default` (api_tokens,
   * admin_tokens), `admin` (the generated token), `anonymous` (no token) or `channel:<name>` (a platform channel).
   */
  id: string;
  /** `tok_` + 8 hex of the token's SHA-256; null without a token. */
  fingerprint: string | null;
  /** `anonymous` or the token's full SHA-256 (idempotency scope, DECISIONS §6). */
  scope: string;
}

/** Everything a handler may know about the request, framework-free where it can be. */
export interface RequestContext {
  requestId: string;
  principal: Principal;
  /** Socket peer address (never X-Forwarded-For). */
  ip: string;
  /** Peer is loopback, loopback_trust is on and the Host passes the Host rules (DECISIONS §4). */
  loopbackTrusted: boolean;
  /** Fires when the client goes away. */
  signal: AbortSignal;
  /** Keepalive interval of an SSE answer in ms (`openSse`; default 15 s); shorter in tests. */
  ssePingMs?: number;
  /** Unsent bytes an SSE answer may hold before it is cut (`openSse`; `limits.streams.max_buffered_bytes`). */
  sseMaxBufferedBytes?: number;
  /** Escape hatch for streaming routes (SSE); ordinary handlers return a value instead. */
  request: FastifyRequest;
  reply: FastifyReply;
}

/** A handler result with a status other than 200, or extra headers. */
export class HttpResult {
  constructor(
    readonly status: number,
    readonly body: unknown,
    readonly headers: Record<string, string> = {},
  ) {}
}

/** 201 Created with the created object (DECISIONS §2). */
export function created(body: unknown): HttpResult {
  return new HttpResult(201, body);
}

/** Marker result: the handler wrote the response itself (SSE, hijacked reply). */
export const HANDLED = Symbol('handled');

/** One declared success response of a route. */
export interface RouteResponse {
  status: number;
  description: string;
  /** The body's shape (the presenter's output); absent for an empty body (204). */
  schema?: z.ZodType;
  /** Default `application/json`; `text/event-stream` for an SSE answer. */
  contentType?: string;
  /** Response headers it carries (names as sent, e.g. `X-Gatehouse-Event-Id`, `Retry-After`). */
  headers?: string[];
}

export interface RouteInput<B, Q, P> {
  body: B;
  query: Q;
  params: P;
}

/**
 * One route of the API. Every route declares its permission and rate group,
 * so the pipeline cannot forget a guard; the security-matrix test walks them.
 */
export interface RouteDef<
  B extends z.ZodType = z.ZodType,
  Q extends z.ZodType = z.ZodType,
  P extends z.ZodType = z.ZodType,
> {
  method: HttpMethod;
  /** Path relative to the API prefix, Fastify syntax (`/sessions/:session_id`). */
  path: string;
  /** Absolute paths instead of prefix + alias (e.g. `/metrics`). */
  absolutePaths?: string[];
  permission: Permission;
  /** Rate-limit group; `null` means not limited (health). Defaults: GET → read, others → write. */
  rateGroup?: RateGroup | null;
  /** Served while draining (health reports itself instead of the generic 503). */
  drainExempt?: boolean;
  summary: string;
  tags?: string[];
  body?: B;
  query?: Q;
  params?: P;
  /** Body size cap in bytes for this route; default `gateway.max_body_bytes`. */
  bodyLimit?: number;
  /**
   * The success responses this route gives (OpenAPI; the response-validation
   * test checks every real response against the one declared for its status).
   */
  responses?: RouteResponse[];
  /**
   * Error statuses beyond those derived from the route's declaration (400,
   * 401, 403, 404, 413, 429, 500, 503 are derived): e.g. 409, 502, 504.
   */
  errors?: number[];
  /**
   * Writes this route's error bodies in another wire shape (the
   * OpenAI-compatible paths, ADR 0015): every error — the guard's, validation,
   * the handler's, the idempotency conflict — keeps its status and headers.
   */
  errorBody?: ErrorBodyWriter;
  /** The shape `errorBody` writes, for the OpenAPI document (ADR 0016); without it, "a JSON object". */
  errorSchema?: z.ZodType;
  handler: (ctx: RequestContext, input: RouteInput<z.output<B>, z.output<Q>, z.output<P>>) => unknown;
}

/** A route's own error body for an `ApiError` (`conflict`: the idempotency conflict, spec rule 4). */
export type ErrorBodyWriter = (error: ApiError, info: { requestId: string; conflict: boolean }) => unknown;

/** Defines a route with its schemas' types flowing into the handler. */
export function defineRoute<
  B extends z.ZodType = z.ZodUnknown,
  Q extends z.ZodType = z.ZodUnknown,
  P extends z.ZodType = z.ZodUnknown,
>(route: RouteDef<B, Q, P>): RouteDef {
  return route;
}

/** The rate group a route is counted in. */
export function rateGroupOf(route: RouteDef): RateGroup | null {
  if (route.rateGroup !== undefined) return route.rateGroup;
  return route.method === 'GET' ? 'read' : 'write';
}
