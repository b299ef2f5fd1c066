import { errors } from '../../http/errors.js';
import { defineRoute, type RouteDef } from '../../http/route.js';
import { mcpServerListSchema, mcpServerParams, mcpServerSchema, type McpServerView } from './mcp-clients.schema.js';

/** What the routes read and do. */
export interface McpClientRoutesDeps {
  views(): McpServerView[];
  view(name: string): McpServerView | null;
  restart(name: string): Promise<McpServerView | null>;
}

/** GET /mcp/servers, GET /mcp/servers/{name}, POST /mcp/servers/{name}/restart (admin; DECISIONS §19). */
export function mcpClientRoutes(deps: McpClientRoutesDeps): RouteDef[] {
  return [
    defineRoute({
      method: 'GET',
      path: '/mcp/servers',
      permission: 'admin',
      summary: 'The configured MCP servers: state, tools, last error',
      tags: ['mcp'],
      responses: [{ status: 200, description: 'The servers', schema: mcpServerListSchema }],
      handler: () => ({ items: deps.views() }),
    }),
    defineRoute({
      method: 'GET',
      path: '/mcp/servers/:name',
      permission: 'admin',
      summary: 'One configured MCP server',
      tags: ['mcp'],
      params: mcpServerParams,
      responses: [{ status: 200, description: 'The server', schema: mcpServerSchema }],
      handler: (_ctx, { params }) => {
        const view = deps.view(params.name);
        if (!view) throw errors.notFound('MCP server');
        return view;
      },
    }),
    defineRoute({
      method: 'POST',
      path: '/mcp/servers/:name/restart',
      permission: 'admin',
      rateGroup: 'lifecycle',
      summary: 'Restart one MCP server now (the backoff is reset)',
      tags: ['mcp'],
      params: mcpServerParams,
      responses: [{ status: 200, description: 'The server, connecting again', schema: mcpServerSchema }],
      handler: async (_ctx, { params }) => {
        const view = await deps.restart(params.name);
        if (!view) throw errors.notFound('MCP server');
        return view;
      },
    }),
  ];
}
