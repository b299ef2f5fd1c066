#!/usr/bin/env -S node --max-semi-space-size=1 --v8-pool-size=1
import { runCli, type CliIo } from './cli/index.js';

/** The real process's streams and environment: the one place the command line reads `process.env`. */
const io: CliIo = {
  out: (text) => void process.stdout.write(text),
  err: (text) => void process.stderr.write(text),
  env: process.env,
  cwd: process.cwd(),
  stdoutIsTTY: process.stdout.isTTY === true,
  stdinIsTTY: process.stdin.isTTY === true,
};

/** Exits once what was written to stdout and stderr has been handed to the OS. */
function exitAfterFlush(code: number): void {
  process.stdout.write('', () => process.stderr.write('', () => process.exit(code)));
}

runCli(process.argv.slice(2), io).then(
  (outcome) => {
    if (outcome !== 'serving') exitAfterFlush(outcome);
  },
  (err: unknown) => {
    process.stderr.write(`gatehouse: fatal: ${(err as Error).stack ?? String(err)}\n`);
    exitAfterFlush(1);
  },
);
