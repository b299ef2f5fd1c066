import { lookup as dnsLookup } from 'node:dns/promises';
import { isIP, type LookupFunction } from 'node:net';
import ipaddr from 'ipaddr.js';
import type * as Undici from 'undici';
import type { Agent, buildConnector, RequestInit as UndiciRequestInit } from 'undici';

/**
 * The outbound-address guard: every call the gateway makes to a URL it was
 * given (an MCP server over HTTP, an event subscriber) goes through it, so a
 * configured or supplied URL cannot make the gateway reach this machine, the
 * LAN or a cloud metadata service (SSRF).
 *
 * - `classifyAddress` says whether one IP address is public, and if not which
 *   range it is in.
 * - `checkTarget` checks a URL: its scheme, and every address its host has.
 * - `guardedFetch` is a `fetch` whose connections go only to checked
 *   addresses: the check runs inside the connect of every new connection and
 *   the socket is handed the address that was checked, so a name that
 *   resolves to a public address for a check and to a private one a moment
 *   later (DNS rebinding) gains nothing. Redirects are never followed.
 *
 * `allowPrivate` lifts the ranges a server of this machine or the LAN lives
 * in (loopback, private, link-local, carrier-grade NAT, reserved and test
 * ranges). It never lifts the cloud metadata addresses, the unspecified
 * address, multicast or broadcast: no MCP server or subscriber lives there,
 * and the metadata service hands out the machine's credentials.
 */

/** The verdict on one address: public, or not and the range it is in. */
export type AddressVerdict = { public: true } | { public: false; reason: string };

/** How long a connection (name resolution, TCP and TLS) may take before it fails. */
export const CONNECT_TIMEOUT_MS = 10_000;

/** A refused outbound target: its host, the address that was refused (null when no address was involved), why. */
export class BlockedTargetError extends Error {
  readonly host: string;
  readonly address: string | null;
  readonly reason: string;

  constructor(host: string, address: string | null, reason: string) {
    const where = address !== null && address !== host ? `${host} (${address})` : host;
    super(`outbound call to ${where === '' ? 'an unnamed host' : where} refused: ${reason}`);
    this.name = 'BlockedTargetError';
    this.host = host;
    this.address = address;
    this.reason = reason;
  }
}

/** What may reach a non-public address, and how names are resolved. */
export interface OutboundPolicy {
  /** Let targets be on loopback, private, link-local and other non-public ranges (never metadata, see above). */
  allowPrivate: boolean;
  /** Resolves a name to all its addresses; default: `dns.lookup` with `all: true`. */
  lookup?: (host: string) => Promise<Array<{ address: string; family: 4 | 6 }>>;
}

/** A resolved, checked address. */
export interface CheckedAddress {
  address: string;
  family: 4 | 6;
}

// ---------------------------------------------------------------------------------------------------------------
// Classification
// ---------------------------------------------------------------------------------------------------------------

/**
 * How hard a range is refused: `private` ranges are lifted by `allowPrivate`;
 * `never` ranges are refused whatever the policy.
 */
type Strictness = 'private' | 'never';

type Judgement = { public: true } | { public: false; reason: string; strictness: Strictness };

type Range<A> = readonly [cidr: [A, number], reason: string, strictness: Strictness];

const v4 = (cidr: string): [ipaddr.IPv4, number] => ipaddr.IPv4.parseCIDR(cidr);
const v6 = (cidr: string): [ipaddr.IPv6, number] => ipaddr.IPv6.parseCIDR(cidr);

const METADATA = 'cloud metadata';

