/**
 * Gatehouse's own MCP server at /mcp (DECISIONS §19): Streamable HTTP for api tokens, every tool principal-scoped.
 */
export { mcpServerRoutes, mcpTools, type McpServerDeps } from './mcp-server.routes.js';
export { MCP_PLATFORM } from './mcp-server.send.js';
