import { DEFAULT_PRINCIPAL, globMatches } from '../config/config.references.js';
import type { Config } from '../config/config.schema.js';
import { isLoopbackHost, isWildcardHostEntry, normalizeHost } from '../security/host-origin.js';
import { fingerprintToken } from '../security/tokens.js';
import { finding, quoted, type SecurityFinding } from './self-audit.findings.js';
import {
  CRITICAL_TOKEN_LENGTH,
  judgeSecret,
  MIN_DISTINCT_CHARACTERS,
  MIN_TOKEN_LENGTH,
  MIN_WHSEC_BYTES,
  webhookSecretWeakness,
  type SecretWeakness,
} from './self-audit.secrets.js';

/**
 * The self-audit's checks of the configuration (ADR 0023): each a pure
 * function of the validated configuration, no file system. A token is named
 * by its place in the configuration and its fingerprint, never by its value.
 */

/** Binds that accept every interface, loopback included (a local proxy can reach them over 127.0.0.1). */
function isWildcardBind(host: string): boolean {
  const trimmed = host.trim();
  return trimmed === '' || trimmed === '0.0.0.0' || trimmed === '::' || trimmed === '[::]';
}

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
// Tokens
// ---------------------------------------------------------------------------------------------------------------

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

/**
 * `auth.admin_token_rotation` (info): a configured principal with role
 * `admin` and tokens (raw or as digests) whose `tokens_rotated_at` is null, so
 * nothing records when its tokens were last replaced. The audit has no clock,
 * so only a missing date is reported, not an old one. The principal is named
 * by its place and id, never by a token.
 */
