import type { RouteDef } from '../../http/route.js';

/** What the /mcp server uses. */
export interface McpServerDeps {
  placeholder?: never;
}

/** The /mcp routes (DECISIONS §19). */
export function mcpServerRoutes(_deps: McpServerDeps): RouteDef[] {
  return [];
}