/** IPv4 ranges that are not public, the first match wins (so the metadata hosts come before their ranges). */
const IPV4_RANGES: readonly Range<ipaddr.IPv4>[] = [
  [v4('169.254.169.254/32'), `link-local (${METADATA})`, 'never'], // AWS, GCP, Azure, OpenStack, Oracle
  [v4('169.254.170.2/32'), `link-local (${METADATA})`, 'never'], // AWS ECS task credentials
  [v4('169.254.170.23/32'), `link-local (${METADATA})`, 'never'], // AWS EKS pod identity
  [v4('100.100.100.200/32'), `carrier-grade NAT (${METADATA})`, 'never'], // Alibaba Cloud
  [v4('192.0.0.192/32'), `reserved (${METADATA})`, 'never'], // Oracle Cloud
  [v4('0.0.0.0/8'), 'unspecified', 'never'],
  [v4('127.0.0.0/8'), 'loopback', 'private'],
  [v4('10.0.0.0/8'), 'private', 'private'],
  [v4('172.16.0.0/12'), 'private', 'private'],
  [v4('192.168.0.0/16'), 'private', 'private'],
  [v4('100.64.0.0/10'), 'carrier-grade NAT', 'private'],
  [v4('169.254.0.0/16'), 'link-local', 'private'],
  [v4('192.0.0.0/24'), 'reserved (IETF protocol assignments)', 'private'],
  [v4('192.0.2.0/24'), 'documentation', 'private'],
  [v4('198.51.100.0/24'), 'documentation', 'private'],
  [v4('203.0.113.0/24'), 'documentation', 'private'],
  [v4('192.88.99.0/24'), 'reserved (6to4 relay anycast)', 'private'],
  [v4('198.18.0.0/15'), 'benchmarking', 'private'],
  [v4('224.0.0.0/4'), 'multicast', 'never'],
  [v4('255.255.255.255/32'), 'broadcast', 'never'],
  [v4('240.0.0.0/4'), 'reserved', 'private'],
];

/** IPv6 ranges that are not public and carry no IPv4 address, the first match wins. */
const IPV6_RANGES: readonly Range<ipaddr.IPv6>[] = [
  [v6('fd00:ec2::254/128'), `private (${METADATA})`, 'never'], // AWS over IPv6
  [v6('fd00:ec2::23/128'), `private (${METADATA})`, 'never'], // AWS EKS pod identity over IPv6
  [v6('::/128'), 'unspecified', 'never'],
  [v6('::1/128'), 'loopback', 'private'],
  [v6('64:ff9b:1::/48'), 'private (local-use NAT64)', 'private'],
  [v6('100::/64'), 'reserved (discard)', 'private'],
  [v6('2001:2::/48'), 'benchmarking', 'private'],
  [v6('2001:db8::/32'), 'documentation', 'private'],
  [v6('3fff::/20'), 'documentation', 'private'],
  [v6('fc00::/7'), 'private', 'private'],
  [v6('fe80::/10'), 'link-local', 'private'],
  [v6('fec0::/10'), 'private (deprecated site-local)', 'private'],
  [v6('ff00::/8'), 'multicast', 'never'],
];

/** IPv6 ranges that embed an IPv4 address, and where (the 16-bit parts holding it). */
const EMBEDDING_RANGES: readonly [cidr: [ipaddr.IPv6, number], label: string, parts: readonly [number, number]][] = [
  [v6('::ffff:0:0/96'), 'IPv4-mapped', [6, 7]],
  [v6('::ffff:0:0:0/96'), 'IPv4-translated', [6, 7]],
  [v6('64:ff9b::/96'), 'NAT64', [6, 7]],
  [v6('2002::/16'), '6to4', [1, 2]],
];

const IPV4_COMPATIBLE = v6('::/96'); // deprecated ::a.b.c.d, after :: and ::1 are taken out
const TEREDO = v6('2001::/32');
const IETF_PROTOCOL_ASSIGNMENTS = v6('2001::/23');
const GLOBAL_UNICAST = v6('2000::/3');

/** `link-local (cloud metadata)` + `NAT64` → `link-local (cloud metadata, NAT64)`; `loopback` → `loopback (NAT64)`. */
function embedded(reason: string, label: string): string {
  return reason.endsWith(')') ? `${reason.slice(0, -1)}, ${label})` : `${reason} (${label})`;
}

