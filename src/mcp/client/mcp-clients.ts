import type { Config } from '../../config/config.schema.js';
import type { RouteDef } from '../../http/route.js';
import type { Logger } from '../../lib/logger.js';
import type { Clock } from '../../lib/clock.js';
import type { ToolSource } from '../../runtime/index.js';

/** What the MCP client side uses. */
export interface McpClientDeps {
  config: Config;
  logger: Logger;
  clock: Clock;
}

/** The configured MCP servers, connected. */
export interface McpClients {
  /** Their tools as the agents see them. */
  tools: ToolSource;
  /** GET /mcp/servers and the like (admin). */
  routes: RouteDef[];
  start(): Promise<void>;
  close(): Promise<void>;
}

export function openMcpClients(_deps: McpClientDeps): McpClients {
  return {
    tools: { get: () => undefined, list: () => [] },
    routes: [],
    start: async () => undefined,
    close: async () => undefined,
  };
}
