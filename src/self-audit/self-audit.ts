import { relative, sep } from 'node:path';
import type { Config } from '../config/config.schema.js';
import { isLoopbackHost, isWildcardHostEntry, normalizeHost } from './host-origin.js';
import { fingerprintToken } from './tokens.js';

/**
 * The security self-audit (ADR 0023): `gatehouse security audit` and
 * `GET {api_prefix}/security/audit` judge a configuration and its data dir
 * and list what weakens the gateway, each finding with a stable id, a
 * severity and a fix.
 *
 * Every check is a pure function of the configuration; the data-dir check
 * reads the file system only through a `FileProbe` (the real one is
 * `nodeFileProbe` in self-audit.probe.ts) and is bounded. A finding never
 * carries a secret: a token is named by its place in the configuration and
 * its fingerprint (`tok_` + 8 hex), never by its value or by the weak value
 * it matched.
 */

/** How bad a finding is. `critical` makes `gatehouse security audit` exit 1. */
export type Severity = 'critical' | 'warning' | 'info';

/** The severities, worst first. */
export const SEVERITIES: readonly Severity[] = ['critical', 'warning', 'info'];

/** One finding of the audit. */
export interface SecurityFinding {
  /** Stable id, e.g. `gateway.bind_public` (ADR 0023 lists them). */
  id: FindingId;
  severity: Severity;
  /** One line naming the problem. */
  title: string;
  /** What was found, naming configuration keys and paths; never a secret value. */
  found: string;
  /** How to fix it. */
  fix: string;
}

/** The audit's answer: the findings, worst first, and how many of each severity. */
export interface SelfAuditReport {
  findings: SecurityFinding[];
  summary: Record<Severity, number>;
}

/** Every finding id with its title: the ids are a contract (scripts match on them), the titles may be reworded. */
export const FINDINGS = {
  'gateway.bind_public': 'The API listens on a non-loopback address',
  'gateway.allowed_hosts_missing': 'No usable allowed_hosts while the API listens off loopback',
  'gateway.allowed_hosts_wildcard': 'allowed_hosts holds wildcard or unusable entries',
  'auth.token_well_known': 'A token is a well-known value',
  'auth.token_short': 'A token is shorter than 32 characters',
  'auth.token_low_variety': 'A token has too little variety',
  'auth.api_token_is_admin': 'An api token is also an admin token',
  'auth.admin_fallback': 'No admin_tokens: every api token has admin rights',
  'auth.loopback_trust_proxy': 'loopback_trust is on while a proxy on this host forwards requests',
  'security.profile_minimal': 'Security profile minimal: no tokens, no Host/Origin checks, no rate limits',
  'webhook.no_secret': 'The webhook accepts unsigned requests',
  'webhook.secret_weak': 'The webhook secret is weak',
  'webhook.bind_public': 'The webhook server listens on a non-loopback address',
  'provider.plain_http': 'The model provider is reached over plain HTTP off loopback',
  'embeddings.plain_http': 'The embeddings endpoint is reached over plain HTTP off loopback',
  'budget.missing': 'No daily budget with a paid model provider',
  'data.world_accessible': 'Files in the data dir are open to other users',
  'data.group_accessible': 'Files in the data dir are open to the group',
  'data.scan_incomplete': 'The data dir was not checked completely',
  'data.dir_missing': 'The data dir does not exist yet',
} as const;

/** A finding's stable id. */
export type FindingId = keyof typeof FINDINGS;

function finding(id: FindingId, severity: Severity, found: string, fix: string): SecurityFinding {
  return { id, severity, title: FINDINGS[id], found, fix };
}

/** The worse of two severities. */
export function worse(a: Severity, b: Severity): Severity {
  return SEVERITIES.indexOf(a) <= SEVERITIES.indexOf(b) ? a : b;
}

/** Binds that accept every interface, loopback included (a local proxy can reach them over 127.0.0.1). */
function isWildcardBind(host: string): boolean {
  const trimmed = host.trim();
  return trimmed === '' || trimmed === '0.0.0.0' || trimmed === '::' || trimmed === '[::]';
}

/** `"0.0.0.0"`: a configured host as shown in a finding. */
const quoted = (value: string): string => JSON.stringify(value);