function ipv4FromParts(high: number, low: number): ipaddr.IPv4 {
  return new ipaddr.IPv4([high >> 8, high & 0xff, low >> 8, low & 0xff]);
}

function judgeIPv4(address: ipaddr.IPv4): Judgement {
  for (const [cidr, reason, strictness] of IPV4_RANGES) {
    if (address.match(cidr)) return { public: false, reason, strictness };
  }
  return { public: true };
}

/** The verdict on an IPv4 address embedded in an IPv6 one, naming how it was embedded. */
function judgeEmbedded(inner: ipaddr.IPv4, label: string): Judgement {
  const verdict = judgeIPv4(inner);
  return verdict.public ? verdict : { ...verdict, reason: embedded(verdict.reason, label) };
}

function judgeIPv6(address: ipaddr.IPv6): Judgement {
  for (const [cidr, reason, strictness] of IPV6_RANGES) {
    if (address.match(cidr)) return { public: false, reason, strictness };
  }
  const parts = address.parts;
  const part = (index: number): number => parts[index] ?? 0;
  for (const [cidr, label, [high, low]] of EMBEDDING_RANGES) {
    if (address.match(cidr)) return judgeEmbedded(ipv4FromParts(part(high), part(low)), label);
  }
  if (address.match(IPV4_COMPATIBLE)) {
    const verdict = judgeEmbedded(ipv4FromParts(part(6), part(7)), 'IPv4-compatible');
    return verdict.public ? { public: false, reason: 'reserved (IPv4-compatible)', strictness: 'private' } : verdict;
  }
  if (address.match(TEREDO)) {
    // The Teredo server's IPv4 address in bits 32-63, the client's (inverted) in bits 96-127.
    const server = judgeEmbedded(ipv4FromParts(part(2), part(3)), 'Teredo');
    if (!server.public) return server;
    return judgeEmbedded(ipv4FromParts(~part(6) & 0xffff, ~part(7) & 0xffff), 'Teredo');
  }
  if (address.match(IETF_PROTOCOL_ASSIGNMENTS)) {
    return { public: false, reason: 'reserved (IETF protocol assignments)', strictness: 'private' };
  }
  if (!address.match(GLOBAL_UNICAST)) return { public: false, reason: 'reserved', strictness: 'private' };
  return { public: true };
}

/** `[::1]` (a URL's host) → `::1`. */
function unbracketed(host: string): string {
  return host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
}

/**
 * `::127.0.0.1` → `::7f00:1`: ipaddr.js reads an IPv6 address written with a
 * dotted IPv4 tail and no `ffff` before it as IPv4-mapped, which it is not
 * (it is IPv4-compatible); hex groups are read as written.
 */
function dottedTailAsHex(text: string): string {
  const match = /^(.*:)(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})(%.*)?$/.exec(text);
  if (!match) return text;
  const [, head = '', a = '', b = '', c = '', d = '', zone = ''] = match;
  const octets = [a, b, c, d].map(Number);
  if (octets.some((octet) => octet > 255)) return text;
  const [o1 = 0, o2 = 0, o3 = 0, o4 = 0] = octets;
  return `${head}${((o1 << 8) | o2).toString(16)}:${((o3 << 8) | o4).toString(16)}${zone}`;
}

function judge(ip: string): Judgement {
  const text = dottedTailAsHex(unbracketed(ip.trim()));
  if (!ipaddr.isValid(text)) return { public: false, reason: 'not an IP address', strictness: 'never' };
  const address = ipaddr.parse(text);
  return address.kind() === 'ipv4' ? judgeIPv4(address as ipaddr.IPv4) : judgeIPv6(address as ipaddr.IPv6);
}

/** Whether `ip` is a public address; if not, the range it is in (`loopback`, `private`, `link-local (cloud metadata)`…). */
export function classifyAddress(ip: string): AddressVerdict {
  const verdict = judge(ip);
  return verdict.public ? { public: true } : { public: false, reason: verdict.reason };
}

