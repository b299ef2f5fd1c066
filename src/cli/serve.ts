import type { Command } from 'commander';
import type { CliFlags } from '../config/config.load.js';
import type { CliIo } from './io.js';

/** Options of `gatehouse serve`. */
export interface ServeOptions extends CliFlags {
  open?: boolean;
}

/**
 * `gatehouse serve` (also `gatehouse` with no command): the gateway itself. The gateway's modules are loaded
 * only when the command runs (serve.run.ts), so the other commands and `--help` do without them (ADR 0044).
 */
export function registerServe(program: Command, io: CliIo, onServing: () => void): void {
  program
    .command('serve', { isDefault: true })
    .description('start the gateway (the default command)')
    .option('-c, --config <file>', 'configuration file (default: $GATEHOUSE_CONFIG, ./gatehouse.yaml)')
    .option('--host <host>', 'bind address (gateway.host)')
    .option('--port <port>', 'port (gateway.port)')
    .option('--data-dir <dir>', 'data directory (data_dir)')
    .option('--open', 'print the signed-in dashboard link and open it in a browser when there is a desktop')
    .addHelpText(
      'after',
      '\nConfiguration is read from the file, then the environment, then these flags.\n' +
        'Stop with Ctrl-C or SIGTERM: the gateway drains running turns and exits 0.',
    )
    .action(async (options: ServeOptions) => {
      const { serve } = await import('./serve.run.js');
      await serve(io, options);
      onServing();
    });
}