// ---------------------------------------------------------------------------------------------------------------
// The API's bind and Host rules
// ---------------------------------------------------------------------------------------------------------------

/** `gateway.bind_public`: the API (plain HTTP) listens where other machines reach it. */
export function checkBind(config: Config): SecurityFinding[] {
  const host = config.gateway.host;
  if (isLoopbackHost(host)) return [];
  return [
    finding(
      'gateway.bind_public',
      'warning',
      `gateway.host is ${quoted(host)}: the API answers other machines over plain HTTP, so tokens and messages ` +
        'cross the network unencrypted unless a TLS proxy fronts it.',
      'Bind gateway.host to 127.0.0.1 and put a TLS-terminating reverse proxy in front (then set ' +
        'gateway.auth.loopback_trust: false); if the bind must stay public, firewall the port and list the ' +
        "gateway's public names in gateway.auth.allowed_hosts.",
    ),
  ];
}

/**
 * `gateway.allowed_hosts_missing` (critical): off loopback with no usable
 * `allowed_hosts` entry, the Host rules cannot tell the gateway's own names
 * from a rebinding attacker's, and admin routes refuse every Host.
 * `gateway.allowed_hosts_wildcard` (info): entries that are dropped
 * (`0.0.0.0`, `::`, `*`, empty, malformed).
 */
export function checkAllowedHosts(config: Config): SecurityFinding[] {
  const { host } = config.gateway;
  const entries = config.gateway.auth.allowed_hosts;
  const unusable = entries.filter((entry) => isWildcardHostEntry(entry));
  const usable = entries.length - unusable.length;
  if (!isLoopbackHost(host) && usable === 0) {
    const state =
      entries.length === 0
        ? 'gateway.auth.allowed_hosts is empty'
        : `gateway.auth.allowed_hosts holds only wildcard or unusable entries (${unusable.map(quoted).join(', ')}), which are dropped`;
    return [
      finding(
        'gateway.allowed_hosts_missing',
        'critical',
        `${state} while gateway.host is ${quoted(host)}: no Host header is recognised as the gateway's own, so ` +
          'DNS-rebinding requests cannot be told apart and admin routes refuse every request.',
        "List the exact names clients use to reach the gateway in gateway.auth.allowed_hosts (e.g. ['gatehouse.example.com']), " +
          'or bind gateway.host to 127.0.0.1.',
      ),
    ];
  }
  if (unusable.length === 0) return [];
  return [
    finding(
      'gateway.allowed_hosts_wildcard',
      'info',
      `gateway.auth.allowed_hosts holds ${unusable.map(quoted).join(', ')}: wildcard and malformed entries are ` +
        `dropped${usable === 0 ? ', so the loopback names apply' : ''}.`,
      'Remove them and list exact host names; a wildcard never widens the Host rules.',
    ),
  ];
}

// ---------------------------------------------------------------------------------------------------------------
// Tokens and secrets
// ---------------------------------------------------------------------------------------------------------------

/**
 * Values that are guessed first: placeholders from examples and common
 * passwords, compared lower-cased without punctuation and trailing digits
 * (`Change-Me`, `change_me2` and `PASSWORD123` all match).
 */
const WELL_KNOWN = new Set([
  'changeme',
  'changethis',
  'replaceme',
  'secret',
  'mysecret',
  'supersecret',
  'topsecret',
  'password',
  'passw0rd',
  'pass',
  'test',
  'testing',
  'testtoken',
  'token',
  'mytoken',
  'apitoken',
  'admintoken',
  'yourtoken',
  'yourapitoken',
  'yoursecret',
  'admin',
  'root',
  'default',
  'example',
  'sample',
  'demo',
  'dev',
  'devtoken',
  'letmein',
  'qwerty',
  'gatehouse',
  'webhook',
  'webhooksecret',
  'whsec',
  'todo',
  'xxx',
  'abc',
]);

/** Below this many characters a token is short (`auth.token_short`). */
export const MIN_TOKEN_LENGTH = 32;
/** Below this many characters a short token is critical: few enough to guess online. */
const CRITICAL_TOKEN_LENGTH = 16;
/** Fewer distinct characters than this is too little variety. */
const MIN_DISTINCT_CHARACTERS = 8;
/** Standard Webhooks keys (`whsec_` + base64) shorter than this many bytes are short (the spec asks 24–64). */
const MIN_WHSEC_BYTES = 24;

