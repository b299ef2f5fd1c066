import { isIPv4, isIPv6 } from 'node:net';

/**
 * Host and Origin rules (spec "Authentication" → "Origin and host checks",
 * "Loopback exemption"; DECISIONS §4). Framework-free: the HTTP layer passes
 * header values and the socket peer address in, and gets yes/no answers.
 *
 * Nothing here reads `X-Forwarded-For` or any other proxy header: loopback
 * trust is decided by the socket peer only (DECISIONS §4).
 */

/** Host values allowed when `allowed_hosts` is unset and the bind is loopback (spec Host table, row 2). */
export const DEFAULT_LOOPBACK_HOSTS: ReadonlySet<string> = new Set(['localhost', '127.0.0.1', '[::1]']);

/** Characters a host name or IPv4 literal may contain once lower-cased. */
const NAME_CHARS = /^[a-z0-9._-]+$/;
/** Characters an IPv6 literal (with an optional zone id) may contain once lower-cased. */
const IPV6_CHARS = /^[0-9a-z:.%_-]+$/;
const DIGITS = /^\d*$/;

/** A Host value split into its normalized host and its port (null when absent). */
interface HostAndPort {
  host: string;
  port: string | null;
}

/** Canonical text of an IPv6 literal without brackets (e.g. `0:0::1` → `::1`); null if not IPv6. */
function canonicalIPv6(literal: string): string | null {
  const zone = literal.indexOf('%');
  const address = zone === -1 ? literal : literal.slice(0, zone);
  if (!isIPv6(address)) return null;
  if (zone !== -1) return literal; // URL cannot canonicalize zone ids; keep the lower-cased literal
  try {
    const hostname = new URL(`http://[${address}]/`).hostname;
    return hostname.slice(1, -1);
  } catch {
    return address;
  }
}

/** Splits and normalizes `host[:port]`, `[v6][:port]` or a bare IPv6 literal; null when unusable. */
function splitHost(value: string): HostAndPort | null {
  const text = value.trim().toLowerCase();
  if (text === '') return null;

  if (text.startsWith('[')) {
    const close = text.indexOf(']');
    if (close === -1) return null;
    const inner = text.slice(1, close);
    const rest = text.slice(close + 1);
    let port: string | null = null;
    if (rest !== '') {
      if (!rest.startsWith(':') || !DIGITS.test(rest.slice(1))) return null;
      port = rest.length > 1 ? rest.slice(1) : null;
    }
    if (!IPV6_CHARS.test(inner)) return null;
    const canonical = canonicalIPv6(inner);
    if (canonical === null) return null;
    return { host: `[${canonical}]`, port };
  }

  const colons = text.split(':').length - 1;
  if (colons > 1) {
    // Spec: "IPv6 written in bracket form" — a bare literal such as `::1` or `2001:db8::1`.
    if (!IPV6_CHARS.test(text)) return null;
    const canonical = canonicalIPv6(text);
    return canonical === null ? null : { host: `[${canonical}]`, port: null };
  }

  let host = text;
  let port: string | null = null;
  if (colons === 1) {
    const at = text.indexOf(':');
    host = text.slice(0, at);
    const rawPort = text.slice(at + 1);
    if (!DIGITS.test(rawPort)) return null;
    port = rawPort === '' ? null : rawPort;
  }
  if (host === '' || !NAME_CHARS.test(host)) return null;
  return { host, port };
}

/**
 * Normalizes a Host header value or an `allowed_hosts` entry (spec: "lowercased,
 * port stripped, IPv6 written in bracket form"). `Codex.Example.com:58123` →
 * `codex.example.com`, `::1` and `[::1]:58123` → `[::1]`. Empty, whitespace-only
 * or malformed values → null.
 */
export function normalizeHost(value: string): string | null {
  return splitHost(value)?.host ?? null;
}

/**
 * True for the wildcard entries the spec discards from `allowed_hosts`:
 * `0.0.0.0`, `::` (or `[::]`) and the empty string. Also true for entries that
 * cannot be normalized at all, since they can never match.
 */
export function isWildcardHostEntry(entry: string): boolean {
  const host = normalizeHost(entry);
  return host === null || host === '0.0.0.0' || host === '[::]';
}

