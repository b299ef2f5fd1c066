import type { Command } from 'commander';

/** Adds the client options every client command takes (DECISIONS §15): `--url`, `--token`, `--config`. */
export function withClientOptions(command: Command): Command {
  return command
    .option('--url <url>', "gateway URL (default: $GATEHOUSE_URL, else the local configuration's address)")
    .option('--token <token>', 'api or admin token (default: $GATEHOUSE_TOKEN, else the local admin token file)')
    .option('-c, --config <file>', 'local configuration file, for the default URL and token');
}

/** Adds `--config` to a local command. */
export function withConfigOption(command: Command): Command {
  return command.option('-c, --config <file>', 'configuration file (default: $GATEHOUSE_CONFIG, ./gatehouse.yaml)');
}

/** Parses a positive integer option, or throws commander's usage error through `command.error`. */
export function intOption(command: Command, name: string, text: string, min: number, max: number): number {
  const value = Number(text);
  if (!/^\d+$/.test(text) || value < min || value > max) {
    command.error(`error: option --${name} must be an integer from ${min} to ${max}`, { exitCode: 2 });
  }
  return value;
}
