/** The Model Context Protocol both ways (DECISIONS §19). */
export { openMcp, type McpModuleDeps } from './mcp.module.js';
