import { z } from 'zod';

/** `{name}` of the per-server routes. */
export const mcpServerParams = z.object({ name: z.string().min(1) });

/** One tool a server offers the agents. */
export const mcpServerToolSchema = z
  .object({
    name: z.string().meta({ description: "The server's own name for it" }),
    exposed_as: z.string().meta({ description: 'The name the agents call it by: mcp__<server>__<tool>' }),
    description: z.string(),
    approval: z
      .enum(['always', 'never'])
      .meta({ description: '`always`: a call pauses the turn (waiting_approval) until an admin approves it' }),
  })
  .meta({ id: 'McpServerTool' });

/** A configured MCP server as GET /mcp/servers shows it (DECISIONS §19). */
export const mcpServerSchema = z
  .object({
    name: z.string(),
    transport: z.enum(['stdio', 'http']),
    state: z.enum(['connecting', 'ready', 'failed', 'stopped']).meta({
      description:
        '`connecting`; `ready`: its tools are offered; `failed`: restarted after a delay (1 s doubling to 60 s), ' +
        'except a url the outbound policy refuses (retried only by a restart); `stopped`: the gateway is shutting down',
    }),
    tools: z.array(mcpServerToolSchema).meta({ description: 'The tools offered to the agents (empty unless ready)' }),
    last_error: z
      .string()
      .nullable()
      .meta({ description: 'The last failure (secrets removed); kept once the server is ready again' }),
    restarts: z.number().int().min(0).meta({ description: 'Connections made again since the gateway started' }),
    connected_at: z.string().nullable().meta({ description: 'When the current connection became ready' }),
    command: z
      .string()
      .nullable()
      .meta({ description: 'stdio: the command (its arguments and environment are not shown)' }),
    url: z.string().nullable().meta({ description: 'http: origin and path of the url (no credentials, no query)' }),
  })
  .meta({ id: 'McpServer', description: 'A configured MCP server whose tools the agents may call' });

/** GET /mcp/servers. */
export const mcpServerListSchema = z.object({ items: z.array(mcpServerSchema) }).meta({ id: 'McpServerList' });

export type McpServerView = z.infer<typeof mcpServerSchema>;
