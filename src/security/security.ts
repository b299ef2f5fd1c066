import type { RateGroup } from '../lib/rate-groups.js';
import type { Config } from '../config/config.schema.js';
import type { Clock } from '../lib/clock.js';
import type { Logger } from '../lib/logger.js';
import { ensureAdminToken, type AdminTokenResult } from './admin-token.js';
import { createAuditLog, createFailureThrottle, type AuditLog } from './audit.js';
import { isLoopbackPeer } from './host-origin.js';
import type { SharedWindows } from './cluster-counts.js';
import { createRateLimiter, type RateLimiter, type RateLimiterOptions } from './rate-limit.js';
import { createTokenBook, type TokenBook } from './tokens.js';

/**
 * Who may pass, as the running gateway decides it (DECISIONS §4): the parts
 * http's guard is assembled from (`createGuard`, in the composition root).
 */
export interface Security {
  audit: AuditLog;
  tokens: TokenBook;
  rateLimiter: RateLimiter;
  /** Whether an auth failure from this peer is audited (remote failure floods throttled, local callers never). */
  allowFailureAudit: (ip: string) => boolean;
  /** The live rate limits (the settings listener changes them in place). */
  rateLimits: RateLimiterOptions['limits'];
}

/** The first-start admin token (DECISIONS §4): generated and saved when no token is configured. */
export function prepareAdminToken(config: Config): AdminTokenResult {
  const auth = config.gateway.auth;
  return ensureAdminToken({
    dataDir: config.data_dir,
    profile: config.security.profile,
    configuredTokens: auth.api_tokens.length + auth.admin_tokens.length,
    bindHost: config.gateway.host,
  });
}

/**
 * Builds the security parts: the token book (configured tokens plus the
 * first-start admin token), per-token rate limits, the fsync'd audit log and
 * its failure throttle (remote failure floods throttled, local callers
 * never). http's guard is assembled from them.
 */
export function createSecurity(options: {
  config: Config;
  clock: Clock;
  logger: Logger;
  adminToken: string | null;
  scrub: (text: string) => string;
  /** The other gateway processes' rate-limit counts (ADR 0028); absent where this process counts alone. */
  sharedCounts?: SharedWindows;
}): Security {
  const { config, clock, logger } = options;
  const auth = config.gateway.auth;
  const audit = createAuditLog({
    dataDir: config.data_dir,
    clock,
    scrub: options.scrub,
    onError: (err) => logger.error({ source: 'audit', err: err.message }, 'audit log write failed'),
  });
  const tokens = createTokenBook({
    apiTokens: auth.api_tokens,
    adminTokens: auth.admin_tokens,
    extraAdminTokens: options.adminToken ? [options.adminToken] : [],
    principals: auth.principals.map((p) => ({ id: p.id, role: p.role, tokens: p.tokens, tokenSha256: p.token_sha256 })),
  });
  const rateLimits = { ...config.security.rate_limits };
  // A principal's own limits count all its tokens together (DECISIONS §18); gateway.auth is never live.
  const own = new Map<string, Record<RateGroup, number>>();
  for (const p of auth.principals) if (p.rate_limits) own.set(`principal:${p.id}`, { ...p.rate_limits });
  const rateLimiter = createRateLimiter({
    limits: rateLimits,
    limitsFor: (key) => own.get(key),
    clock,
    ...(options.sharedCounts ? { shared: options.sharedCounts } : {}),
  });
  const failureThrottle = createFailureThrottle({ clock, perMinute: 120, maxKeys: 10_000 });
  const allowFailureAudit = (ip: string): boolean => isLoopbackPeer(ip) || failureThrottle.allow(ip);
  return { audit, tokens, rateLimiter, rateLimits, allowFailureAudit };
}
