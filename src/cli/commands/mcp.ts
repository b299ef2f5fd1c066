import { setTimeout as sleep } from 'node:timers/promises';
import type { Command } from 'commander';
import { CliError, type CliIo } from '../io.js';
import { withClientOptions } from '../options.js';
import { ApiCallError, callApi, resolveTarget, type ClientOptions, type ClientTarget } from '../target.js';
import { style, type Tone } from '../terminal.js';

/** One tool of an MCP server, as the agents see it. */
export interface McpToolInfo {
  name: string;
  exposed_as: string;
  description: string;
  approval: 'never' | 'always';
}

/** One configured MCP server on the wire (GET /mcp/servers, DECISIONS §19). */
export interface McpServerInfo {
  name: string;
  transport: 'stdio' | 'http';
  state: 'connecting' | 'ready' | 'failed' | 'stopped';
  tools: McpToolInfo[];
  last_error: string | null;
  restarts: number;
  connected_at: string | null;
  command: string | null;
  url: string | null;
}

/** What `gatehouse mcp list` says when the gateway has no MCP server configured. */
export const NO_MCP_SERVERS = 'No MCP servers: add one under mcp.servers in gatehouse.yaml';

/** The longest last error a table row shows; the rest is cut with `…` (`--json` has it whole). */
export const LAST_ERROR_WIDTH = 60;

const HEADERS = ['NAME', 'TRANSPORT', 'STATE', 'TOOLS', 'LAST ERROR'] as const;

const STATE_TONE: Record<string, Tone> = { ready: 'green', connecting: 'yellow', failed: 'red', stopped: 'dim' };

/** `text` on one line (runs of white space as one space), cut to `width` characters with `…` at the end. */
export function shorten(text: string, width: number): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length <= width ? line : `${line.slice(0, width - 1).trimEnd()}…`;
}

/** The cells of one server's row, in the order of HEADERS (uncoloured, so they pad to their column). */
function cells(server: McpServerInfo): string[] {
  return [
    server.name,
    server.transport,
    server.state,
    String(server.tools.length),
    server.last_error ? shorten(server.last_error, LAST_ERROR_WIDTH) : '',
  ];
}

/** The servers as a table (header, one row each, the state coloured on a terminal), or the line saying there are none. */
export function formatMcpServers(servers: readonly McpServerInfo[], colour: boolean): string {
  if (servers.length === 0) return `${NO_MCP_SERVERS}\n`;
  const rows = servers.map(cells);
  const widths = HEADERS.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i]!.length)));
  const stateColumn = HEADERS.indexOf('STATE');
  /** The cells padded to their column, two spaces apart (the last one unpadded, trailing blanks dropped). */
  const line = (row: readonly string[], paint: (cell: string, i: number) => string = (cell) => cell): string =>
    row
      .map((cell, i) => paint(i === row.length - 1 ? cell : cell.padEnd(widths[i]!), i))
      .join('  ')
      .trimEnd();
  const out = [style(colour, 'bold', line(HEADERS))];
  for (const [index, row] of rows.entries()) {
    const tone = STATE_TONE[servers[index]!.state] ?? 'dim';
    out.push(line(row, (cell, i) => (i === stateColumn ? style(colour, tone, cell) : cell)));
  }
  if (servers.some((s) => s.state === 'failed')) {
    out.push(style(colour, 'dim', 'gatehouse mcp restart <name> connects a server again'));
  }
  return `${out.join('\n')}\n`;
}

/** One line on a server after a restart: its state now, its tools and restarts, its last error if any. */
export function formatRestarted(server: McpServerInfo, colour: boolean): string {
  const tone = STATE_TONE[server.state] ?? 'dim';
  const tools = `${server.tools.length} ${server.tools.length === 1 ? 'tool' : 'tools'}`;
  const restarts = `${server.restarts} ${server.restarts === 1 ? 'restart' : 'restarts'}`;
  const error = server.last_error ? `\n  last error: ${shorten(server.last_error, 200)}` : '';
  return `Restarted ${server.name}: ${style(colour, tone, server.state)}, ${tools}, ${restarts}${error}\n`;
}

/** How long `mcp restart` waits for the server to leave `connecting`, and how often it looks. */
export const RESTART_WAIT = { timeoutMs: 30_000, intervalMs: 250 };

/**
 * The server once it is no longer `connecting` (GET /mcp/servers/{name}), or as last seen when `timeoutMs`
 * passes first.
 */
async function settled(target: ClientTarget, server: McpServerInfo): Promise<McpServerInfo> {
  const deadline = Date.now() + RESTART_WAIT.timeoutMs;
  let current = server;
  while (current.state === 'connecting' && Date.now() < deadline) {
    await sleep(RESTART_WAIT.intervalMs);
    current = await callApi<McpServerInfo>(target, `/mcp/servers/${encodeURIComponent(server.name)}`);
  }
  return current;
}

/** A 404 of a server route as a message naming the server and the command that lists them. */
function unknownServer(err: unknown, name: string): unknown {
  if (err instanceof ApiCallError && err.status === 404) {
    return new CliError(`no MCP server is named ${JSON.stringify(name)} (gatehouse mcp list shows them)`);
  }
  return err;
}

/**
 * `gatehouse mcp list|restart`: the MCP servers a running gateway connects to (admin token). `restart` waits
 * for the server to connect (or fail) and exits 1 when it failed.
 */
export function registerMcp(program: Command, io: CliIo): void {
  const mcp = program
    .command('mcp')
    .description('the MCP servers of a running gateway: state, tools, restart (needs an admin token)');
  withClientOptions(
    mcp
      .command('list', { isDefault: true })
      .description('each MCP server: transport, state, tools and last error')
      .option('--json', 'print JSON'),
  ).action(async (options: ClientOptions & { json?: boolean }) => {
    const target = await resolveTarget(io, options);
    const body = await callApi<{ items: McpServerInfo[] }>(target, '/mcp/servers');
    io.out(options.json ? `${JSON.stringify(body)}\n` : formatMcpServers(body.items, io.stdoutIsTTY));
  });
  withClientOptions(
    mcp
      .command('restart')
      .description('disconnect an MCP server and connect it again (a stdio server is started anew)')
      .argument('<name>', 'the server, as named under mcp.servers')
      .option('--no-wait', 'answer at once, without waiting up to 30 s for the server to connect')
      .option('--json', 'print JSON'),
  ).action(async (name: string, options: ClientOptions & { json?: boolean; wait: boolean }) => {
    const target = await resolveTarget(io, options);
    let server: McpServerInfo;
    try {
      server = await callApi<McpServerInfo>(target, `/mcp/servers/${encodeURIComponent(name)}/restart`, {
        method: 'POST',
        timeoutMs: 90_000,
      });
      if (options.wait) server = await settled(target, server);
    } catch (err) {
      throw unknownServer(err, name);
    }
    io.out(options.json ? `${JSON.stringify(server)}\n` : formatRestarted(server, io.stdoutIsTTY));
    if (server.state === 'failed') throw new CliError(`${server.name} did not connect after the restart`);
  });
}
