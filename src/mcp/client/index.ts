/**
 * MCP servers whose tools the agents call (DECISIONS §19): each a supervised connection, its tools offered as
 * `mcp__<server>__<tool>`.
 */
export {
  childEnvironment,
  openMcpClients,
  shownUrl,
  type McpClientDeps,
  type McpClients,
  type McpHealth,
} from './mcp-clients.js';
export { DEFAULT_MCP_BACKOFF, type McpBackoffPolicy, type McpServerState } from './mcp-supervisor.js';
export type { McpTimers } from './mcp-stdio.js';
export type { McpServerView } from './mcp-clients.schema.js';