/** True when `host` (already normalized) is an IPv4 literal in 127.0.0.0/8. */
function isLoopbackIPv4(host: string): boolean {
  return isIPv4(host) && host.startsWith('127.');
}

/** True when a bracketed, canonical IPv6 host is ::1 or an IPv4-mapped 127.0.0.0/8 address. */
function isLoopbackIPv6(bracketed: string): boolean {
  if (bracketed === '[::1]') return true;
  // ::ffff:127.a.b.c canonicalizes to ::ffff:7fXX:XXXX
  return /^\[::ffff:7f[0-9a-f]{2}:[0-9a-f]{1,4}\]$/.test(bracketed);
}

/**
 * Whether the gateway's bind address is loopback (spec: "Loopback binding is
 * decided by address: all of 127.0.0.0/8, ::1, [::1] and localhost count. An
 * empty bind host or :: counts as a wildcard, i.e. non-loopback."). Any other
 * name, and `0.0.0.0`, is non-loopback.
 */
export function isLoopbackHost(bindHost: string): boolean {
  const host = normalizeHost(bindHost);
  if (host === null) return false;
  if (host === 'localhost') return true;
  if (host.startsWith('[')) return isLoopbackIPv6(host);
  return isLoopbackIPv4(host);
}

/**
 * Whether a socket peer address (`socket.remoteAddress`) is loopback:
 * 127.0.0.0/8, ::1, or IPv4-mapped `::ffff:127.x.x.x` (spec "Loopback
 * exemption"). Never pass a forwarded-for header here.
 */
export function isLoopbackPeer(remoteAddress: string | undefined): boolean {
  if (remoteAddress === undefined) return false;
  const address = remoteAddress.trim().toLowerCase();
  if (isIPv4(address)) return isLoopbackIPv4(address);
  const bare = address.startsWith('[') && address.endsWith(']') ? address.slice(1, -1) : address;
  if (!isIPv6(bare)) return false;
  const canonical = canonicalIPv6(bare);
  return canonical !== null && isLoopbackIPv6(`[${canonical}]`);
}

/**
 * The Host values a gateway accepts, one per row of the spec's Host table:
 * `list` (usable `allowed_hosts` entries), `loopback` (`localhost`,
 * `127.0.0.1`, `[::1]`) or `none` (every Host rejected).
 */
export type HostPolicy = { kind: 'list'; hosts: ReadonlySet<string> } | { kind: 'loopback' } | { kind: 'none' };

/**
 * Builds the Host policy from `gateway.auth.allowed_hosts` and `gateway.host`
 * per the spec table: usable entries → only those; none usable and a loopback
 * bind → the loopback defaults; none usable and a non-loopback bind → none.
 * A list holding only wildcard entries counts as not configured.
 */
export function createHostPolicy(allowedHosts: readonly string[], bindHost: string): HostPolicy {
  const hosts = new Set<string>();
  for (const entry of allowedHosts) {
    if (isWildcardHostEntry(entry)) continue;
    const host = normalizeHost(entry);
    if (host !== null) hosts.add(host);
  }
  if (hosts.size > 0) return { kind: 'list', hosts };
  return isLoopbackHost(bindHost) ? { kind: 'loopback' } : { kind: 'none' };
}

/**
 * The start-up warning the spec asks for when `allowed_hosts` is non-empty but
 * holds only discarded (wildcard or unusable) entries; null otherwise.
 */
export function allowedHostsWarning(allowedHosts: readonly string[]): string | null {
  if (allowedHosts.length === 0) return null;
  if (allowedHosts.some((entry) => !isWildcardHostEntry(entry))) return null;
  return (
    'gateway.auth.allowed_hosts contains only wildcard or unusable entries (0.0.0.0, ::, empty); ' +
    'it is treated as not configured'
  );
}

/**
 * Whether a request's Host header passes the policy. An empty or missing Host
 * is untrusted (spec: "An empty Host header is untrusted").
 */
export function isHostAllowed(hostHeader: string | undefined, policy: HostPolicy): boolean {
  if (hostHeader === undefined) return false;
  const host = normalizeHost(hostHeader);
  if (host === null) return false;
  switch (policy.kind) {
    case 'list':
      return policy.hosts.has(host);
    case 'loopback':
      return DEFAULT_LOOPBACK_HOSTS.has(host);
    case 'none':
      return false;
  }
}