/** What is wrong with a secret, worst first; null when nothing is. */
export type SecretWeakness = 'well_known' | 'short' | 'low_variety';

/** True when the text is a shorter unit repeated (`abcabcabc`, `xyxyxyxy`). */
function isRepetition(text: string): boolean {
  for (let period = 1; period <= text.length / 2; period++) {
    if (text.length % period !== 0) continue;
    if (text.slice(0, period).repeat(text.length / period) === text) return true;
  }
  return false;
}

/** True for `123456`, `12345678`, `0123456789`…: digits counting up, the commonest password shape. */
function isCountingRun(text: string): boolean {
  return /^\d+$/.test(text) && '01234567890123456789'.includes(text);
}

/**
 * Judges a token or secret: `well_known` (a placeholder or common password),
 * `short` (fewer than `minLength` characters), `low_variety` (fewer than 8
 * distinct characters, or one unit repeated), else null. Only the worst
 * weakness is returned.
 */
export function judgeSecret(value: string, minLength: number = MIN_TOKEN_LENGTH): SecretWeakness | null {
  const alphanumeric = value.toLowerCase().replace(/[^a-z0-9]/g, '');
  const word = alphanumeric.replace(/\d+$/, '');
  if (alphanumeric === '' || WELL_KNOWN.has(word) || isCountingRun(alphanumeric)) return 'well_known';
  if (value.length < minLength) return 'short';
  if (new Set(value).size < MIN_DISTINCT_CHARACTERS || isRepetition(value)) return 'low_variety';
  return null;
}

/** A configured token: its place in the configuration and its fingerprint (never the value). */
function tokenLabel(list: 'api_tokens' | 'admin_tokens', index: number, token: string): string {
  return `gateway.auth.${list}[${index}] (${fingerprintToken(token)})`;
}

/** `a`, `a and b`, `a, b and c`. */
function listing(items: readonly string[]): string {
  if (items.length <= 1) return items.join('');
  return `${items.slice(0, -1).join(', ')} and ${items[items.length - 1]}`;
}

const NEW_TOKEN_FIX =
  'Replace each with a random token of at least 32 characters, e.g. `openssl rand -base64 32` (or ' +
  '`node -e "console.log(crypto.randomBytes(32).toString(\'base64url\'))"`), and restart the gateway.';

/**
 * `auth.token_well_known` (critical), `auth.token_short` (critical under 16
 * characters, else warning), `auth.token_low_variety` (warning): one finding
 * per kind, naming every token it concerns by place and fingerprint.
 */
export function checkTokens(config: Config): SecurityFinding[] {
  const { auth } = config.gateway;
  const byWeakness: Record<SecretWeakness, string[]> = { well_known: [], short: [], low_variety: [] };
  let tooShortToMatter = false;
  for (const list of ['api_tokens', 'admin_tokens'] as const) {
    auth[list].forEach((token, index) => {
      const weakness = judgeSecret(token);
      if (weakness === null) return;
      byWeakness[weakness].push(tokenLabel(list, index, token));
      if (weakness === 'short' && token.length < CRITICAL_TOKEN_LENGTH) tooShortToMatter = true;
    });
  }
  const out: SecurityFinding[] = [];
  const verb = (labels: string[]): string => (labels.length === 1 ? 'is' : 'are');
  if (byWeakness.well_known.length > 0) {
    const labels = byWeakness.well_known;
    out.push(
      finding(
        'auth.token_well_known',
        'critical',
        `${listing(labels)} ${
          labels.length === 1
            ? 'is a well-known placeholder or common password'
            : 'are well-known placeholders or common passwords'
        }, among the first values an attacker tries.`,
        NEW_TOKEN_FIX,
      ),
    );
  }
  if (byWeakness.short.length > 0) {
    const labels = byWeakness.short;
    out.push(
      finding(
        'auth.token_short',
        tooShortToMatter ? 'critical' : 'warning',
        `${listing(labels)} ${verb(labels)} shorter than ${MIN_TOKEN_LENGTH} characters` +
          `${tooShortToMatter ? ` (at least one shorter than ${CRITICAL_TOKEN_LENGTH})` : ''}.`,
        NEW_TOKEN_FIX,
      ),
    );
  }
  if (byWeakness.low_variety.length > 0) {
    const labels = byWeakness.low_variety;
    out.push(
      finding(
        'auth.token_low_variety',
        'warning',
        `${listing(labels)} ${verb(labels)} made of fewer than ${MIN_DISTINCT_CHARACTERS} distinct characters or of one repeated pattern.`,
        NEW_TOKEN_FIX,
      ),
    );
  }
  return out;
}

