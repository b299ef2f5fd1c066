/**
 * One connection to one MCP server, over the official SDK. Loaded with `import()` when the first server
 * starts, so a gateway without MCP servers never loads the SDK.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  ErrorCode,
  JSONRPCMessageSchema,
  McpError,
  ToolListChangedNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { checkTarget, guardedFetch, type GuardedFetch, type OutboundPolicy } from '../../lib/outbound.js';
import { packageVersion } from '../../lib/version.js';
import { StdioChildTransport, type McpTimers } from './mcp-stdio.js';
import { MAX_TOOLS_PER_SERVER, type CallResult, type ListedTool } from './mcp-tools.js';

/** Where and how to connect. */
export type ConnectionTarget =
  | {
      transport: 'stdio';
      command: string;
      args: readonly string[];
      env: Record<string, string>;
      cwd: string | null;
      maxLineBytes: number;
      killGraceMs: number;
      onStderrLine: (line: string) => void;
      onGarbage: (line: string) => void;
    }
  | {
      transport: 'http';
      url: string;
      headers: Record<string, string>;
      policy: OutboundPolicy;
      /** An answer to a POST longer than this fails its request (the server cannot make the gateway buffer without bound). */
      maxResponseBytes: number;
    };

/** What the connection tells its owner. */
export interface ConnectionEvents {
  /** The connection ended on its own (the child exited, the transport closed): not after `close()`. */
  onLost: (reason: string) => void;
  /** The server announced `notifications/tools/list_changed`. */
  onToolsChanged: () => void;
  /** A transport error that does not end the connection by itself (logged). */
  onError: (error: Error) => void;
}

/** A live connection. */
export interface McpConnection {
  /** Every tool, following pagination, at most MAX_TOOLS_PER_SERVER (`more`: the server had more). */
  listTools(timeoutMs: number): Promise<{ tools: ListedTool[]; more: boolean }>;
  /** Calls a tool; rejects on timeout, abort, a closed connection or a protocol error (see `callFailure`). */
  callTool(name: string, args: Record<string, unknown>, timeoutMs: number, signal: AbortSignal): Promise<CallResult>;
  close(): Promise<void>;
}

/** Pages of tools/list read at most (a server answering with cursors forever is cut off). */
const MAX_LIST_PAGES = 64;

/** How a failed call is reported, and whether it means the connection is gone. */
export interface CallFailure {
  kind: 'timeout' | 'aborted' | 'closed' | 'protocol' | 'transport';
  message: string;
}

/** Classifies an error of `callTool`. */
export function callFailure(error: unknown, signal: AbortSignal): CallFailure {
  if (signal.aborted) return { kind: 'aborted', message: 'the call was interrupted with the turn' };
  if (error instanceof McpError) {
    if (error.code === (ErrorCode.RequestTimeout as number)) return { kind: 'timeout', message: 'timed out' };
    if (error.code === (ErrorCode.ConnectionClosed as number)) {
      return { kind: 'closed', message: 'the connection to the server closed during the call' };
    }
    return { kind: 'protocol', message: error.message };
  }
  const message = error instanceof Error ? error.message : String(error);
  return { kind: 'transport', message };
}

/** Statuses whose answer has no body. */
const NULL_BODY_STATUSES = new Set([101, 204, 205, 304]);

/**
 * `fetch` whose answers to POST (one request's answer, perhaps streamed) fail once longer than `maxBytes`. The
 * GET stream (server-initiated messages, long-lived) is left as it is.
 */
export function boundedFetch(inner: typeof fetch, maxBytes: number): typeof fetch {
  return async (input, init) => {
    const response = await inner(input, init);
    const method = (init?.method ?? 'GET').toUpperCase();
    if (method === 'GET' || !response.body || NULL_BODY_STATUSES.has(response.status)) return response;
    let seen = 0;
    const limited = response.body.pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
        transform(chunk, controller) {
          seen += chunk.byteLength;
          if (seen > maxBytes) controller.error(new Error(`the server's answer is over ${maxBytes} bytes`));
          else controller.enqueue(chunk);
        },
      }),
    );
    return new Response(limited, {
      status: response.status,
      statusText: response.statusText,
      headers: response.headers,
    });
  };
}

