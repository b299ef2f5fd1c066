/** The `gatehouse` command line (DECISIONS §15): main.ts runs it with the real process's streams. */
export { runCli, type CliOutcome } from './program.js';
export type { CliIo } from './io.js';
