import type { Config } from '../config/config.schema.js';
import type { AuditEntry, AuditLog } from '../security/audit.js';
import {
  createHostPolicy,
  createOriginPolicy,
  isHostAllowed,
  isLoopbackPeer,
  isOriginAllowed,
  normalizeOrigin,
  type HostPolicy,
  type OriginPolicy,
} from '../security/host-origin.js';
import type { RateGroup, RateLimiter } from '../security/rate-limit.js';
import { extractToken, fingerprintToken, rateKeyOf, type TokenBook } from '../security/tokens.js';
import type { Clock } from '../lib/clock.js';
import type { ApiError } from './errors.js';
import { errors } from './errors.js';
import type { Permission, Principal } from './route.js';

/** The parts of a request the security pipeline reads. Framework-free. */
export interface GuardRequest {
  method: string;
  path: string;
  headers: Record<string, string | string[] | undefined>;
  remoteAddress: string | undefined;
}

/** What a route needs checked. */
export interface GuardRoute {
  permission: Permission;
  rateGroup: RateGroup | null;
}

/** The outcome of a passed check. */
export interface GuardResult {
  principal: Principal;
  /** `X-RateLimit-*` headers for limited routes. */
  rateHeaders: Record<string, string>;
  loopbackTrusted: boolean;
}

export interface GuardOptions {
  config: Config;
  clock: Clock;
  tokens: TokenBook;
  rateLimiter: RateLimiter;
  audit: AuditLog;
  /** Decides whether another auth_failure line may be written for this IP. */
  allowFailureAudit: (ip: string) => boolean;
  /**
   * Load shedding's early refusal (`limits.overload`, ADR 0043): the error (503, Retry-After) every request that
   * is not a read gets first, before any other check and before its body is read, while the process is over a
   * limit; null when it is not. Reads (health, metrics, the ledger) always pass.
   */
  shed?: () => ApiError | null;
}

/** Methods that read: never shed by the guard. */
const READ_METHODS: ReadonlySet<string> = new Set(['GET', 'HEAD', 'OPTIONS']);

/** The single security pipeline every HTTP route and the WebSocket pass through. */
export interface Guard {
  /**
   * Origin/Host → token → principal → rate group → permission, in that order
   * (DECISIONS §4), after load shedding's early refusal of writes (503).
   * Throws ApiError (503/403/401/429); error headers included.
   */
  check(request: GuardRequest, route: GuardRoute): GuardResult;
  /** Resolves a token given by the WebSocket (`?token=` grants api rights at most). */
  principalForToken(token: string | null, via: 'header' | 'query' | 'frame'): Principal | null;
  /** CORS response headers when the Origin is allowed, else null. */
  corsHeaders(request: GuardRequest): Record<string, string> | null;
  /** True when the Origin (if any) passes the Origin rule. */
  originAllowed(request: GuardRequest): boolean;
  /** True when the Host passes the Host rule. */
  hostAllowed(request: GuardRequest): boolean;
  /** Loopback peer + loopback_trust + Host accepted: user identity checks are skipped. */
  loopbackTrusted(request: GuardRequest): boolean;
  readonly hostPolicy: HostPolicy;
  readonly originPolicy: OriginPolicy;
}

const ANONYMOUS: Principal = { role: 'anonymous', id: 'anonymous', fingerprint: null, scope: 'anonymous' };
const TOKEN_USED_INTERVAL_MS = 60_000;

function header(request: GuardRequest, name: string): string | undefined {
  const value = request.headers[name.toLowerCase()];
  return Array.isArray(value) ? value[0] : value;
}

