import type { Command } from 'commander';
import type { CliIo } from '../io.js';
import { withClientOptions } from '../options.js';
import { callApi, resolveTarget, type ClientOptions } from '../target.js';
import { style } from '../terminal.js';

/** One agent on the wire (spec: Agent). */
export interface AgentInfo {
  id: string;
  provider: string;
  model: string;
  tools: string[];
  sessions: number;
  default: boolean;
}

const HEADERS = ['ID', 'PROVIDER', 'MODEL', 'TOOLS', 'SESSIONS'] as const;

/** The cells of one agent's row, in the order of HEADERS; the default agent's id ends with `*`. */
function cells(agent: AgentInfo): string[] {
  return [
    `${agent.id}${agent.default ? ' *' : ''}`,
    agent.provider,
    agent.model,
    String(agent.tools.length),
    String(agent.sessions),
  ];
}

/** The agents as a table (header, one row each, the `*` note), or a line saying there are none. */
export function formatAgents(agents: readonly AgentInfo[], colour: boolean): string {
  if (agents.length === 0) return 'No agents: this token may use none.\n';
  const rows = agents.map(cells);
  const widths = HEADERS.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i]!.length)));
  /** The cells padded to their column, two spaces apart (the last one unpadded). */
  const line = (row: readonly string[]): string =>
    row.map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i]!))).join('  ');
  const out = [style(colour, 'bold', line(HEADERS)), ...rows.map(line)];
  if (agents.some((a) => a.default))
    out.push(style(colour, 'dim', '* the default agent (of sessions no binding matches)'));
  return `${out.join('\n')}\n`;
}

/** `gatehouse agents`: the agents the token may use, with their provider, model, tools and live sessions. */
export function registerAgents(program: Command, io: CliIo): void {
  withClientOptions(
    program
      .command('agents')
      .description('the agents the token may use on a running gateway: provider, model, tools, sessions')
      .option('--json', 'print JSON'),
  ).action(async (options: ClientOptions & { json?: boolean }) => {
    const target = await resolveTarget(io, options);
    const body = await callApi<{ items: AgentInfo[] }>(target, '/agents');
    io.out(options.json ? `${JSON.stringify(body)}\n` : formatAgents(body.items, io.stdoutIsTTY));
  });
}
