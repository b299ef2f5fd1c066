import { agentIdsOf, defaultAgentOf, globMatches, MAIN_AGENT, mayUseAgent } from '../config/config.references.js';
import type { Config } from '../config/config.schema.js';
import { errors } from '../http/errors.js';
import type { Principal } from '../http/route.js';
import { createProvider, type AgentOptions, type ModelProvider, type ToolRegistry } from '../runtime/index.js';
import type { SessionAgent, SpendCap } from '../turns/index.js';

/** Where a new session comes from: what bindings match on (DECISIONS §17). */
export interface SessionSource {
  channel: string;
  platform?: string;
  chatId?: string;
  userId?: string;
  /** The principal whose request creates it. */
  principal: string;
}

/** One agent as configured now (the `agents` block, or `main` made of the top-level blocks). */
export interface AgentProfile {
  id: string;
  /** The provider block it runs on: its own keys over the top-level ones. */
  provider: Config['provider'];
  systemPrompt: string | null;
  tools: { allow: readonly string[]; deny: readonly string[] };
  approvalRequired: readonly string[];
  memoryScope: 'principal' | 'agent';
  dailyBudgetUsd: number | null;
}

/** The agents of a configuration, in configured order. */
export function agentProfiles(config: Config): AgentProfile[] {
  const entries = Object.entries(config.agents);
  if (entries.length === 0) {
    return [
      {
        id: MAIN_AGENT,
        provider: config.provider,
        systemPrompt: config.agent.system_prompt,
        tools: { allow: ['*'], deny: [] },
        approvalRequired: config.agent.approval_required,
        memoryScope: 'principal',
        dailyBudgetUsd: null, // the top-level budget is the gateway's, checked for every turn
      },
    ];
  }
  return entries.map(([id, entry]) => {
    const own = Object.fromEntries(Object.entries(entry.provider ?? {}).filter(([, value]) => value !== undefined));
    const provider: Config['provider'] = { ...config.provider, ...own };
    provider.pricing = { ...config.provider.pricing, ...(entry.provider?.pricing ?? {}) };
    return {
      id,
      provider,
      systemPrompt: entry.system_prompt,
      tools: entry.tools,
      approvalRequired: entry.approval_required,
      memoryScope: entry.memory_scope,
      dailyBudgetUsd: entry.budget.daily_usd,
    };
  });
}

/** True when `name` is allowed by `allow` and not denied by `deny` (names or globs). */
export function toolAllowed(tools: AgentProfile['tools'], name: string): boolean {
  return tools.allow.some((p) => globMatches(p, name)) && !tools.deny.some((p) => globMatches(p, name));
}

/** What the roster needs from the gateway. */
export interface AgentRosterOptions {
  config: Config;
  /** The gateway's provider (tracked for health): every agent on the top-level provider block shares it. */
  provider: ModelProvider;
  tools: ToolRegistry;
  systemContext?: AgentOptions['systemContext'];
  /** The agent and owner of an existing session (its row), null when there is none. */
  sessionOf(sessionKey: string): Promise<{ agent: string; principal: string } | null>;
  /** Builds another agent's provider, lazily (tests inject one); default `createProvider`. */
  createProvider?: (config: Config['provider']) => ModelProvider;
}

/** Sessions whose agent is remembered (an agent never changes, so this only saves reads). */
const SESSION_AGENT_CACHE = 4096;

/**
 * The agents behind the gateway (DECISIONS §17): which agent a new session
 * gets (bindings, a requested agent, the default), whether a principal may
 * use one (§18), and the options a turn of a session runs with. Live
 * configuration (prompts, tools, approvals, budgets, bindings, new agents)
 * applies to turns that start afterwards; an agent's provider is built once,
 * lazily, on its first turn (a provider change needs a restart).
 */
export class AgentRoster {
  private config: Config;
  private profiles = new Map<string, AgentProfile>();
  private readonly providers = new Map<string, ModelProvider>();
  private readonly options = new Map<string, AgentOptions>();
  private readonly sessions = new Map<string, { agent: string; principal: string }>();

  constructor(private readonly deps: AgentRosterOptions) {
    this.config = deps.config;
    this.reconfigure(deps.config);
  }

  /** Applies a new configuration to turns and sessions that start from now on. */
  reconfigure(config: Config): void {
    this.config = config;
    this.profiles = new Map(agentProfiles(config).map((profile) => [profile.id, profile]));
    this.options.clear();
  }

  /** Every agent id, in configured order. */
  ids(): string[] {
    return agentIdsOf(this.config);
  }

  /** The agent `id` as configured now; undefined when there is none. */
  profile(id: string): AgentProfile | undefined {
    return this.profiles.get(id);
  }

  /** The agent of a session no binding matches. */
  defaultAgent(): string {
    return defaultAgentOf(this.config);
  }

  /** True when `principal` may start sessions with agent `id`: admins may use every agent. */
  mayUse(principal: Pick<Principal, 'id' | 'role'>, id: string): boolean {
    return mayUseAgent(this.config, principal, id);
  }