/** The refusal of `address` under `policy`, or null when it may be reached. */
function refusal(host: string, address: string, policy: OutboundPolicy): BlockedTargetError | null {
  const verdict = judge(address);
  if (verdict.public) return null;
  if (policy.allowPrivate && verdict.strictness === 'private') return null;
  return new BlockedTargetError(host, address, verdict.reason);
}

// ---------------------------------------------------------------------------------------------------------------
// Targets
// ---------------------------------------------------------------------------------------------------------------

/** `localhost`, `api.localhost`, `localhost.` (RFC 6761: loopback, whatever DNS says). */
function isLocalhostName(host: string): boolean {
  const name = host.toLowerCase().replace(/\.$/, '');
  return name === 'localhost' || name.endsWith('.localhost');
}

const LOCALHOST_ADDRESSES: readonly CheckedAddress[] = [
  { address: '127.0.0.1', family: 4 },
  { address: '::1', family: 6 },
];

async function systemLookup(host: string): Promise<CheckedAddress[]> {
  const found = await dnsLookup(host, { all: true });
  return found.map(({ address, family }) => ({ address, family: family === 6 ? 6 : 4 }));
}

/**
 * Every address of `host`, each checked: a literal IP as it is, `localhost`
 * and `*.localhost` as loopback without asking DNS, any other name through
 * the policy's lookup. Refused (BlockedTargetError) when any address is.
 * A failed resolution rejects with the resolver's own error.
 */
async function resolveChecked(host: string, policy: OutboundPolicy): Promise<CheckedAddress[]> {
  const name = unbracketed(host);
  if (name === '') throw new BlockedTargetError(host, null, 'no host');
  const family = isIP(name);
  let addresses: CheckedAddress[];
  if (family === 4 || family === 6) addresses = [{ address: name, family }];
  else if (isLocalhostName(name)) addresses = [...LOCALHOST_ADDRESSES];
  else addresses = await (policy.lookup ?? systemLookup)(name);
  if (addresses.length === 0) throw new BlockedTargetError(name, null, 'the name has no address');
  for (const { address } of addresses) {
    const refused = refusal(name, address, policy);
    if (refused) throw refused;
  }
  return addresses;
}

