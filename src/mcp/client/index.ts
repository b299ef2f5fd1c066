/**
 * MCP servers whose tools the agents call (DECISIONS §19): each a supervised connection, its tools offered as
 * `mcp__<server>__<tool>`.
 */
export { openMcpClients, type McpClientDeps, type McpClients } from './mcp-clients.js';