export function checkAdminRotation(config: Config): SecurityFinding[] {
  const labels: string[] = [];
  config.gateway.auth.principals.forEach((principal, index) => {
    if (principal.role !== 'admin' || principal.tokens_rotated_at !== null) return;
    if (principal.tokens.length === 0 && principal.token_sha256.length === 0) return; // nothing to rotate
    labels.push(`gateway.auth.principals[${index}].tokens_rotated_at (principal ${quoted(principal.id)})`);
  });
  if (labels.length === 0) return [];
  return [
    finding(
      'auth.admin_token_rotation',
      'info',
      `${listing(labels)} ${labels.length === 1 ? 'is' : 'are'} not set: nothing records when ` +
        `${labels.length === 1 ? "this admin's tokens were" : "these admins' tokens were"} last replaced, so a ` +
        'leaked admin token can stay valid unnoticed.',
      'Replace the admin tokens with new random ones (e.g. `openssl rand -base64 32`; token_sha256 keeps them out ' +
        'of the file), set tokens_rotated_at to that date (YYYY-MM-DD), and rotate them again at least every 90 days.',
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

// ---------------------------------------------------------------------------------------------------------------
// MCP servers (DECISIONS §19)
// ---------------------------------------------------------------------------------------------------------------

/** `<name>` → `mcp.servers.<name>.<key>`. */
const mcpKey = (name: string, key: string): string => `mcp.servers.${name}.${key}`;

/**
 * `mcp.plain_http` (warning): an http MCP server whose url is `http://` to a
 * host that is not loopback (`*.localhost` counts as loopback, as the
 * outbound guard takes it). Its configured headers (often a bearer token),
 * the tool calls and their results cross the network in clear, and whoever
 * is on the path can rewrite what the tools answer. One finding lists every
 * such server, and the names (never the values) of the headers it sends.
 */
export function checkMcpTransport(config: Config): SecurityFinding[] {
  const clauses = Object.entries(config.mcp.servers).flatMap(([name, server]) => {
    if (server.transport !== 'http') return [];
    const host = plainHttpOffLoopback(server.url);
    if (host === null || isLocalhostSubdomain(host)) return [];
    const headers = Object.keys(server.headers);
    const sent = headers.length === 0 ? '' : ` with header${headers.length === 1 ? '' : 's'} ${listing(headers)}`;
    return [`${mcpKey(name, 'url')} uses http:// to ${host}${sent}`];
  });
  if (clauses.length === 0) return [];
  const one = clauses.length === 1;
  return [
    finding(
      'mcp.plain_http',
      'warning',
      `${clauses.join('; ')}: ${one ? "the server's" : "each server's"} headers (often a bearer token), every tool ` +
        'call and every result cross the network unencrypted, and anyone on the path can change what the tools ' +
        'answer the agent.',
      'Use an https:// url in mcp.servers.<name>.url, or reach the server over loopback (an SSH tunnel or a ' +
        'local TLS proxy).',
    ),
  ];
}

/** `mcp.localhost:8080` → true: a name under `.localhost`, which the outbound guard takes as loopback. */
function isLocalhostSubdomain(host: string): boolean {
  let hostname: string;
  try {
    hostname = new URL(`http://${host}`).hostname;
  } catch {
    return false;
  }
  return hostname.replace(/\.$/, '').endsWith('.localhost');
}

/**
 * `mcp.inherit_env` (warning): a stdio server with `inherit_env: true` is
 * started with the gateway's whole environment, so the program (and
 * whatever it runs or is made to run) can read every secret the gateway got
 * that way. One finding lists every such server.
 */
export function checkMcpEnvironment(config: Config): SecurityFinding[] {
  const labels = Object.entries(config.mcp.servers)
    .filter(([, server]) => server.transport === 'stdio' && server.inherit_env)
    .map(([name]) => mcpKey(name, 'inherit_env'));
  if (labels.length === 0) return [];
  const one = labels.length === 1;
  return [
    finding(
      'mcp.inherit_env',
      'warning',
      `${listing(labels)} ${one ? 'is' : 'are'} true: ${one ? "the server's program gets" : 'each server gets'} ` +
        "the gateway's whole environment, so every secret passed to the gateway that way (OPENAI_API_KEY, " +
        'ANTHROPIC_API_KEY, GATEHOUSE_TOKEN, channel and database credentials) can be read, logged or sent on by ' +
        'the server and by anything it runs.',
      'Set mcp.servers.<name>.inherit_env: false and give the server only the variables it needs in ' +
        'mcp.servers.<name>.env (PATH is passed either way).',
    ),
  ];
}

/**
 * `mcp.allow_private_targets`: on, the outbound guard lets http MCP servers
 * be on loopback, private and link-local addresses, so a server's name that
 * resolves (or comes to resolve) there turns the gateway's requests, headers
 * included, on services of this machine or the LAN (SSRF). Warning while an
 * http server is configured, info when none is (one added later, by PATCH
 * /config too, would be let through).
 */
export function checkMcpPrivateTargets(config: Config): SecurityFinding[] {
  if (!config.mcp.allow_private_targets) return [];
  const http = Object.entries(config.mcp.servers)
    .filter(([, server]) => server.transport === 'http')
    .map(([name]) => mcpKey(name, 'url'));
  const fix =
    'Set mcp.allow_private_targets: false unless an http MCP server must run on this machine or the LAN; for ' +
    'a server on this machine prefer transport: stdio, which needs no network at all.';
  if (http.length === 0) {
    return [
      finding(
        'mcp.allow_private_targets',
        'info',
        'mcp.allow_private_targets is true while no http MCP server is configured: one added later (PATCH ' +
          '/config included) may be reached on this machine and the LAN.',
        fix,
      ),
    ];
  }
  return [
    finding(
      'mcp.allow_private_targets',
      'warning',
      `mcp.allow_private_targets is true, so the gateway calls ${listing(http)} on loopback, private and ` +
        'link-local addresses too: a name that resolves, or comes to resolve, to this machine or the LAN makes ' +
        'the gateway send its requests, with their headers, to services there (SSRF). Cloud metadata addresses ' +
        'stay refused.',
      fix,
    ),
  ];
}

/**
 * `subscriptions.allow_private_targets` (warning): subscription URLs may
 * resolve to loopback, private and link-local addresses, so whoever holds an
 * admin token can make the gateway POST signed events to services of this
 * machine or the LAN (SSRF). `subscriptions.allow_http` (warning): events,
 * which carry message text and replies, may travel unencrypted.
 */
export function checkSubscriptionTargets(config: Config): SecurityFinding[] {
  const found: SecurityFinding[] = [];
  if (config.subscriptions.allow_private_targets) {
    found.push(
      finding(
        'subscriptions.allow_private_targets',
        'warning',
        'subscriptions.allow_private_targets is true, so a subscription URL may resolve to loopback, private and ' +
          'link-local addresses: the gateway then sends its event POSTs to services on this machine or the LAN ' +
          '(SSRF). Cloud metadata addresses stay refused.',
        'Set subscriptions.allow_private_targets: false unless a receiver must run on this machine or the LAN.',
      ),
    );
  }
  if (config.subscriptions.allow_http) {
    found.push(
      finding(
        'subscriptions.allow_http',
        'warning',
        'subscriptions.allow_http is true, so events (message text and replies included) may be sent over plain ' +
          'HTTP, readable and alterable on the way; the signature proves the sender, it hides nothing.',
        'Set subscriptions.allow_http: false and give receivers https:// URLs.',
      ),
    );
  }
  return found;
}

// ---------------------------------------------------------------------------------------------------------------
// Agents (DECISIONS §17) and the principals that use them (§18)
// ---------------------------------------------------------------------------------------------------------------

/**
 * `agents.tools_without_approval` (warning): an agent of the `agents` block
 * whose `tools.allow` holds `*` while its `approval_required` is empty, so
 * every tool runs without a person's approval. The implicit `main` of a
 * configuration without an `agents` block is not reported: it is the
 * single-owner default, and a fresh install gets no finding from it.
 */
export function checkAgentApprovals(config: Config): SecurityFinding[] {
  const labels = Object.entries(config.agents)
    .filter(([, agent]) => agent.tools.allow.includes('*') && agent.approval_required.length === 0)
    .map(([id]) => `agents.${id}.tools.allow`);
  if (labels.length === 0) return [];
  const one = labels.length === 1;
  return [
    finding(
      'agents.tools_without_approval',
      'warning',
      `${listing(labels)} ${one ? 'holds' : 'hold'} "*" while ${
        one ? "the agent's approval_required is" : "each agent's approval_required is"
      } empty: every tool, built-in or MCP, runs without a person's approval, so a prompt injection in a message, ` +
        'a web page or a document can make the agent act on its own.',
      'List the tools that change things or reach out (shell, file writes, HTTP, MCP tools with side effects) in ' +
        'agents.<id>.approval_required, or narrow agents.<id>.tools.allow to the tools the agent needs.',
    ),
  ];
}

/**
 * The principals that may use agent `id`: configured principals that are
 * admins (they use every agent) or whose `agents` patterns match it, and the
 * built-in `default` principal when `api_tokens` or `admin_tokens` hold a
 * token (it may use every agent).
 */
function principalsUsing(config: Config, id: string): string[] {
  const { auth } = config.gateway;
  const users = auth.api_tokens.length > 0 || auth.admin_tokens.length > 0 ? [DEFAULT_PRINCIPAL] : [];
  for (const principal of auth.principals) {
    if (principal.role === 'admin' || principal.agents.some((pattern) => globMatches(pattern, id))) {
      users.push(principal.id);
    }
  }
  return [...new Set(users)];
}

/**
 * `agents.memory_shared` (info): an agent with `memory_scope: agent` that
 * more than one principal may use keeps one memory for all of them, so what
 * one principal tells it another can recall. Only noted: sharing is what the
 * setting asks for.
 */
export function checkSharedMemory(config: Config): SecurityFinding[] {
  const clauses = Object.entries(config.agents).flatMap(([id, agent]) => {
    if (agent.memory_scope !== 'agent') return [];
    const users = principalsUsing(config, id);
    if (users.length < 2) return [];
    return [`agents.${id}.memory_scope is "agent" while principals ${listing(users.map(quoted))} may use it`];
  });
  if (clauses.length === 0) return [];
  return [
    finding(
      'agents.memory_shared',
      'info',
      `${clauses.join('; ')}: ${clauses.length === 1 ? 'the agent keeps' : 'each such agent keeps'} one memory ` +
        'for all of them, so what one principal tells it the others can recall.',
      'Set agents.<id>.memory_scope: principal to give each principal its own memory, or narrow ' +
        'gateway.auth.principals[].agents so only principals meant to share it may use the agent (admin principals ' +
        'and the api_tokens/admin_tokens principal "default" use every agent).',
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
    ...checkAdminRotation(config),
    ...checkLoopbackTrust(config),
    ...checkWebhook(config),
    ...checkOutboundTransport(config),
    ...checkBudget(config),
    ...checkMcpTransport(config),
    ...checkMcpEnvironment(config),
    ...checkMcpPrivateTargets(config),
    ...checkSubscriptionTargets(config),
    ...checkAgentApprovals(config),
    ...checkSharedMemory(config),
  ];
}
