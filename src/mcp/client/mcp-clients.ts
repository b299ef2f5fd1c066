import { secretValues } from '../../config/config.redact.js';
import { MCP_TOOL_PREFIX } from '../../config/config.references.js';
import type { Config } from '../../config/config.schema.js';
import type { RouteDef } from '../../http/route.js';
import { isoTime, type Clock } from '../../lib/clock.js';
import type { Logger } from '../../lib/logger.js';
import type { AgentTool, ToolSource } from '../../runtime/index.js';
import { createTokenScrubber } from '../../security/audit.js';
import type { ConnectionTarget } from './mcp-connection.js';
import { mcpClientRoutes } from './mcp-clients.routes.js';
import type { McpServerView } from './mcp-clients.schema.js';
import { mcpTimers, type McpTimers } from './mcp-stdio.js';
import { DEFAULT_MCP_BACKOFF, McpServerSupervisor, type McpBackoffPolicy } from './mcp-supervisor.js';
import type { McpServerConfig } from './mcp-tools.js';

/** What the MCP client side uses. */
export interface McpClientDeps {
  config: Config;
  logger: Logger;
  clock: Clock;
  /** Delays of the restart backoff and the kill grace (default: real, unreferenced timers). */
  timers?: McpTimers;
  /** The restart policy (default: DEFAULT_MCP_BACKOFF). */
  backoff?: Partial<McpBackoffPolicy>;
  /**
   * The gateway's environment, read for PATH and for `inherit_env` (default: the process's). Nothing else of
   * it reaches a child.
   */
  environment?: Readonly<Record<string, string | undefined>>;
}

/** The health of the MCP client side (the `mcp` component of GET /health). */
export interface McpHealth {
  status: 'ok' | 'degraded' | 'failing';
  message?: string;
}

/** The configured MCP servers, connected. */
export interface McpClients {
  /** Their tools as the agents see them. */
  tools: ToolSource;
  /** GET /mcp/servers and the like (admin). */
  routes: RouteDef[];
  /** The `mcp` health component. */
  health(): McpHealth;
  /** The servers as the routes show them. */
  views(): McpServerView[];
  start(): Promise<void>;
  close(): Promise<void>;
}

/**
 * Bytes of one message of a server at most (a stdout line, an http answer): the output limit with room for JSON
 * escaping and framing, and never under 8 MiB.
 */
/** Bytes the presented result's wrapper (source, untrusted note, truncation note) takes besides the content. */
const MCP_WRAPPER_BYTES = 1024;

function maxLineBytes(maxOutputBytes: number): number {
  return Math.max(8 * 1024 * 1024, maxOutputBytes * 8);
}

/** The process's environment (the one read of it here: PATH and `inherit_env`). */
function processEnvironment(): Readonly<Record<string, string | undefined>> {
  // eslint-disable-next-line no-restricted-properties -- a stdio server's PATH and inherit_env are this key's purpose
  return process.env;
}

/** A child's whole environment: `env` plus PATH, or with `inherit_env` the gateway's environment plus `env`. */
export function childEnvironment(
  server: Pick<McpServerConfig, 'env' | 'inherit_env'>,
  gateway: Readonly<Record<string, string | undefined>>,
): Record<string, string> {
  const base: Record<string, string> = {};
  if (server.inherit_env) {
    for (const [key, value] of Object.entries(gateway)) if (value !== undefined) base[key] = value;
  } else if (gateway.PATH !== undefined) {
    base.PATH = gateway.PATH;
  }
  return { ...base, ...server.env };
}

/** An http url as shown: origin and path, no credentials, no query or fragment. */
export function shownUrl(url: string | null): string | null {
  if (url === null) return null;
  try {
    const parsed = new URL(url);
    return `${parsed.origin}${parsed.pathname}`;
  } catch {
    return null;
  }
}

/** `ok` when every server is ready (or none is configured); `failing` when every one failed; else `degraded`. */
function healthOf(supervisors: readonly McpServerSupervisor[]): McpHealth {
  const notReady = supervisors.filter((s) => s.state !== 'ready');
  if (notReady.length === 0) return { status: 'ok' };
  const failed = supervisors.filter((s) => s.state === 'failed');
  const list = notReady.map((s) => `${s.name} ${s.state}`).join(', ');
  if (failed.length === supervisors.length) return { status: 'failing', message: `every server failed: ${list}` };
  return { status: 'degraded', message: `not ready: ${list}` };
}