  /**
   * The agents `principal` may use that a configuration names (an `agents` block): none for the one implicit
   * `main`, so a single-agent gateway offers exactly what it offered before agents.
   */
  namedFor(principal: Pick<Principal, 'id' | 'role'>): string[] {
    return Object.keys(this.config.agents).length > 0 ? this.usableBy(principal) : [];
  }

  /** The agents `principal` may use, in configured order. */
  usableBy(principal: Pick<Principal, 'id' | 'role'>): string[] {
    return this.ids().filter((id) => this.mayUse(principal, id));
  }

  /**
   * The agent a new session gets: the requested one (404 when unknown, 403
   * when the principal may not use it), else the binding with the most
   * matching keys (the first on a tie), else the default agent.
   */
  choose(source: SessionSource, principal: Pick<Principal, 'id' | 'role'>, requested?: string): string {
    if (requested !== undefined) {
      if (!this.profiles.has(requested)) throw errors.notFound('agent');
      if (!this.mayUse(principal, requested)) throw errors.forbidden(`this token may not use agent "${requested}"`);
      return requested;
    }
    return this.bound(source)?.agent ?? this.defaultAgent();
  }

  /** The binding that decides a session from `source`, or null when none matches. */
  bound(source: SessionSource): Config['bindings'][number] | null {
    const values: Record<string, string | undefined> = {
      channel: source.channel,
      platform: source.platform,
      chat_id: source.chatId,
      user_id: source.userId,
      principal: source.principal,
    };
    let best: Config['bindings'][number] | null = null;
    let bestKeys = -1;
    for (const binding of this.config.bindings) {
      const keys = Object.entries(binding.match).filter(([, value]) => value !== undefined);
      if (!keys.every(([key, value]) => values[key] === value)) continue;
      if (keys.length > bestKeys) {
        best = binding;
        bestKeys = keys.length;
      }
    }
    return best;
  }

  /** The options a turn of `agentId` runs with, as configured now (an unknown agent runs as the default). */
  optionsFor(agentId: string): AgentOptions {
    const id = this.profiles.has(agentId) ? agentId : this.defaultAgent();
    const cached = this.options.get(id);
    if (cached) return cached;
    const profile = this.profiles.get(id)!;
    const options: AgentOptions = {
      provider: this.providerFor(profile),
      tools: this.deps.tools.view((name) => toolAllowed(profile.tools, name)),
      systemPrompt: profile.systemPrompt,
      maxToolIterations: this.config.agent.max_tool_iterations,
      approvalRequired: new Set(profile.approvalRequired),
      pricing: profile.provider.pricing,
      ...(this.deps.systemContext ? { systemContext: this.deps.systemContext } : {}),
    };
    this.options.set(id, options);
    return options;
  }

  /**
   * The agent that runs `sessionKey`'s turns, with its options, and the spend
   * caps besides the gateway's: its agent's and its owner's (DECISIONS §17-18).
   */
  async forSession(sessionKey: string): Promise<SessionAgent> {
    let session = this.sessions.get(sessionKey);
    if (session === undefined) {
      session = (await this.deps.sessionOf(sessionKey)) ?? { agent: this.defaultAgent(), principal: 'default' };
      if (this.sessions.size >= SESSION_AGENT_CACHE) this.sessions.delete(this.sessions.keys().next().value!);
      this.sessions.set(sessionKey, session);
    }
    const options = this.optionsFor(session.agent);
    const caps: SpendCap[] = [];
    const agentCap = this.profiles.get(session.agent)?.dailyBudgetUsd ?? null;
    if (agentCap !== null) caps.push({ usd: agentCap, agent: session.agent });
    const owner = this.config.gateway.auth.principals.find((p) => p.id === session.principal);
    if (owner?.budget.daily_usd != null) caps.push({ usd: owner.budget.daily_usd, principal: owner.id });
    return {
      options,
      caps,
      memoryOwner: this.memoryOwner(session, owner !== undefined),
      principal: session.principal,
      agent: session.agent,
    };
  }

  /**
   * Whose memory a session's turns use: the agent's own with `memory_scope:
   * agent`, else its owner's when the owner is a configured principal. The
   * built-in principals and the platform channels share the default
   * principal's, so a single-owner gateway keeps one memory, as before.
   */
  private memoryOwner(session: { agent: string; principal: string }, configured: boolean): string {
    if (this.profiles.get(session.agent)?.memoryScope === 'agent') return `agent:${session.agent}`;
    return `principal:${configured ? session.principal : 'default'}`;
  }

  /** Forgets a session's agent and owner (deleted: a revived key decides again). */
  forget(sessionKey: string): void {
    this.sessions.delete(sessionKey);
  }

  private providerFor(profile: AgentProfile): ModelProvider {
    const key = providerKey(profile.provider);
    if (key === providerKey(this.deps.config.provider)) return this.deps.provider;
    let provider = this.providers.get(key);
    if (!provider) {
      provider = (this.deps.createProvider ?? createProvider)(profile.provider);
      this.providers.set(key, provider);
    }
    return provider;
  }
}

/** What makes two provider blocks the same provider (pricing is read per turn, not part of it). */
function providerKey(provider: Config['provider']): string {
  const { pricing: _pricing, ...rest } = provider;
  return JSON.stringify(rest);
}