/**
 * `auth.api_token_is_admin` (warning): a token in both lists holds admin
 * rights wherever the api token is handed out. `auth.admin_fallback` (info):
 * api tokens with no admin tokens are all admin (spec: the fallback).
 */
export function checkTokenRoles(config: Config): SecurityFinding[] {
  const { api_tokens: apiTokens, admin_tokens: adminTokens } = config.gateway.auth;
  const admin = new Set(adminTokens);
  const shared = apiTokens.flatMap((token, index) =>
    admin.has(token) ? [tokenLabel('api_tokens', index, token)] : [],
  );
  const out: SecurityFinding[] = [];
  if (shared.length > 0) {
    out.push(
      finding(
        'auth.api_token_is_admin',
        'warning',
        `${listing(shared)} ${shared.length === 1 ? 'is' : 'are'} also listed in gateway.auth.admin_tokens: every ` +
          'client given the api token can change configuration, skills, cron jobs and approve turns.',
        'Give admin rights their own token: remove it from one of the two lists and issue a separate random token.',
      ),
    );
  }
  if (apiTokens.length > 0 && adminTokens.length === 0) {
    out.push(
      finding(
        'auth.admin_fallback',
        'info',
        `gateway.auth.admin_tokens is empty, so the ${apiTokens.length} api token(s) also have admin rights.`,
        'Set gateway.auth.admin_tokens to a separate random token if clients holding api tokens should not administer the gateway.',
      ),
    );
  }
  return out;
}

/**
 * `auth.loopback_trust_proxy` (warning): with `loopback_trust` on, a request
 * from a loopback peer skips the user-identity check. A reverse proxy on the
 * same host makes every forwarded request such a peer. Gatehouse has no
 * trusted-proxy or forwarded-header setting; the configuration's sign of a
 * proxy is `allowed_hosts` naming a host that is not loopback while the bind
 * accepts loopback peers (loopback or wildcard). Not reported in auth mode
 * `open`, where the check lets everyone through anyway.
 */
export function checkLoopbackTrust(config: Config): SecurityFinding[] {
  const { host, auth } = config.gateway;
  if (!auth.loopback_trust || auth.mode === 'open') return [];
  if (!isLoopbackHost(host) && !isWildcardBind(host)) return [];
  const publicNames = auth.allowed_hosts
    .filter((entry) => !isWildcardHostEntry(entry))
    .filter((entry) => !isLoopbackHost(entry))
    .map((entry) => normalizeHost(entry) ?? entry);
  if (publicNames.length === 0) return [];
  return [
    finding(
      'auth.loopback_trust_proxy',
      'warning',
      `gateway.auth.loopback_trust is on and gateway.auth.allowed_hosts names ${listing(publicNames.map(quoted))} ` +
        `while gateway.host is ${quoted(host)}: the gateway is reached through a proxy on this host, so every ` +
        `forwarded request comes from a loopback peer and skips the ${auth.mode} check of its user.`,
      'Set gateway.auth.loopback_trust: false behind a reverse proxy on the same host (tokens stay required either way).',
    ),
  ];
}

/** `security.profile_minimal`: critical off loopback (the gateway refuses to start so), warning on loopback. */
export function checkProfile(config: Config): SecurityFinding[] {
  if (config.security.profile !== 'minimal') return [];
  const { host } = config.gateway;
  const publicBind = !isLoopbackHost(host);
  return [
    finding(
      'security.profile_minimal',
      publicBind ? 'critical' : 'warning',
      publicBind
        ? `security.profile is minimal and gateway.host is ${quoted(host)}: anyone who reaches the port is admin ` +
            '(the gateway refuses to start with this configuration).'
        : 'security.profile is minimal: every local process and every web page a local browser opens may call ' +
            'the API as admin, with no token.',
      'Use security.profile: standard (the default) and a token; minimal is for local development only.',
    ),
  ];
}

