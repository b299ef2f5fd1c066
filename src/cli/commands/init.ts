import type { Command } from 'commander';
import type { CliIo } from '../io.js';

/** Options of `gatehouse init`. */
export interface InitOptions {
  yes?: boolean;
  output: string;
  force?: boolean;
}

/** `gatehouse init`: writes a commented gatehouse.yaml from a few answers (or the defaults with --yes). */
export function registerInit(program: Command, io: CliIo): void {
  program
    .command('init')
    .description('write a commented gatehouse.yaml: provider, bind address, auth mode, webhook')
    .option('-y, --yes', 'write the defaults without asking (the provider the environment suggests)')
    .option('-o, --output <file>', 'the file to write', 'gatehouse.yaml')
    .option('-f, --force', 'overwrite the file if it exists')
    .addHelpText(
      'after',
      '\nThe provider offered first is the one the environment suggests: OPENAI_API_KEY, else ANTHROPIC_API_KEY,\n' +
        'else a local Ollama (OLLAMA_HOST, default 127.0.0.1:11434), else echo. API keys are never written to the\n' +
        'file: the gateway reads them from the environment. The file gets mode 0600 (it holds the webhook secret).',
    )
    .action(async (options: InitOptions) => {
      // The configuration's schema and example are loaded only now (ADR 0044).
      const { init } = await import('./init.run.js');
      await init(io, options);
    });
}
