import { createHash } from 'node:crypto';
import type { Config, ConfigIssue } from './config.schema.js';

/** The id of the one agent of a configuration without an `agents` block (DECISIONS §17). */
export const MAIN_AGENT = 'main';

/** The principal of `api_tokens` and `admin_tokens` (DECISIONS §18). */
export const DEFAULT_PRINCIPAL = 'default';

/** The principal of the generated first-start admin token. */
export const ADMIN_PRINCIPAL = 'admin';

/** Ids no configured principal may take: the built-in ones. */
const RESERVED_PRINCIPALS = new Set([DEFAULT_PRINCIPAL, ADMIN_PRINCIPAL, 'anonymous']);

/** The agents of a configuration, by id: the `agents` block, or `main` alone. */
export function agentIdsOf(config: Pick<Config, 'agents'>): string[] {
  const ids = Object.keys(config.agents);
  return ids.length > 0 ? ids : [MAIN_AGENT];
}

/** The agent of a session no binding matches: `default_agent`, else `main` if defined, else the first agent. */
export function defaultAgentOf(config: Pick<Config, 'agents' | 'default_agent'>): string {
  const ids = agentIdsOf(config);
  if (config.default_agent !== null) return config.default_agent;
  return ids.includes(MAIN_AGENT) ? MAIN_AGENT : ids[0]!;
}

/** True when `name` matches `pattern`, a name or a glob (`*` any run of characters). */
export function globMatches(pattern: string, name: string): boolean {
  if (!pattern.includes('*')) return pattern === name;
  const parts = pattern.split('*');
  const first = parts[0]!;
  const last = parts[parts.length - 1]!;
  if (!name.startsWith(first) || name.length < first.length + last.length || !name.endsWith(last)) return false;
  let at = first.length;
  for (const part of parts.slice(1, -1)) {
    const found = name.indexOf(part, at);
    if (found === -1 || found + part.length > name.length - last.length) return false;
    at = found + part.length;
  }
  return true;
}

/**
 * True when the principal `principalId` (of `role`) may use agent `id` (DECISIONS §18): admins every agent; a
 * configured principal those its `agents` globs match; the built-in and channel principals every agent.
 */
export function mayUseAgent(
  config: Pick<Config, 'gateway'>,
  principal: { id: string; role: string },
  id: string,
): boolean {
  if (principal.role === 'admin') return true;
  const configured = config.gateway.auth.principals.find((p) => p.id === principal.id);
  if (!configured) return true;
  return configured.agents.some((pattern) => globMatches(pattern, id));
}

/**
 * What the schema alone cannot check: names that must refer to something
 * configured elsewhere, and tokens that must belong to one principal only.
 * Each issue names the key; no issue repeats a secret.
 */
