/**
 * What a command may touch of the process: its output streams, the environment and the working directory.
 * main.ts hands over the real ones; tests may pass their own. Only main.ts reads `process.env` (ADR 0011).
 */
export interface CliIo {
  /** Writes to standard output (no newline added). */
  out(text: string): void;
  /** Writes to standard error (no newline added). */
  err(text: string): void;
  env: NodeJS.ProcessEnv;
  cwd: string;
  /** True when standard output is a terminal (colour, human lines). */
  stdoutIsTTY: boolean;
  /** True when standard input is a terminal (interactive prompts). */
  stdinIsTTY: boolean;
}

/** Exit codes of every command (DECISIONS §15). */
export const EXIT = { ok: 0, failure: 1, usage: 2 } as const;

/** A command failed: printed as `gatehouse: <message>` and the process exits with `exitCode`. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode: number = EXIT.failure,
  ) {
    super(message);
    this.name = 'CliError';
  }
}
