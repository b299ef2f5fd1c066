import { createHash, timingSafeEqual } from 'node:crypto';

/**
 * API and admin tokens (spec "Authentication" → "Tokens"; DECISIONS §4).
 * A raw token is only ever held in memory for comparison: logs and the audit
 * log see its fingerprint, idempotency scopes see its full hash.
 */

/** The rights a token grants. `admin` includes every `api` right. */
export type TokenRole = 'admin' | 'api';

function sha256(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest();
}

/**
 * The only form a token may take in logs and the audit log: `tok_` + the first
 * 8 hex digits of its SHA-256 (DECISIONS §4, Audit).
 */
export function fingerprintToken(token: string): string {
  return fingerprintOfHex(sha256(token).toString('hex'));
}

function fingerprintOfHex(hex: string): string {
  return `tok_${hex.slice(0, 8)}`;
}

/**
 * The token principal of an idempotency scope (DECISIONS §6): `anonymous`
 * without a token (null or empty), else the full SHA-256 hex of the token.
 */
export function principalScope(token: string | null): string {
  if (token === null || token === '') return 'anonymous';
  return sha256(token).toString('hex');
}

/** Resolves presented tokens to their rights. */
export interface TokenBook {
  /** The role of a presented token, or null when it matches no configured token. Constant-time. */
  resolve(token: string): TokenRole | null;
  /** As `resolve`, with the token's principal, fingerprint and idempotency scope, all from one hash of it. */
  identify(token: string): TokenIdentity | null;
  /** True when at least one token (api, admin, extra admin or a principal's) is configured. */
  hasAnyToken(): boolean;
}

/** A presented token that matched: its role, principal, `fingerprintToken` and idempotency scope. */
export interface TokenIdentity {
  role: TokenRole;
  /** The principal it belongs to (DECISIONS §18): `default`, `admin` (the generated token) or a configured id. */
  id: string;
  fingerprint: string;
  /**
   * The idempotency scope (DECISIONS §6, §18): a configured principal's keys are its own across all its
   * tokens (`principal:<id>`); a token of `default` or `admin` keeps the token's own hash, as before principals.
   */
  scope: string;
}

/** A principal of `gateway.auth.principals`, as the book needs it. */
export interface PrincipalTokens {
  id: string;
  role: TokenRole;
  tokens: readonly string[];
  /** SHA-256 hex digests of further tokens. */
  tokenSha256: readonly string[];
}

/** Options of `createTokenBook`: the configured lists and any generated admin token. */
export interface TokenBookOptions {
  apiTokens: readonly string[];
  adminTokens: readonly string[];
  /** Always admin, e.g. the first-start token from `data_dir/gateway_auth/admin_token`; principal `admin`. */
  extraAdminTokens?: readonly string[];
  /** The configured principals (their tokens are neither api_tokens nor admin_tokens: validation refuses a duplicate). */
  principals?: readonly PrincipalTokens[];
}

interface BookEntry {
  digest: Buffer;
  admin: boolean;
  api: boolean;
  /** Index into the book's principal list (0: `default`). */
  principal: number;
}

/**
 * Builds the token book. Spec: "When admin_tokens is not configured, it falls
 * back to api_tokens" — so with `adminTokens` empty every api token is admin.
 * `extraAdminTokens` are always admin. Tokens of `apiTokens`/`adminTokens`
 * belong to the principal `default`, extra admin tokens to `admin`.
 *
 * Comparison is constant-time (DECISIONS §4): the presented token and every
 * configured token are hashed with SHA-256 and the digests compared with
 * `timingSafeEqual`, visiting every entry without an early exit, so neither
 * the length nor the position of a match leaks through timing.
 */
