import { Command, CommanderError } from 'commander';
import { packageVersion } from '../lib/version.js';
import { registerChat } from './chat/index.js';
import { registerAgents } from './commands/agents.js';
import { registerDoctor } from './commands/doctor.js';
import { registerInit } from './commands/init.js';
import { registerLogs } from './commands/logs.js';
import { registerMcp } from './commands/mcp.js';
import { registerPair } from './commands/pair.js';
import { registerSecurity } from './commands/security.js';
import { registerStatus } from './commands/status.js';
import { registerSubscriptions } from './commands/subscriptions.js';
import { registerToken } from './commands/token.js';
import { registerWhoami } from './commands/whoami.js';
import { didYouMean } from '../lib/did-you-mean.js';
import { CliError, EXIT, type CliIo } from './io.js';
import { registerServe } from './serve.js';

/** How a run of the command line ended: an exit code, or `serving` while the gateway runs. */
export type CliOutcome = number | 'serving';

/** The `gatehouse` program with every command (DECISIONS §15). `onServing` is called once the gateway listens. */
export function buildProgram(io: CliIo, onServing: () => void = () => undefined): Command {
  const program = new Command('gatehouse')
    .description('Gatehouse: an exactly-once, crash-proof, secure-by-default agent gateway')
    .version(packageVersion(), '-V, --version', 'print the version')
    .helpOption('-h, --help', 'show help for a command')
    .helpCommand('help [command]', 'show help for a command')
    .showHelpAfterError('(run with --help for usage)')
    .showSuggestionAfterError(true)
    .exitOverride()
    .configureOutput({
      writeOut: (text) => io.out(text),
      writeErr: (text) => io.err(text),
      outputError: (text, write) => write(text),
    })
    .addHelpText(
      'after',
      '\nWith no command, `gatehouse` runs `serve`. Client commands talk to a gateway at --url (or\n' +
        "$GATEHOUSE_URL, default: the local configuration's address) with --token (or $GATEHOUSE_TOKEN,\n" +
        'default: the generated admin token of the local data dir).\n' +
        'Exit codes: 0 ok, 1 a failure or a critical finding, 2 usage.',
    );
  registerServe(program, io, onServing);
  registerInit(program, io);
  registerChat(program, io);
  registerStatus(program, io);
  registerLogs(program, io);
  registerPair(program, io);
  registerToken(program, io);
  registerWhoami(program, io);
  registerAgents(program, io);
  registerMcp(program, io);
  registerSubscriptions(program, io);
  registerDoctor(program, io);
  registerSecurity(program, io);
  return program;
}

/**
 * Runs the command line (`argv` without node and the script) and returns the exit code, or `serving` when the
 * command started the gateway (which then runs until a signal drains it).
 */
export async function runCli(argv: readonly string[], io: CliIo): Promise<CliOutcome> {
  let serving = false;
  const program = buildProgram(io, () => {
    serving = true;
  });
  try {
    const first = argv[0];
    if (
      first !== undefined &&
      first !== 'help' &&
      !first.startsWith('-') &&
      !program.commands.some((c) => c.name() === first)
    ) {
      // Without this, a mistyped command would reach the default command (serve) as an argument.
      const names = program.commands.flatMap((c) => [c.name(), ...c.aliases()]);
      const near = didYouMean(first, names);
      program.error(`error: unknown command '${first}'${near ? ` (did you mean '${near}'?)` : ''}`, {
        exitCode: EXIT.usage,
      });
    }
    await program.parseAsync([...argv], { from: 'user' });
    return serving ? 'serving' : EXIT.ok;
  } catch (err) {
    if (err instanceof CommanderError) {
      // --help and --version end with a CommanderError whose exit code is 0; anything else is a usage error.
      return err.exitCode === 0 ? EXIT.ok : EXIT.usage;
    }
    if (err instanceof CliError) {
      io.err(`gatehouse: ${err.message}\n`);
      return err.exitCode;
    }
    throw err;
  }
}
