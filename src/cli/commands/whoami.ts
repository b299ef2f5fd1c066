import type { Command } from 'commander';
import type { CliIo } from '../io.js';
import { withClientOptions } from '../options.js';
import { callApi, resolveTarget, type ClientOptions } from '../target.js';

/** GET /whoami (spec: WhoAmI). */
export interface WhoAmI {
  principal: string;
  role: 'api' | 'admin';
  agents: string[];
}

/** `principal  alice` / `role       api` / `agents     main, support`, one line each. */
export function formatWhoAmI(who: WhoAmI): string {
  const rows: Array<[string, string]> = [
    ['principal', who.principal],
    ['role', who.role],
    ['agents', who.agents.join(', ') || 'none'],
  ];
  return rows.map(([label, value]) => `${label.padEnd(11)}${value}\n`).join('');
}

/** `gatehouse whoami`: the principal, role and agents of the token a client command uses. */
export function registerWhoami(program: Command, io: CliIo): void {
  withClientOptions(
    program
      .command('whoami')
      .description('the principal, role and agents of the token, as a running gateway sees it')
      .option('--json', 'print JSON'),
  ).action(async (options: ClientOptions & { json?: boolean }) => {
    const target = await resolveTarget(io, options);
    const who = await callApi<WhoAmI>(target, '/whoami');
    io.out(options.json ? `${JSON.stringify(who)}\n` : formatWhoAmI(who));
  });
}
