/**
 * The findings of the security self-audit (ADR 0023): their shape, the
 * catalogue of stable ids with their titles, and the one way to make one.
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
  'auth.admin_token_rotation': 'An admin principal has no record of when its tokens were rotated',
  'security.profile_minimal': 'Security profile minimal: no tokens, no Host/Origin checks, no rate limits',
  'webhook.no_secret': 'The webhook accepts unsigned requests',
  'webhook.secret_weak': 'The webhook secret is weak',
  'webhook.bind_public': 'The webhook server listens on a non-loopback address',
  'provider.plain_http': 'The model provider is reached over plain HTTP off loopback',
  'embeddings.plain_http': 'The embeddings endpoint is reached over plain HTTP off loopback',
  'budget.missing': 'No daily budget with a paid model provider',
  'mcp.plain_http': 'An MCP server is reached over plain HTTP off loopback',
  'mcp.inherit_env': "A stdio MCP server receives the gateway's whole environment",
  'mcp.allow_private_targets': 'MCP servers may be reached on this machine and the LAN',
  'subscriptions.allow_private_targets': 'Event subscriptions may call this machine and the LAN',
  'subscriptions.allow_http': 'Event subscriptions may be sent over plain HTTP',
  'agents.tools_without_approval': 'An agent may call every tool with no approval required',
  'agents.memory_shared': "An agent's memory is shared between principals",
  'data.world_accessible': 'Files in the data dir are open to other users',
  'data.group_accessible': 'Files in the data dir are open to the group',
  'data.scan_incomplete': 'The data dir was not checked completely',
  'data.dir_missing': 'The data dir does not exist yet',
} as const;

/** A finding's stable id. */
export type FindingId = keyof typeof FINDINGS;

/** A finding of the catalogue: its title is the one `FINDINGS` gives its id. */
export function finding(id: FindingId, severity: Severity, found: string, fix: string): SecurityFinding {
  return { id, severity, title: FINDINGS[id], found, fix };
}

/** The worse of two severities. */
export function worse(a: Severity, b: Severity): Severity {
  return SEVERITIES.indexOf(a) <= SEVERITIES.indexOf(b) ? a : b;
}

/** `"0.0.0.0"`: a configured host as shown in a finding. */
export const quoted = (value: string): string => JSON.stringify(value);
