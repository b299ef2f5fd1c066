import type { FastifyReply, FastifyRequest } from 'fastify';
import type { z } from 'zod';
import type { RateGroup } from '../security/rate-limit.js';

/** Who may call a route (spec: Permission column; DECISIONS §4). */
export type Permission = 'none' | 'api' | 'admin';

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/** The caller as established by the security pipeline. */
export interface Principal {
  /** `admin` ⊇ `api`. `anonymous`: no token (minimal profile, or a `none` route). */
  role: 'admin' | 'api' | 'anonymous';
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
  handler: (ctx: RequestContext, input: RouteInput<z.output<B>, z.output<Q>, z.output<P>>) => unknown;
}

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
