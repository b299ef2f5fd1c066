import type { AgentRoster } from '../agents/index.js';
import type { Config } from '../config/config.schema.js';
import type { Guard } from '../http/guard.js';
import type { IdGenerator } from '../lib/ids.js';
import type { Logger } from '../lib/logger.js';
import type { GatewayModule } from '../module.js';
import type { SessionService } from '../sessions/index.js';
import type { MessagePath } from '../turns/index.js';
import { a2aRoutes } from './a2a.routes.js';

/** What the A2A capability uses: the door, the sessions (ownership), the agents, and the guard (cards' tokens). */
export interface A2AModuleDeps {
  config: Config;
  logger: Logger;
  ids: IdGenerator;
  messages: Pick<MessagePath, 'submit' | 'waitFor' | 'turn' | 'follow' | 'interrupt'>;
  sessions: Pick<SessionService, 'require'>;
  agents: { roster: Pick<AgentRoster, 'mayUse' | 'defaultAgent' | 'ids'> };
  guard: Pick<Guard, 'principalForToken'>;
  /** How long a blocking SendMessage waits for the turn's outcome (the gateway's reply timeout). */
  replyTimeoutMs: number;
}

/** The Agent2Agent protocol (DECISIONS §22): agent cards and the JSON-RPC endpoints, on the turn ledger. */
export function a2aModule(deps: A2AModuleDeps): GatewayModule {
  return {
    name: 'a2a',
    routes: a2aRoutes({
      ...deps,
      agents: deps.agents.roster,
      tokenHeader: deps.config.gateway.auth.token_header,
    }),
  };
}
