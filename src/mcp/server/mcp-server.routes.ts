import type { AgentRoster } from '../../agents/index.js';
import type { Config } from '../../config/config.schema.js';
import { errors } from '../../http/errors.js';
import { defineRoute, HANDLED, HttpResult, type RouteDef } from '../../http/route.js';
import type { Clock } from '../../lib/clock.js';
import type { IdGenerator } from '../../lib/ids.js';
import type { Logger } from '../../lib/logger.js';
import { KnowledgeService } from '../../knowledge/index.js';
import { MemoryService } from '../../memory/index.js';
import type { SearchEngine } from '../../search/index.js';
import type { SessionService } from '../../sessions/index.js';
import type { Store } from '../../store/index.js';
import type { MessagePath } from '../../turns/index.js';
import { jsonRpcErrorBody, jsonRpcErrorSchema, methodNotAllowedBody } from './mcp-server.errors.js';
import { readTools } from './mcp-server.reads.js';
import { sendMessageTool } from './mcp-server.send.js';
import { serveMcpRequest } from './mcp-server.session.js';
import type { McpTool } from './mcp-server.tool.js';

/** What the /mcp server uses. */
export interface McpServerDeps {
  config: Config;
  logger: Logger;
  clock: Clock;
  /** The message path's door (`send_message`, `get_turn`). */
  messages: Pick<MessagePath, 'submit' | 'waitFor' | 'turn'>;
  sessions: Pick<SessionService, 'list' | 'require' | 'history'>;
  /** The agents capability: which agents a principal may use (`list_agents`, `send_message`'s `agent`). */
  agents: { roster: Pick<AgentRoster, 'usableBy' | 'defaultAgent'> };
  /** What memory and knowledge are read from (`search_memory`, `search_knowledge`). */
  resources: { store: Store; clock: Clock; ids: IdGenerator; search: SearchEngine };
  /** The gateway's reply timeout: `send_message`'s default wait, capped. */
  replyTimeoutMs: number;
}

/** The path of the server, on the main port outside the API prefix. */
const MCP_PATH = '/mcp';

/** A JSON-RPC response (or a batch of them), for the OpenAPI document. */
const RESPONSE_DESCRIPTION = 'The JSON-RPC response: an SSE stream of JSON-RPC messages, or one JSON body';

/** The tools of the server (DECISIONS §19). */
export function mcpTools(deps: McpServerDeps): McpTool[] {
  const { resources } = deps;
  return [
    sendMessageTool({ ...deps, agents: deps.agents.roster, ids: resources.ids }),
    ...readTools({
      ...deps,
      agents: deps.agents.roster,
      memory: new MemoryService(resources),
      knowledge: new KnowledgeService(resources),
    }),
  ];
}

/**
 * The /mcp routes (DECISIONS §19): Model Context Protocol over Streamable HTTP, guarded as the API is (tokens,
 * Origin/Host rules, rate limits, audit; permission api). POST carries JSON-RPC to a server made for the request;
 * GET and DELETE are 405, since a stateless server has no stream of its own and no session to end. Errors the
 * gateway raises before the server sees the request are JSON-RPC errors with their HTTP status. None with
 * `mcp.server.enabled: false`.
 */
export function mcpServerRoutes(deps: McpServerDeps): RouteDef[] {
  if (!deps.config.mcp.server.enabled) return [];
  const tools = mcpTools(deps);
  const common = {
    path: MCP_PATH,
    absolutePaths: [MCP_PATH],
    permission: 'api' as const,
    tags: ['mcp'],
    errorBody: jsonRpcErrorBody,
    errorSchema: jsonRpcErrorSchema,
  };
  const notAllowed = (method: 'GET' | 'DELETE') =>
    defineRoute({
      ...common,
      method,
      summary: `MCP: not offered (405): the server is stateless and answers each POST on its own`,
      responses: [{ status: 405, description: 'Method not allowed', schema: jsonRpcErrorSchema, headers: ['Allow'] }],
      handler: () => new HttpResult(405, methodNotAllowedBody(), { allow: 'POST' }),
    });
  return [
    defineRoute({
      ...common,
      method: 'POST',
      summary:
        'MCP (Model Context Protocol, Streamable HTTP): JSON-RPC messages to the tools send_message, list_sessions, ' +
        'get_history, get_turn, search_knowledge, search_memory, list_agents',
      errors: [406, 413],
      responses: [
        { status: 200, description: RESPONSE_DESCRIPTION, contentType: 'text/event-stream' },
        { status: 200, description: RESPONSE_DESCRIPTION },
        { status: 202, description: 'Notifications or responses only: accepted, no body' },
      ],
      handler: async (ctx, { body }) => {
        // The body parser answers a body that is not JSON; an absent one never reaches the SDK either.
        if (body === undefined) throw errors.badRequest('a JSON-RPC message is required');
        await serveMcpRequest(ctx, body, tools, deps.logger);
        return HANDLED;
      },
    }),
    notAllowed('GET'),
    notAllowed('DELETE'),
  ];
}
