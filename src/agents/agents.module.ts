import type { GatewayModule } from '../module.js';
import { agentRoutes, type AgentRoutesDeps } from './agents.routes.js';

/** The agents capability (DECISIONS §17-18): which agents there are, and who the caller is. */
export function agentsModule(deps: AgentRoutesDeps): GatewayModule {
  return { name: 'agents', routes: agentRoutes(deps) };
}
