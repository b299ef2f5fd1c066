/** The Model Context Protocol both ways (DECISIONS §19). */
export { mcpModule, type McpModuleDeps } from './mcp.module.js';