/** Default port of a normalized scheme (`http:` / `https:`). */
function defaultPort(protocol: string): string {
  return protocol === 'https:' ? '443' : '80';
}

/** Parses an origin into scheme, host and port; null when it is not an http(s) origin. */
function parseOrigin(origin: string): { protocol: string; host: string; port: string | null } | null {
  const text = origin.trim();
  if (!/^https?:\/\//i.test(text)) return null; // rejects `null`, other schemes and `http:host`
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return null;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return null;
  if (url.username !== '' || url.password !== '') return null;
  if (url.pathname !== '/' || url.search !== '' || url.hash !== '') return null;
  if (text.endsWith('?') || text.endsWith('#')) return null;
  if (url.hostname === '') return null;
  return { protocol: url.protocol, host: url.hostname, port: url.port === '' ? null : url.port };
}

/**
 * Normalizes an Origin (header value or `allowed_origins` entry) to
 * `scheme://host[:port]`: lower-cased, the default port (80 for http, 443 for
 * https) dropped, IPv6 bracketed. A single trailing `/` is tolerated in
 * configuration. The literal `null`, invalid values and non-http(s) schemes → null.
 */
export function normalizeOrigin(origin: string): string | null {
  const parsed = parseOrigin(origin);
  if (parsed === null) return null;
  return `${parsed.protocol}//${parsed.host}${parsed.port === null ? '' : `:${parsed.port}`}`;
}

/** The allowed browser origins, normalized; `dropped` lists entries that were ignored. */
export interface OriginPolicy {
  origins: ReadonlySet<string>;
  /** Non-empty entries that were discarded (`*`, invalid, non-http(s)), for a start-up warning. */
  dropped: readonly string[];
}

/** Builds the Origin policy from `gateway.auth.allowed_origins`; `*` and empty entries are dropped. */
export function createOriginPolicy(allowedOrigins: readonly string[]): OriginPolicy {
  const origins = new Set<string>();
  const dropped: string[] = [];
  for (const entry of allowedOrigins) {
    if (entry.trim() === '') continue;
    const normalized = entry.trim() === '*' ? null : normalizeOrigin(entry);
    if (normalized === null) dropped.push(entry);
    else origins.add(normalized);
  }
  return { origins, dropped };
}

/** What `isOriginAllowed` needs besides the Origin itself. */
export interface OriginCheckContext {
  policy: OriginPolicy;
  /** The request's Host header. */
  hostHeader: string | undefined;
  /** The gateway's Host policy; the own-origin rule needs a Host that passes it. */
  hostPolicy: HostPolicy;
}

/**
 * Whether a request's Origin is allowed (spec "Origin and host checks";
 * DECISIONS §4):
 * - no Origin header → allowed ("Local clients without an Origin header are unaffected");
 * - an Origin in `allowed_origins` → allowed;
 * - the gateway's own origin — scheme http (or https when `allowed_hosts`
 *   lists the public hosts of a TLS proxy), its host and port equal the
 *   request's Host (default ports dropped) and that Host passes the Host
 *   policy → allowed;
 * - anything else, including the literal `null` and an empty value → rejected.
 */
export function isOriginAllowed(origin: string | undefined, ctx: OriginCheckContext): boolean {
  if (origin === undefined) return true;
  const parsed = parseOrigin(origin);
  if (parsed === null) return false;
  const normalized = `${parsed.protocol}//${parsed.host}${parsed.port === null ? '' : `:${parsed.port}`}`;
  if (ctx.policy.origins.has(normalized)) return true;

  // DECISIONS §4: scheme + Host. The gateway itself serves plain HTTP, so its own origin is http;
  // https counts only behind a TLS proxy, i.e. when `allowed_hosts` names the public hosts.
  if (ctx.hostHeader === undefined) return false;
  if (parsed.protocol !== 'http:' && !(parsed.protocol === 'https:' && ctx.hostPolicy.kind === 'list')) return false;
  const host = splitHost(ctx.hostHeader);
  if (host === null) return false;
  const fallback = defaultPort(parsed.protocol);
  const originPort = Number(parsed.port ?? fallback);
  const hostPort = Number(host.port ?? fallback);
  if (host.host !== parsed.host || originPort !== hostPort) return false;
  return isHostAllowed(ctx.hostHeader, ctx.hostPolicy);
}