// ---------------------------------------------------------------------------------------------------------------
// The webhook server
// ---------------------------------------------------------------------------------------------------------------

/** How a webhook secret's length is measured: the decoded key of a `whsec_` secret, else the characters. */
function webhookSecretWeakness(secret: string): SecretWeakness | null {
  if (secret.startsWith('whsec_')) {
    const key = secret.slice('whsec_'.length);
    const bytes = Buffer.from(key, 'base64').length;
    if (key === '' || judgeSecret(key, 0) === 'well_known') return 'well_known';
    if (bytes < MIN_WHSEC_BYTES) return 'short';
    return judgeSecret(key, 0);
  }
  return judgeSecret(secret);
}

/**
 * Only while the webhook is enabled: `webhook.no_secret` (critical off
 * loopback, warning on loopback), `webhook.secret_weak` (a well-known value:
 * critical off loopback, warning on it; short or low variety: warning),
 * `webhook.bind_public` (warning).
 */
export function checkWebhook(config: Config): SecurityFinding[] {
  const webhook = config.channels.webhook;
  if (!webhook.enabled) return [];
  const publicBind = !isLoopbackHost(webhook.host);
  const where = `channels.webhook.host is ${quoted(webhook.host)}`;
  const out: SecurityFinding[] = [];
  const secret = webhook.secret ?? '';
  if (secret === '') {
    out.push(
      finding(
        'webhook.no_secret',
        publicBind ? 'critical' : 'warning',
        `channels.webhook.secret is not set, so requests are not signed: ${
          publicBind
            ? `${where}, so anyone who reaches port ${webhook.port} can post messages as any sender.`
            : 'every local process can post messages as any sender.'
        }`,
        'Set channels.webhook.secret to a random value of at least 32 characters (e.g. `openssl rand -hex 32`) ' +
          'and sign each request (X-Signature: sha256=<HMAC of the body>, or Standard Webhooks).',
      ),
    );
  } else {
    const weakness = webhookSecretWeakness(secret);
    if (weakness !== null) {
      const what =
        weakness === 'well_known'
          ? 'is a well-known placeholder or common password'
          : weakness === 'short'
            ? secret.startsWith('whsec_')
              ? `holds a key shorter than ${MIN_WHSEC_BYTES} bytes`
              : `is shorter than ${MIN_TOKEN_LENGTH} characters`
            : `has fewer than ${MIN_DISTINCT_CHARACTERS} distinct characters or repeats one pattern`;
      out.push(
        finding(
          'webhook.secret_weak',
          weakness === 'well_known' && publicBind ? 'critical' : 'warning',
          `channels.webhook.secret ${what}; one signed request is enough to guess it offline and forge any other.`,
          'Replace it with a random value of at least 32 characters (e.g. `openssl rand -hex 32`) and give it ' +
            'to the senders.',
        ),
      );
    }
  }
  if (publicBind) {
    out.push(
      finding(
        'webhook.bind_public',
        'warning',
        `${where}: the webhook server answers other machines over plain HTTP, so message bodies and replies ` +
          'cross the network unencrypted.',
        'Bind channels.webhook.host to 127.0.0.1 and let a TLS-terminating reverse proxy forward the webhook path ' +
          '(with gateway.auth.loopback_trust: false), or firewall the port to the known senders.',
      ),
    );
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------------------
// Outbound: the model provider, embeddings, budget
// ---------------------------------------------------------------------------------------------------------------

/** The URL's host when it is `http:` and not loopback; null otherwise (https, loopback, unparsable). */
function plainHttpOffLoopback(baseUrl: string | null): string | null {
  if (baseUrl === null || baseUrl.trim() === '') return null;
  let url: URL;
  try {
    url = new URL(baseUrl);
  } catch {
    return null;
  }
  if (url.protocol !== 'http:') return null;
  return isLoopbackHost(url.hostname) ? null : url.host;
}

/**
 * `provider.plain_http` and `embeddings.plain_http`: an `http://` base URL
 * off loopback. Critical when an API key is configured (it crosses the
 * network in clear), warning otherwise (prompts and answers still do).
 */
export function checkOutboundTransport(config: Config): SecurityFinding[] {
  const out: SecurityFinding[] = [];
  const blocks = [
    { id: 'provider.plain_http', key: 'provider', block: config.provider, active: config.provider.type !== 'echo' },
    { id: 'embeddings.plain_http', key: 'embeddings', block: config.embeddings, active: true },
  ] as const;
  for (const { id, key, block, active } of blocks) {
    if (!active) continue;
    const host = plainHttpOffLoopback(block.base_url);
    if (host === null) continue;
    const keyed = block.api_key !== null && block.api_key !== '';
    out.push(
      finding(
        id,
        keyed ? 'critical' : 'warning',
        `${key}.base_url uses http:// to ${host}: ${
          keyed ? `${key}.api_key and every prompt and answer cross` : 'every prompt and answer crosses'
        } the network unencrypted.`,
        `Use an https:// ${key}.base_url, or reach the server over loopback (an SSH tunnel or a local TLS proxy).`,
      ),
    );
  }
  return out;
}

/** Whether the provider bills per token: Anthropic, or OpenAI's API (any non-loopback OpenAI-compatible URL). */
function isPaidProvider(config: Config): boolean {
  const { type, base_url: baseUrl } = config.provider;
  if (type === 'anthropic') return true;
  if (type !== 'openai') return false;
  if (baseUrl === null || baseUrl.trim() === '') return true;
  try {
    return !isLoopbackHost(new URL(baseUrl).hostname); // a local server (Ollama, vLLM on 127.0.0.1) costs nothing
  } catch {
    return true;
  }
}

/** `budget.missing` (warning): no `budget.daily_usd` while a paid provider answers. */
export function checkBudget(config: Config): SecurityFinding[] {
  if (config.budget.daily_usd !== null || !isPaidProvider(config)) return [];
  return [
    finding(
      'budget.missing',
      'warning',
      `provider.type is ${config.provider.type} and budget.daily_usd is not set: a leaked token, a looping task or a ` +
        'flood of messages can spend without limit.',
      'Set budget.daily_usd to the most a day may cost (it is checked before each model call).',
    ),
  ];
}

/** Every check of the configuration alone (no file system), in a stable order. */
export function auditConfig(config: Config): SecurityFinding[] {
  return [
    ...checkProfile(config),
    ...checkBind(config),
    ...checkAllowedHosts(config),
    ...checkTokens(config),
    ...checkTokenRoles(config),
    ...checkLoopbackTrust(config),
    ...checkWebhook(config),
    ...checkOutboundTransport(config),
    ...checkBudget(config),
  ];
}

// ---------------------------------------------------------------------------------------------------------------
// The data dir
// ---------------------------------------------------------------------------------------------------------------

/** What the probe knows about one path. */
export interface ProbeEntry {
  kind: 'dir' | 'file' | 'symlink' | 'other';
  /** Permission bits (`mode & 0o777`). */
  mode: number;
}

/** The file system as the data-dir check sees it. */
export interface FileProbe {
  /** False where file modes mean nothing (Windows): the check is skipped. */
  readonly posixModes: boolean;
  /** The entry at `path` (a symbolic link itself unless `follow`), or null when it does not exist. */
  entry(path: string, follow: boolean): Promise<ProbeEntry | null>;
  /** The names in a directory; throws when it cannot be read. */
  list(dir: string): Promise<string[]>;
  /** Joins a directory and a name. */
  join(dir: string, name: string): string;
}

/** Bounds of the data-dir walk. */
export interface WalkLimits {
  /** Entries examined below the data dir, at most. */
  maxEntries: number;
  /** Levels below the data dir, at most (its children are level 1). */
  maxDepth: number;
}

/** At most 10 000 entries, 6 levels deep: a data dir holds a database, logs and a few small files. */
export const DATA_WALK_LIMITS: WalkLimits = { maxEntries: 10_000, maxDepth: 6 };

/** How many exposed paths a finding names before "and N more". */
const SAMPLE_PATHS = 5;

/** One path with group or other permission bits, judged. */
interface Exposure {
  path: string;
  mode: number;
  severity: Severity;
  why: string;
}

type Audience = 'other' | 'group';

/** The verdict on one audience's bits. */
type Judged = Pick<Exposure, 'severity' | 'why'>;

/**
 * Judges the bits one audience has on an entry. `reachable`: every directory
 * from the data dir down to the entry lets that audience in (x); otherwise
 * the bits are latent (info), one `chmod` away from mattering.
 */
function judgeBits(bits: number, isDir: boolean, reachable: boolean, audience: Audience): Judged | null {
  const who = audience === 'other' ? 'other users' : 'the group';
  const judged = (why: string, reached: Severity): Judged =>
    reachable ? { severity: reached, why } : { severity: 'info', why: `${why}, once a directory above lets ${who} in` };
  const strong: Severity = audience === 'other' ? 'critical' : 'warning';
  if (isDir) {
    if (bits & 0o2) return judged(`${who} may add, replace and delete files in it`, strong);
    if (bits & 0o5) return judged(`${who} may list or enter it`, audience === 'other' ? 'warning' : 'info');
    return null;
  }
  if (bits & 0o6)
    return judged(`${who} may ${bits & 0o4 ? (bits & 0o2 ? 'read and write' : 'read') : 'write'} it`, strong);
  return null; // execute alone opens nothing
}

/** One finding for an audience's exposures: the worst severity, the worst paths named. */
function exposureFinding(
  id: 'data.world_accessible' | 'data.group_accessible',
  dataDir: string,
  exposures: Exposure[],
): SecurityFinding {
  const order = (e: Exposure): number => SEVERITIES.indexOf(e.severity);
  const sorted = [...exposures].sort((a, b) => order(a) - order(b) || a.path.localeCompare(b.path));
  const severity = sorted[0]!.severity;
  const named = sorted
    .slice(0, SAMPLE_PATHS)
    .map((e) => `${e.path} (${e.mode.toString(8).padStart(4, '0')}: ${e.why})`);
  const more = sorted.length > SAMPLE_PATHS ? `; and ${sorted.length - SAMPLE_PATHS} more` : '';
  const bits = id === 'data.world_accessible' ? 'o' : 'g';
  return finding(
    id,
    severity,
    `${sorted.length} path(s) under ${dataDir}: ${named.join('; ')}${more}. The data dir holds the database, ` +
      'the audit log, the logs and the generated admin token.',
    `chmod 700 ${quoted(dataDir)} && chmod -R ${bits}-rwx ${quoted(dataDir)} (the gateway creates everything ` +
      '0700/0600 and tightens what it opens at start).',
  );
}

/** A path relative to the data dir (the data dir itself named so), always with `/`. */
function shown(dataDir: string, path: string): string {
  const rel = relative(dataDir, path);
  return rel === '' ? 'the data dir itself' : rel.split(sep).join('/');
}

/**
 * Walks the data dir (bounded by `limits`, symbolic links not followed) and
 * reports paths with group or other permission bits: `data.world_accessible`
 * (critical when another user can read or write a file or write a directory
 * through directories that let them in; warning when they can only list or
 * enter a directory; info when a private directory above shields the bits),
 * `data.group_accessible` (the same for the group, one step milder),
 * `data.scan_incomplete` (info: the bounds were hit, or directories could not
 * be read) and `data.dir_missing` (info).
 */
export async function auditDataDir(
  dataDir: string,
  probe: FileProbe,
  limits: WalkLimits = DATA_WALK_LIMITS,
): Promise<SecurityFinding[]> {
  if (!probe.posixModes) {
    return [
      finding(
        'data.scan_incomplete',
        'info',
        `File modes are not POSIX permissions on this platform, so ${dataDir} was not checked.`,
        "Check the data dir's access control list by hand: only the gateway's user should read it.",
      ),
    ];
  }
  let root: ProbeEntry | null;
  try {
    root = await probe.entry(dataDir, true);
  } catch (err) {
    return [
      finding(
        'data.scan_incomplete',
        'info',
        `${dataDir} could not be examined (${(err as NodeJS.ErrnoException).code ?? 'unreadable'}).`,
        "Run the audit as the gateway's user.",
      ),
    ];
  }
  if (root === null || root.kind !== 'dir') {
    return [
      finding(
        'data.dir_missing',
        'info',
        root === null
          ? `data_dir ${dataDir} does not exist; the gateway creates it (0700) at its first start.`
          : `data_dir ${dataDir} exists but is not a directory; the gateway cannot start on it.`,
        root === null ? 'Nothing to do.' : 'Point data_dir at a directory (or remove the file).',
      ),
    ];
  }

  interface Dir {
    path: string;
    depth: number;
    mode: number;
    reach: Record<Audience, boolean>;
  }
  const exposures: Record<Audience, Exposure[]> = { other: [], group: [] };
  const judge = (path: string, entry: ProbeEntry, reach: Record<Audience, boolean>): void => {
    const isDir = entry.kind === 'dir';
    for (const [audience, shift] of [
      ['other', 0],
      ['group', 3],
    ] as const) {
      const judged = judgeBits((entry.mode >> shift) & 0o7, isDir, reach[audience], audience);
      if (judged) exposures[audience].push({ ...judged, path: shown(dataDir, path), mode: entry.mode & 0o777 });
    }
  };

  const rootReach = { other: true, group: true }; // what lies above the data dir is not judged
  judge(dataDir, root, rootReach);
  const queue: Dir[] = [{ path: dataDir, depth: 0, mode: root.mode, reach: rootReach }];
  let examined = 0;
  let unreadable = 0;
  let truncated = false;
  walk: for (let next = 0; next < queue.length; next++) {
    const dir = queue[next]!;
    let names: string[];
    try {
      names = (await probe.list(dir.path)).sort();
    } catch {
      unreadable++;
      continue;
    }
    if (names.length > 0 && dir.depth >= limits.maxDepth) {
      truncated = true;
      continue;
    }
    const reach = {
      other: dir.reach.other && (dir.mode & 0o001) !== 0,
      group: dir.reach.group && (dir.mode & 0o010) !== 0,
    };
    for (const name of names) {
      if (examined >= limits.maxEntries) {
        truncated = true;
        break walk;
      }
      examined++;
      const path = probe.join(dir.path, name);
      let entry: ProbeEntry | null;
      try {
        entry = await probe.entry(path, false);
      } catch {
        unreadable++;
        continue;
      }
      if (entry === null || entry.kind === 'symlink') continue; // gone meanwhile, or a link: not followed
      judge(path, entry, reach);
      if (entry.kind === 'dir') queue.push({ path, depth: dir.depth + 1, mode: entry.mode, reach });
    }
  }

  const out: SecurityFinding[] = [];
  if (exposures.other.length > 0) out.push(exposureFinding('data.world_accessible', dataDir, exposures.other));
  if (exposures.group.length > 0) out.push(exposureFinding('data.group_accessible', dataDir, exposures.group));
  if (truncated || unreadable > 0) {
    const why = [
      ...(truncated
        ? [
            `the walk stopped at its bound (${limits.maxEntries} entries, ${limits.maxDepth} levels) after ${examined} entries`,
          ]
        : []),
      ...(unreadable > 0 ? [`${unreadable} path(s) could not be read`] : []),
    ];
    out.push(
      finding(
        'data.scan_incomplete',
        'info',
        `${dataDir} was checked in part: ${why.join('; ')}.`,
        "Keep only the gateway's files in the data dir, or check the rest by hand (e.g. `find DATA_DIR -perm /077`).",
      ),
    );
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------------------
// The whole audit
// ---------------------------------------------------------------------------------------------------------------

/** Sorts findings worst first (then by id) and counts them by severity. */
export function reportOf(findings: readonly SecurityFinding[]): SelfAuditReport {
  const sorted = [...findings].sort(
    (a, b) => SEVERITIES.indexOf(a.severity) - SEVERITIES.indexOf(b.severity) || a.id.localeCompare(b.id),
  );
  const summary: Record<Severity, number> = { critical: 0, warning: 0, info: 0 };
  for (const f of sorted) summary[f.severity]++;
  return { findings: sorted, summary };
}

/** Audits a configuration and its data dir (`config.data_dir`, an absolute path once loaded). */
export async function runSelfAudit(
  config: Config,
  probe: FileProbe,
  limits: WalkLimits = DATA_WALK_LIMITS,
): Promise<SelfAuditReport> {
  return reportOf([...auditConfig(config), ...(await auditDataDir(config.data_dir, probe, limits))]);
}

/** True when any finding is critical (`gatehouse security audit` then exits 1). */
export function hasCritical(report: SelfAuditReport): boolean {
  return report.summary.critical > 0;
}