export function createTokenBook(options: TokenBookOptions): TokenBook {
  const apiTokens = options.apiTokens.filter((t) => t !== '');
  const adminTokens = options.adminTokens.filter((t) => t !== '');
  const extra = (options.extraAdminTokens ?? []).filter((t) => t !== '');
  const adminSource = adminTokens.length > 0 ? adminTokens : apiTokens;
  const principalIds = ['default', 'admin'];
  const scoped: boolean[] = [false, false];

  const entries: BookEntry[] = [];
  for (const token of apiTokens) entries.push({ digest: sha256(token), admin: false, api: true, principal: 0 });
  for (const token of adminSource) entries.push({ digest: sha256(token), admin: true, api: true, principal: 0 });
  for (const token of extra) entries.push({ digest: sha256(token), admin: true, api: true, principal: 1 });
  for (const principal of options.principals ?? []) {
    const index = principalIds.push(principal.id) - 1;
    scoped.push(true);
    const admin = principal.role === 'admin';
    for (const token of principal.tokens.filter((t) => t !== '')) {
      entries.push({ digest: sha256(token), admin, api: true, principal: index });
    }
    for (const hex of principal.tokenSha256) {
      entries.push({ digest: Buffer.from(hex, 'hex'), admin, api: true, principal: index });
    }
  }

  const match = (presented: Buffer): { role: TokenRole; principal: number } | null => {
    let admin = 0;
    let api = 0;
    let principal = 0;
    for (const entry of entries) {
      // Every entry is compared; bitwise accumulation keeps each iteration the same shape.
      const hit = Number(timingSafeEqual(presented, entry.digest));
      admin |= hit & Number(entry.admin);
      api |= hit & Number(entry.api);
      principal ^= (principal ^ entry.principal) & -hit;
    }
    if (admin === 1) return { role: 'admin', principal };
    return api === 1 ? { role: 'api', principal } : null;
  };

  return {
    resolve(token: string): TokenRole | null {
      return token === '' ? null : (match(sha256(token))?.role ?? null);
    },
    identify(token: string): TokenIdentity | null {
      if (token === '') return null;
      const digest = sha256(token);
      const found = match(digest);
      if (!found) return null;
      const hex = digest.toString('hex');
      const principal = principalIds[found.principal]!;
      return {
        role: found.role,
        id: principal,
        fingerprint: fingerprintOfHex(hex),
        scope: scoped[found.principal] ? `principal:${principal}` : hex,
      };
    },
    hasAnyToken(): boolean {
      return entries.length > 0;
    },
  };
}

/**
 * What a principal's requests are counted under (DECISIONS §18): a configured
 * principal's all together (`principal:<id>`, its scope), any other token's
 * by its fingerprint, as before principals.
 */
export function rateKeyOf(principal: { scope: string; fingerprint: string | null }): string | null {
  return principal.scope.startsWith('principal:') ? principal.scope : principal.fingerprint;
}

/** A token found in request headers, and where it was found. */
export interface ExtractedToken {
  token: string;
  via: 'header' | 'bearer';
}

type HeaderBag = Record<string, string | string[] | undefined>;

/** The single value of a header (case-insensitive name); null when absent, empty or ambiguous. */
function headerValue(headers: HeaderBag, name: string): string | null {
  const wanted = name.toLowerCase();
  let found: string | null = null;
  let ambiguous = false;
  const take = (raw: string): void => {
    const value = raw.trim();
    if (value === '') return;
    if (found !== null && found !== value) ambiguous = true; // two different values: refuse to guess
    found = value;
  };
  for (const key of Object.keys(headers)) {
    if (key.length !== wanted.length || key.toLowerCase() !== wanted) continue;
    const raw = headers[key];
    if (typeof raw === 'string') take(raw);
    else if (raw !== undefined) for (const value of raw) take(value);
  }
  return ambiguous ? null : found;
}

const BEARER = /^bearer[ \t]+(\S+)$/i;

/**
 * Finds the presented token (DECISIONS §4: both are always accepted): the
 * configured header (`token_header`, default `X-API-Token`, matched
 * case-insensitively) carrying the raw token, else `Authorization: Bearer
 * <token>` (scheme case-insensitive). Empty values are no token. A query string
 * is never read here (spec: admin endpoints take the token only from a header).
 */
export function extractToken(headers: HeaderBag, tokenHeader: string): ExtractedToken | null {
  if (tokenHeader.toLowerCase() !== 'authorization') {
    const raw = headerValue(headers, tokenHeader);
    if (raw !== null) return { token: raw, via: 'header' };
  }
  const authorization = headerValue(headers, 'authorization');
  if (authorization !== null) {
    const match = BEARER.exec(authorization);
    if (match?.[1] !== undefined) return { token: match[1], via: 'bearer' };
  }
  return null;
}