/**
 * Connects (spawns the child or checks the url), initializes within `initTimeoutMs`, and watches the
 * connection. `signal` aborts a connect in progress (the child is ended). An http url the outbound policy
 * refuses rejects with the BlockedTargetError before anything is sent.
 */
export async function openConnection(
  target: ConnectionTarget,
  events: ConnectionEvents,
  options: { initTimeoutMs: number; timers: McpTimers; signal: AbortSignal },
): Promise<McpConnection> {
  let fetcher: GuardedFetch | null = null;
  let transport: Transport;
  if (target.transport === 'stdio') {
    transport = new StdioChildTransport({
      ...target,
      parseMessage: (value) => JSONRPCMessageSchema.parse(value),
      timers: options.timers,
    });
  } else {
    await checkTarget(target.url, target.policy);
    fetcher = guardedFetch(target.policy);
    transport = new StreamableHTTPClientTransport(new URL(target.url), {
      fetch: boundedFetch(fetcher, target.maxResponseBytes),
      requestInit: { headers: target.headers },
      reconnectionOptions: {
        maxReconnectionDelay: 30_000,
        initialReconnectionDelay: 1_000,
        reconnectionDelayGrowFactor: 2,
        maxRetries: 2,
      },
    });
  }
  const client = new Client({ name: 'gatehouse', version: packageVersion() }, { capabilities: {} });
  let closing = false;
  let closed: Promise<void> | null = null;
  client.onclose = () => {
    if (!closing) events.onLost('the connection closed');
  };
  client.onerror = (error) => {
    if (!closing) events.onError(error);
  };
  client.setNotificationHandler(ToolListChangedNotificationSchema, () => events.onToolsChanged());
  // Every caller waits for the same end (the child exited, the connections closed).
  const close = (): Promise<void> => {
    closing = true;
    closed ??= (async () => {
      await client.close().catch(() => undefined);
      await transport.close().catch(() => undefined);
      await fetcher?.close().catch(() => undefined);
    })();
    return closed;
  };
  const abort = (): void => void close();
  options.signal.addEventListener('abort', abort, { once: true });
  // The initialize request's own timeout, and one around the whole connect (a spawn that never ends, a hung
  // TLS handshake): whichever ends first closes the connection.
  let cancelDeadline: () => void = () => undefined;
  const deadline = new Promise<never>((_, reject) => {
    cancelDeadline = options.timers.after(options.initTimeoutMs, () =>
      reject(new Error(`the server did not answer initialize within ${options.initTimeoutMs / 1000} s`)),
    );
  });
  try {
    if (options.signal.aborted) throw new Error('stopped');
    await Promise.race([client.connect(transport, { timeout: options.initTimeoutMs }), deadline]);
    if (options.signal.aborted) throw new Error('stopped');
  } catch (error) {
    await close();
    if (error instanceof McpError && error.code === (ErrorCode.RequestTimeout as number)) {
      throw new Error(`the server did not answer initialize within ${options.initTimeoutMs / 1000} s`, {
        cause: error,
      });
    }
    throw error;
  } finally {
    cancelDeadline();
    options.signal.removeEventListener('abort', abort);
  }

  return {
    async listTools(timeoutMs) {
      const tools: ListedTool[] = [];
      let cursor: string | undefined;
      for (let page = 0; page < MAX_LIST_PAGES; page++) {
        const answer = await client.listTools(cursor === undefined ? {} : { cursor }, {
          timeout: timeoutMs,
          maxTotalTimeout: timeoutMs,
        });
        for (const tool of answer.tools) {
          if (tools.length >= MAX_TOOLS_PER_SERVER) return { tools, more: true };
          tools.push({ name: tool.name, description: tool.description, inputSchema: tool.inputSchema });
        }
        cursor = answer.nextCursor;
        if (cursor === undefined) return { tools, more: false };
      }
      return { tools, more: true };
    },
    async callTool(name, args, timeoutMs, signal) {
      return (await client.callTool({ name, arguments: args }, undefined, {
        signal,
        timeout: timeoutMs,
        maxTotalTimeout: timeoutMs,
      })) as CallResult;
    },
    close,
  };
}
