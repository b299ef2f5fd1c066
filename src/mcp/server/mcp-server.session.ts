import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { classifyError } from '../../http/errors.js';
import type { RequestContext } from '../../http/route.js';
import type { Logger } from '../../lib/logger.js';
import { packageVersion } from '../../lib/version.js';
import type { McpTool } from './mcp-server.tool.js';

/** The two classes of the MCP SDK the server uses. */
interface Sdk {
  McpServer: typeof McpServer;
  Transport: typeof StreamableHTTPServerTransport;
}

let sdk: Promise<Sdk> | null = null;

/**
 * The MCP SDK, imported on the first /mcp request and kept (ADR 0019: start-up and idle memory do not pay for a
 * library until it is used). A failed import is tried again by the next request.
 */
function loadSdk(): Promise<Sdk> {
  sdk ??= Promise.all([
    import('@modelcontextprotocol/sdk/server/mcp.js'),
    import('@modelcontextprotocol/sdk/server/streamableHttp.js'),
  ]).then(
    ([mcp, http]) => ({ McpServer: mcp.McpServer, Transport: http.StreamableHTTPServerTransport }),
    (err: unknown) => {
      sdk = null;
      throw err;
    },
  );
  return sdk;
}

const INSTRUCTIONS =
  'Gatehouse is an agent gateway. send_message talks to one of its agents (list_agents) and waits for the reply; ' +
  'list_sessions, get_history and get_turn read your conversations and turns; search_knowledge and search_memory ' +
  'search what the agents know.';

/** A tool's answer: its structured content, and the same as JSON text for clients that read only text. */
function success(structured: Record<string, unknown>): CallToolResult {
  return { content: [{ type: 'text', text: JSON.stringify(structured) }], structuredContent: structured };
}

/**
 * Answers one /mcp POST (DECISIONS §19) with a server and a transport of its own, in the SDK's stateless mode: no
 * session id, nothing kept once the response ends, so any gateway sharing the database answers any request. The
 * tools run as the request's principal. The reply is hijacked: the headers the guard set (request id, rate limits,
 * CORS) are carried over and the SDK writes the JSON-RPC answer, as JSON or as an SSE stream.
 */
export async function serveMcpRequest(
  ctx: RequestContext,
  body: unknown,
  tools: readonly McpTool[],
  logger: Logger,
): Promise<void> {
  const { McpServer, Transport } = await loadSdk();
  const server = new McpServer({ name: 'gatehouse', version: packageVersion() }, { instructions: INSTRUCTIONS });
  for (const tool of tools) {
    server.registerTool(
      tool.name,
      {
        title: tool.title,
        description: tool.description,
        inputSchema: tool.input,
        outputSchema: tool.output,
        annotations: { readOnlyHint: tool.readOnly, destructiveHint: false, openWorldHint: false },
      },
      async (args: unknown, extra: { signal: AbortSignal }): Promise<CallToolResult> => {
        try {
          const signal = AbortSignal.any([ctx.signal, extra.signal]);
          return success(await tool.run(args, { principal: ctx.principal, signal, headers: ctx.request.headers }));
        } catch (err) {
          // The client reads what an ApiError says; anything else is logged and answered as the API would (§3).
          const { error, log } = classifyError(err);
          if (log !== 'none') {
            logger[log]({ source: 'mcp', tool: tool.name, err, request_id: ctx.requestId }, 'MCP tool failed');
          }
          return { content: [{ type: 'text', text: error.message }], isError: true };
        }
      },
    );
  }
  const transport = new Transport({ sessionIdGenerator: undefined });
  await server.connect(transport);

  const { reply } = ctx;
  reply.hijack();
  const raw = reply.raw;
  for (const [name, value] of Object.entries(reply.getHeaders())) {
    if (value !== undefined) raw.setHeader(name, Array.isArray(value) ? value : String(value));
  }
  // Nothing outlives the response: the server, its transport and any stream of theirs close with it.
  raw.once('close', () => {
    server.close().catch(() => undefined);
  });
  try {
    await transport.handleRequest(ctx.request.raw, raw, body);
  } catch (err) {
    logger.error({ source: 'mcp', err, request_id: ctx.requestId }, 'MCP request failed');
    if (!raw.headersSent) {
      raw.writeHead(500, { 'content-type': 'application/json' });
      raw.end(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32603, message: 'internal error' } }));
    } else {
      raw.end();
    }
  }
}