export function openMcpClients(deps: McpClientDeps): McpClients {
  const { config } = deps;
  const scrub = createTokenScrubber(secretValues(config));
  const policy = { ...DEFAULT_MCP_BACKOFF, ...deps.backoff };
  const timers = deps.timers ?? mcpTimers;
  const environment = deps.environment ?? processEnvironment();
  const connector = () => import('./mcp-connection.js');
  // A result is cut at the smaller of the MCP cap and the tool results' cap (less room for the wrapper around
  // the content), so its note is the one that applies; the agent's cap still holds the whole text.
  const payloadCap = Math.max(1024, config.limits.payloads.max_tool_result_bytes - MCP_WRAPPER_BYTES);
  const maxOutputBytes = Math.min(config.mcp.max_output_bytes, payloadCap);
  const maxOutputKey =
    maxOutputBytes < config.mcp.max_output_bytes ? 'limits.payloads.max_tool_result_bytes' : 'mcp.max_output_bytes';
  const outbound = { allowPrivate: config.mcp.allow_private_targets };

  // The offered tools, rebuilt when a server's list or state changes; looked up at each call.
  let byName = new Map<string, AgentTool>();
  let listed: AgentTool[] = [];
  const supervisors: McpServerSupervisor[] = [];
  const rebuild = (): void => {
    const next = new Map<string, AgentTool>();
    for (const supervisor of supervisors) {
      if (supervisor.state !== 'ready') continue;
      for (const tool of supervisor.tools) {
        next.set(tool.exposedAs, {
          spec: { name: tool.exposedAs, description: tool.description, parameters: tool.parameters },
          run: (args, ctx) => supervisor.call(tool.name, args, ctx.signal),
          needsApproval: () => tool.approval === 'always',
        });
      }
    }
    byName = next;
    listed = [...next.values()];
  };

  for (const [name, server] of Object.entries(config.mcp.servers)) {
    const target = (hooks: {
      onStderrLine: (line: string) => void;
      onGarbage: (line: string) => void;
    }): ConnectionTarget =>
      server.transport === 'stdio'
        ? {
            transport: 'stdio',
            command: server.command!,
            args: server.args,
            env: childEnvironment(server, environment),
            cwd: server.cwd,
            maxLineBytes: maxLineBytes(maxOutputBytes),
            killGraceMs: policy.killGraceMs,
            ...hooks,
          }
        : {
            transport: 'http',
            url: server.url!,
            headers: { ...server.headers },
            policy: outbound,
            maxResponseBytes: maxLineBytes(maxOutputBytes),
          };
    supervisors.push(
      new McpServerSupervisor({
        name,
        server,
        maxOutputBytes,
        maxOutputKey,
        target,
        connector,
        logger: deps.logger,
        clock: deps.clock,
        timers,
        policy,
        scrub,
        onChange: rebuild,
      }),
    );
  }

  const find = (name: string) => supervisors.find((s) => s.name === name) ?? null;
  // A tool of a server that is not ready (it died since the model was offered its tools): a tool error at once.
  const notReadyTool = (name: string): AgentTool | undefined => {
    const supervisor = supervisors.find((s) => name.startsWith(`${MCP_TOOL_PREFIX}${s.name}__`));
    if (!supervisor || supervisor.state === 'ready') return undefined;
    const tool = name.slice(`${MCP_TOOL_PREFIX}${supervisor.name}__`.length);
    return {
      spec: { name, description: '', parameters: { type: 'object' } },
      run: (args, ctx) => supervisor.call(tool, args, ctx.signal),
    };
  };
  const viewOf = (supervisor: McpServerSupervisor): McpServerView => {
    const server = config.mcp.servers[supervisor.name]!;
    return {
      name: supervisor.name,
      transport: server.transport,
      state: supervisor.state,
      tools: supervisor.tools.map((tool) => ({
        name: tool.name,
        exposed_as: tool.exposedAs,
        description: tool.description,
        approval: tool.approval,
      })),
      last_error: supervisor.lastError,
      restarts: supervisor.restarts,
      connected_at: supervisor.connectedAt === null ? null : isoTime(supervisor.connectedAt),
      command: server.transport === 'stdio' ? server.command : null,
      url: server.transport === 'http' ? shownUrl(server.url) : null,
    };
  };

  const clients: McpClients = {
    tools: {
      get: (name) => (name.startsWith(MCP_TOOL_PREFIX) ? (byName.get(name) ?? notReadyTool(name)) : undefined),
      list: () => listed,
    },
    routes: mcpClientRoutes({
      views: () => supervisors.map(viewOf),
      view: (name) => {
        const supervisor = find(name);
        return supervisor ? viewOf(supervisor) : null;
      },
      restart: async (name) => {
        const supervisor = find(name);
        if (!supervisor) return null;
        await supervisor.restart();
        return viewOf(supervisor);
      },
    }),
    health: () => healthOf(supervisors),
    views: () => supervisors.map(viewOf),
    // Connecting runs in the background: a slow or broken server never holds up the gateway's start.
    start: async () => {
      for (const supervisor of supervisors) supervisor.start();
    },
    close: async () => {
      await Promise.all(supervisors.map((s) => s.close()));
    },
  };
  return clients;
}
