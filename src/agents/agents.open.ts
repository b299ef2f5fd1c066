import type { Config } from '../config/config.schema.js';
import type { AgentOptions, ModelProvider, ToolRegistry } from '../runtime/index.js';
import { countSessionsByAgent, getSession } from '../sessions/index.js';
import type { SettingsListener } from '../settings/index.js';
import type { Store } from '../store/index.js';
import { agentOrigins } from './agent-origins.js';
import { AgentRoster } from './agent-roster.js';
import { agentsModule } from './agents.module.js';

/** Keys whose change reaches the roster: agents, bindings, the default agent, and what `main` is made of. */
const ROSTER_KEYS = ['agents', 'bindings', 'default_agent', 'agent', 'provider.pricing'];

/**
 * The agents capability, opened (DECISIONS §17-18): the roster over the
 * gateway's provider and tools, what the message path asks it (a new
 * session's origin, a session's agent), its module, and the settings
 * listener that applies live changes to new sessions and turns.
 */
export function openAgents(deps: {
  config: Config;
  store: Store;
  provider: ModelProvider;
  tools: ToolRegistry;
  systemContext?: AgentOptions['systemContext'];
  onChange(listener: SettingsListener): void;
}) {
  const { store, tools } = deps;
  const roster = new AgentRoster({
    config: deps.config,
    provider: deps.provider,
    tools,
    ...(deps.systemContext ? { systemContext: deps.systemContext } : {}),
    sessionOf: async (key) => {
      const session = await getSession(store.db, key);
      return session ? { agent: session.agent, principal: session.principal } : null;
    },
  });
  deps.onChange((next, changed) => {
    if (changed.some((path) => ROSTER_KEYS.some((key) => path === key || path.startsWith(`${key}.`)))) {
      roster.reconfigure(next);
    }
  });
  const origins = agentOrigins(roster);
  return {
    roster,
    /** For `createMessagePath`: a new session's origin, and which agent runs a session's turns. */
    path: { originOf: origins.originOf, forSession: (key: string) => roster.forSession(key) },
    sessionOrigin: origins.sessionOrigin,
    module: agentsModule({ roster, tools, sessionCounts: (principal) => countSessionsByAgent(store.db, principal) }),
  };
}
