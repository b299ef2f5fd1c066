import type { Command } from 'commander';
import { CliError, type CliIo } from '../io.js';
import { withClientOptions } from '../options.js';
import { ApiCallError, callApi, resolveTarget, type ClientOptions } from '../target.js';

/** `gatehouse pair <platform>`: issues a pairing code (admin) and shows it with its time to live. */
export function registerPair(program: Command, io: CliIo): void {
  withClientOptions(
    program
      .command('pair')
      .description('issue a pairing code for a platform (auth mode pairing; needs an admin token)')
      .argument('<platform>', 'the platform the code is for, e.g. telegram, slack, ws, webhook')
      .option('--json', 'print JSON'),
  ).action(async (platform: string, options: ClientOptions & { json?: boolean }) => {
    const target = await resolveTarget(io, options);
    let issued: { code: string; ttl_seconds: number };
    try {
      issued = await callApi(target, '/pair', { method: 'POST', body: { platform } });
    } catch (err) {
      // A 404 of the pairing route itself means pairing is off; "route not found" means a wrong --url or prefix.
      if (err instanceof ApiCallError && err.status === 404 && !err.message.includes('route not found')) {
        throw new CliError(
          'pairing is off on this gateway: set gateway.auth.mode to pairing (gatehouse.yaml) and restart it',
        );
      }
      throw err;
    }
    if (options.json) {
      io.out(`${JSON.stringify({ platform, ...issued })}\n`);
      return;
    }
    const expires = new Date(Date.now() + issued.ttl_seconds * 1000);
    io.out(
      `Pairing code for ${platform}: ${issued.code}\n` +
        `  valid for ${issued.ttl_seconds} s (until ${expires.toLocaleTimeString()}), once.\n` +
        `  The user sends it from ${platform} (for example "/pair ${issued.code}" in a direct message).\n`,
    );
  });
}