/** The URL, if its scheme is http or https; BlockedTargetError otherwise. */
function httpUrl(target: string | URL): URL {
  let url: URL;
  try {
    url = typeof target === 'string' ? new URL(target) : target;
  } catch {
    throw new BlockedTargetError('', null, 'not a valid URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new BlockedTargetError(url.hostname, null, `scheme ${url.protocol} is not allowed (only http and https)`);
  }
  return url;
}

/**
 * Checks a URL before it is called: http or https, and every address of its
 * host public (or, with `allowPrivate`, not in a range that is never
 * reached). Resolves to the first address; throws BlockedTargetError when
 * refused. A check ahead of a call does not protect the call (the name may
 * resolve differently then): `guardedFetch` checks again at every connect.
 */
export async function checkTarget(url: string | URL, policy: OutboundPolicy): Promise<CheckedAddress> {
  const target = httpUrl(url);
  const [first] = await resolveChecked(target.hostname, policy);
  return first!;
}

// ---------------------------------------------------------------------------------------------------------------
// The guarded fetch
// ---------------------------------------------------------------------------------------------------------------

/**
 * The `lookup` handed to `net.connect`/`tls.connect`: resolves with the
 * policy, refuses the connection when any address is refused, and gives the
 * socket only checked addresses (filtered by the family asked for).
 */
function guardedLookup(policy: OutboundPolicy): LookupFunction {
  return (hostname, options, callback) => {
    resolveChecked(hostname, policy).then(
      (addresses) => {
        const wanted = options.family === 4 || options.family === 6 ? options.family : 0;
        const usable = wanted === 0 ? addresses : addresses.filter((a) => a.family === wanted);
        if (usable.length === 0) {
          callback(new BlockedTargetError(hostname, null, `no IPv${wanted} address`), '', 0);
        } else if (options.all) {
          callback(null, usable);
        } else {
          callback(null, usable[0]!.address, usable[0]!.family);
        }
      },
      (error: unknown) => {
        callback(error instanceof Error ? error : new Error(String(error)), '', 0);
      },
    );
  };
}

/** The agent's connector: a literal IP host is checked here (net.connect skips `lookup` for one), a name in `lookup`. */
function guardedConnector(undici: typeof Undici, policy: OutboundPolicy): buildConnector.connector {
  const connect = undici.buildConnector({ timeout: CONNECT_TIMEOUT_MS, lookup: guardedLookup(policy) });
  return (options, callback) => {
    const host = unbracketed(options.hostname);
    if (isIP(host) !== 0) {
      const refused = refusal(host, host, policy);
      if (refused) {
        callback(refused, null);
        return;
      }
    }
    connect(options, callback);
  };
}

/** A `fetch` bound to one guarded connection pool; `close()` ends its connections. */
export type GuardedFetch = typeof fetch & {
  /** Closes the pool's connections once their requests are done; later calls fail. */
  close(): Promise<void>;
};

/** The refusal inside a failed fetch (`TypeError: fetch failed` with it as the cause, perhaps nested). */
function blockedCause(error: unknown): BlockedTargetError | null {
  let current: unknown = error;
  for (let depth = 0; depth < 4 && current instanceof Error; depth++) {
    if (current instanceof BlockedTargetError) return current;
    current = current.cause;
  }
  return null;
}

/** The URL of fetch's first argument: a string, a URL, or a Request. */
function inputUrl(input: Parameters<typeof fetch>[0]): string | URL {
  if (typeof input === 'string' || input instanceof URL) return input;
  return input.url;
}

/** A Request's own settings as init, so undici's fetch can send a Request of the global fetch. */
function requestInit(input: Parameters<typeof fetch>[0]): RequestInit {
  if (typeof input === 'string' || input instanceof URL) return {};
  const init: RequestInit & { duplex?: 'half' } = {
    method: input.method,
    headers: input.headers,
    signal: input.signal,
  };
  if (input.body !== null) {
    init.body = input.body;
    init.duplex = 'half';
  }
  return init;
}

/** undici's exports, whether the module system hands them over as named exports or as a CommonJS default. */
async function loadUndici(): Promise<typeof Undici> {
  const loaded = (await import('undici')) as typeof Undici & { default?: typeof Undici };
  return typeof loaded.buildConnector === 'function' ? loaded : loaded.default;
}

/**
 * A `fetch` whose every connection is checked (see the module comment):
 * schemes other than http and https are refused before anything is sent,
 * redirects are returned as they are (`redirect: 'manual'`, whatever the
 * caller asks), connections time out after CONNECT_TIMEOUT_MS. A refusal
 * rejects with the BlockedTargetError itself. Each call makes its own
 * connection pool: keep the function for the lifetime of its user and call
 * `close()` when done.
 */
export function guardedFetch(policy: OutboundPolicy): GuardedFetch {
  // undici (about 0.7 MB of code) is loaded, and the pool made, on the first call (ADR 0044).
  let agent: Agent | null = null;
  let closed = false;
  const guarded = async (input: Parameters<typeof fetch>[0], init?: RequestInit): Promise<Response> => {
    const url = httpUrl(inputUrl(input));
    const undici = await loadUndici();
    if (!agent) {
      agent = new undici.Agent({ connect: guardedConnector(undici, policy) });
      if (closed) await agent.close(); // closed before its first call: fails as a closed pool does
    }
    const merged = { ...requestInit(input), ...init, redirect: 'manual', dispatcher: agent } as UndiciRequestInit;
    try {
      return await undici.fetch(url, merged);
    } catch (error) {
      throw blockedCause(error) ?? error;
    }
  };
  const result: GuardedFetch = Object.assign(guarded, {
    close: async () => {
      closed = true;
      await agent?.close();
    },
  });
  return result;
}
