import type { GatewayModule } from '../module.js';
import type { ToolRegistry } from '../runtime/index.js';
import { openMcpClients, type McpClientDeps, type McpHealth } from './client/index.js';
import { mcpServerRoutes, type McpServerDeps } from './server/index.js';

/** What the MCP capability uses: the server's deps, the client's, and the registry its tools join. */
export interface McpModuleDeps extends McpServerDeps, McpClientDeps {
  tools: Pick<ToolRegistry, 'attach'>;
}

/**
 * The Model Context Protocol both ways (DECISIONS §19), opened: its module (the /mcp server, and the configured
 * MCP servers whose tools reach the agents, connected at start and stopped with the backends once the running
 * turns have ended) and the servers' health, for the health report's `mcp` component.
 */
export function openMcp(deps: McpModuleDeps): { module: GatewayModule; health: () => McpHealth } {
  const clients = openMcpClients(deps);
  deps.tools.attach(clients.tools);
  return {
    module: {
      name: 'mcp',
      routes: [...mcpServerRoutes(deps), ...clients.routes],
      start: () => clients.start(),
      stop: { backends: () => clients.close() },
    },
    health: () => clients.health(),
  };
}