export function referenceIssues(config: Config): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  const agents = agentIdsOf(config);
  const known = `known: ${agents.join(', ')}`;
  if (config.default_agent !== null && !agents.includes(config.default_agent)) {
    issues.push({ path: 'default_agent', message: `names an unknown agent "${config.default_agent}" (${known})` });
  }
  const principals = config.gateway.auth.principals;
  const principalIds = new Set([DEFAULT_PRINCIPAL, ...principals.map((p) => p.id)]);
  config.bindings.forEach((binding, i) => {
    if (!agents.includes(binding.agent)) {
      issues.push({ path: `bindings.${i}.agent`, message: `names an unknown agent "${binding.agent}" (${known})` });
    }
    if (binding.owner !== null && !principalIds.has(binding.owner)) {
      issues.push({ path: `bindings.${i}.owner`, message: `names an unknown principal "${binding.owner}"` });
    }
  });

  /** Which principal each token digest belongs to, for the duplicate check. */
  const owners = new Map<string, string>();
  const claim = (digest: string, owner: string, path: string): void => {
    const earlier = owners.get(digest);
    if (earlier !== undefined && earlier !== owner) {
      issues.push({ path, message: `duplicate token: it is also a token of principal "${earlier}"` });
    } else if (earlier === owner && owner !== DEFAULT_PRINCIPAL) {
      issues.push({ path, message: 'duplicate token: listed twice for this principal' });
    }
    owners.set(digest, owner);
  };
  const sha256 = (token: string): string => createHash('sha256').update(token, 'utf8').digest('hex');
  config.gateway.auth.api_tokens.forEach((t, j) => claim(sha256(t), DEFAULT_PRINCIPAL, `gateway.auth.api_tokens.${j}`));
  config.gateway.auth.admin_tokens.forEach((t, j) =>
    claim(sha256(t), DEFAULT_PRINCIPAL, `gateway.auth.admin_tokens.${j}`),
  );
  const seen = new Set<string>();
  principals.forEach((principal, i) => {
    const at = `gateway.auth.principals.${i}`;
    if (RESERVED_PRINCIPALS.has(principal.id)) {
      issues.push({ path: `${at}.id`, message: `"${principal.id}" is a built-in principal; choose another id` });
    } else if (seen.has(principal.id)) {
      issues.push({ path: `${at}.id`, message: `duplicate principal id "${principal.id}"` });
    }
    seen.add(principal.id);
    principal.tokens.forEach((t, j) => claim(sha256(t), principal.id, `${at}.tokens.${j}`));
    principal.token_sha256.forEach((hex, j) => claim(hex, principal.id, `${at}.token_sha256.${j}`));
    principal.agents.forEach((pattern, j) => {
      if (!pattern.includes('*') && !agents.includes(pattern)) {
        issues.push({ path: `${at}.agents.${j}`, message: `names an unknown agent "${pattern}" (${known})` });
      }
    });
  });
  return issues;
}

/** The prefix of an MCP server's tools as the agents see them: `mcp__<server>__<tool>` (DECISIONS §19). */
export const MCP_TOOL_PREFIX = 'mcp__';

/**
 * Tool names in the agents' `tools.allow`, `tools.deny` and `approval_required` that name no tool (DECISIONS §17): a plain name must be one of `known` or an MCP tool of a configured server
 * (`mcp__<server>__<tool>`; its tools are listed only once it runs); a glob must match one of `known` or start
 * with `mcp__`. Each issue names the key.
 */
export function toolNameIssues(config: Pick<Config, 'agents' | 'mcp'>, known: readonly string[]): ConfigIssue[] {
  const servers = Object.keys(config.mcp.servers);
  const names = (pattern: string): boolean => {
    if (pattern.startsWith(MCP_TOOL_PREFIX)) {
      if (pattern.includes('*') && !pattern.slice(MCP_TOOL_PREFIX.length).includes('__')) return true;
      return servers.some((server) => pattern.startsWith(`${MCP_TOOL_PREFIX}${server}__`));
    }
    return known.some((name) => globMatches(pattern, name));
  };
  const issues: ConfigIssue[] = [];
  const check = (list: readonly string[], path: string): void => {
    list.forEach((pattern, i) => {
      if (!names(pattern)) {
        const what = pattern.startsWith(MCP_TOOL_PREFIX) ? 'names a tool of no configured MCP server' : 'names no tool';
        issues.push({ path: `${path}.${i}`, message: `"${pattern}" ${what} (tools: ${known.join(', ')})` });
      }
    });
  };
  for (const [id, agent] of Object.entries(config.agents)) {
    check(agent.tools.allow, `agents.${id}.tools.allow`);
    check(agent.tools.deny, `agents.${id}.tools.deny`);
    check(agent.approval_required, `agents.${id}.approval_required`);
  }
  return issues;
}

/** `toolNameIssues` against the tools `registry` has when it is asked (a configuration change's check). */
export function toolNamesCheck(registry: { names(): string[] }): (config: Config) => ConfigIssue[] {
  return (config) => toolNameIssues(config, registry.names());
}
