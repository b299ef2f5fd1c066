import { mayUseAgent } from '../config/config.references.js';
import type { Config } from '../config/config.schema.js';
import type { Principal } from '../http/route.js';
import { isolatedPrincipal } from '../sessions/index.js';

/**
 * The configuration as `principal` may read it (DECISIONS §18, ADR 0037): a configured api principal sees
 * its own entry of `gateway.auth.principals`, the agents it may use and the bindings that lead to them and
 * create sessions it would own (no owner, or itself), so neither another principal's name nor its budget
 * leaks through GET /config. Everyone else reads the whole configuration. Secrets are redacted after this.
 */
export function configFor(config: Config, principal: Pick<Principal, 'id' | 'role'>): Config {
  const own = isolatedPrincipal(principal);
  if (own === null) return config;
  const may = (agent: string): boolean => mayUseAgent(config, principal, agent);
  return {
    ...config,
    gateway: {
      ...config.gateway,
      auth: { ...config.gateway.auth, principals: config.gateway.auth.principals.filter((p) => p.id === own) },
    },
    agents: Object.fromEntries(Object.entries(config.agents).filter(([id]) => may(id))),
    bindings: config.bindings.filter((b) => (b.owner === null || b.owner === own) && may(b.agent)),
  };
}