/** Builds the guard from configuration. */
export function createGuard(options: GuardOptions): Guard {
  const { config, tokens, rateLimiter, audit, clock } = options;
  const auth = config.gateway.auth;
  const profile = config.security.profile;
  const hostPolicy = createHostPolicy(auth.allowed_hosts, config.gateway.host);
  const originPolicy = createOriginPolicy(auth.allowed_origins);
  const lastApiTokenAudit = new Map<string, number>();
  const lastSuccessAudit = new Map<string, number>();

  const auditEvent = (request: GuardRequest, entry: Omit<AuditEntry, 'ip' | 'mode' | 'path'>): void => {
    const ip = request.remoteAddress ?? '';
    if (entry.event === 'auth_failure' && !options.allowFailureAudit(ip)) return;
    audit.record({ ...entry, ip, mode: auth.mode, path: request.path });
  };

  const originAllowed = (request: GuardRequest): boolean =>
    isOriginAllowed(header(request, 'origin'), {
      policy: originPolicy,
      hostHeader: header(request, 'host'),
      hostPolicy,
    });
  const hostAllowed = (request: GuardRequest): boolean => isHostAllowed(header(request, 'host'), hostPolicy);

  const reject = (request: GuardRequest, error: ApiError, reason: string, user = ''): never => {
    auditEvent(request, { event: 'auth_failure', user, reason });
    throw error;
  };

  /**
   * `X-RateLimit-*` for a limited route's response when no token was resolved
   * (401, cross-site 403): nothing is counted — limits are per token — but the
   * headers still describe the group's window (DECISIONS §4: every response).
   */
  const uncountedRateHeaders = (group: RateGroup | null): Record<string, string> => {
    if (!group) return {};
    const windowMs = 60_000;
    const now = clock.now();
    const reset = Math.max(1, Math.ceil((Math.floor(now / windowMs) * windowMs + windowMs - now) / 1000));
    const limit = config.security.rate_limits[group];
    return {
      'x-ratelimit-limit': String(limit),
      'x-ratelimit-remaining': String(limit),
      'x-ratelimit-reset': String(reset),
    };
  };
  const rejectUncounted = (
    request: GuardRequest,
    route: GuardRoute,
    error: ApiError,
    reason: string,
    user = '',
  ): never => {
    Object.assign(error.headers, uncountedRateHeaders(route.rateGroup));
    return reject(request, error, reason, user);
  };

  const noteTokenUse = (request: GuardRequest, principal: Principal): void => {
    if (!principal.fingerprint) return;
    // auth_success: a token's successful authentication, at most once a minute per token (every time under extended).
    const nowMs = clock.now();
    const lastSuccess = lastSuccessAudit.get(principal.fingerprint);
    if (profile === 'extended' || lastSuccess === undefined || nowMs - lastSuccess >= TOKEN_USED_INTERVAL_MS) {
      if (lastSuccessAudit.size > 10_000) lastSuccessAudit.clear();
      lastSuccessAudit.set(principal.fingerprint, nowMs);
      auditEvent(request, { event: 'auth_success', user: principal.fingerprint, principal: principal.id });
    }
    if (principal.role === 'api' && profile !== 'extended') {
      const now = clock.now();
      const last = lastApiTokenAudit.get(principal.fingerprint);
      if (last !== undefined && now - last < TOKEN_USED_INTERVAL_MS) return;
      if (lastApiTokenAudit.size > 10_000) lastApiTokenAudit.clear();
      lastApiTokenAudit.set(principal.fingerprint, now);
    }
    auditEvent(request, { event: 'token_used', user: principal.fingerprint, principal: principal.id });
  };

  return {
    hostPolicy,
    originPolicy,
    originAllowed,
    hostAllowed,

    loopbackTrusted(request) {
      return auth.loopback_trust && isLoopbackPeer(request.remoteAddress) && hostAllowed(request);
    },

    check(request, route) {
      if (options.shed && !READ_METHODS.has(request.method)) {
        const refused = options.shed();
        if (refused) throw refused;
      }
      const loopbackTrusted = this.loopbackTrusted(request);
      if (profile === 'minimal') {
        // Minimal: no tokens, no Origin/Host checks, no rate limits (DECISIONS §4).
        const presented = extractToken(request.headers, auth.token_header);
        const principal = presented ? (tokens.identify(presented.token) ?? ANONYMOUS) : ANONYMOUS;
        return { principal: { ...principal, role: 'admin' }, rateHeaders: {}, loopbackTrusted };
      }

      // Origin on every route; Host on admin routes (standard) or every route (extended).
      if (!originAllowed(request)) rejectUncounted(request, route, errors.crossSite(), 'origin_rejected');
      const hostChecked = profile === 'extended' || route.permission === 'admin';
      if (hostChecked && !hostAllowed(request)) rejectUncounted(request, route, errors.crossSite(), 'host_rejected');

      if (route.permission === 'none') return { principal: ANONYMOUS, rateHeaders: {}, loopbackTrusted };

      const presented = extractToken(request.headers, auth.token_header);
      if (!presented) rejectUncounted(request, route, errors.unauthorized('missing token'), 'missing_token');
      const principal = tokens.identify(presented!.token);
      if (!principal) {
        rejectUncounted(
          request,
          route,
          errors.unauthorized('invalid token'),
          'invalid_token',
          fingerprintToken(presented!.token),
        );
      }
      // Every use of a valid token is noted, even when it is then refused (429, 403).
      noteTokenUse(request, principal!);

      let rateHeaders: Record<string, string> = {};
      if (route.rateGroup) {
        const outcome = rateLimiter.hit(rateKeyOf(principal!)!, route.rateGroup);
        rateHeaders = {
          'x-ratelimit-limit': String(outcome.limit),
          'x-ratelimit-remaining': String(outcome.remaining),
          'x-ratelimit-reset': String(outcome.resetSeconds),
        };
        if (!outcome.allowed) {
          const error = errors.rateLimited(outcome.resetSeconds, {
            group: route.rateGroup,
            limit: outcome.limit,
            retry_after_seconds: outcome.resetSeconds,
          });
          Object.assign(error.headers, rateHeaders);
          throw error;
        }
      }

      if (route.permission === 'admin' && principal!.role !== 'admin') {
        const error = errors.forbidden('admin token required');
        Object.assign(error.headers, rateHeaders);
        reject(request, error, 'admin_required', principal!.fingerprint);
      }
      return { principal: principal!, rateHeaders, loopbackTrusted };
    },

    principalForToken(token, via) {
      if (profile === 'minimal' && !token) return { ...ANONYMOUS, role: 'admin' };
      if (!token) return null;
      const principal = tokens.identify(token);
      if (!principal) return null;
      // `?token=` grants api rights at most, even for an admin token (DECISIONS §4).
      if (via === 'query' && principal.role === 'admin') return { ...principal, role: 'api' };
      return principal;
    },

    corsHeaders(request) {
      // Even in the minimal profile only listed or same origins get CORS: a page
      // elsewhere may still send simple requests, but it never reads the answers.
      const origin = header(request, 'origin');
      if (!origin || !normalizeOrigin(origin) || !originAllowed(request)) return null;
      return {
        'access-control-allow-origin': origin,
        vary: 'Origin',
        'access-control-expose-headers':
          'X-Request-Id, X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Reset, Retry-After, X-Gatehouse-Event-Id',
      };
    },
  };
}

/** Headers a browser may send on a cross-origin request (preflight answer). */
export function corsAllowHeaders(tokenHeader: string): string {
  return [
    tokenHeader,
    'Authorization',
    'Content-Type',
    'Idempotency-Key',
    'X-Idempotency-Key',
    'X-Request-Id',
    'Last-Event-ID',
    'Accept',
    'X-Session-Key',
  ].join(', ');
}
