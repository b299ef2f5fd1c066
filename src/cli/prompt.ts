import { createInterface } from 'node:readline/promises';
import { CliError, EXIT } from './io.js';

/** Asks questions on the terminal, one line each. */
export interface Prompter {
  /**
   * Shows `question [default]: ` and resolves with the trimmed answer, or `fallback` for an empty one. `check`
   * returns an error message for an answer to refuse (the question is asked again) or null to accept it.
   */
  ask(question: string, fallback: string, check?: (answer: string) => string | null): Promise<string>;
  /** `question [y/N]: ` (or `[Y/n]` when `fallback` is true). */
  confirm(question: string, fallback: boolean): Promise<boolean>;
  close(): void;
}

/**
 * A prompter on the process's standard input and output (node:readline/promises). Answers are read through the
 * interface's line iterator, so lines typed (or pasted) ahead of a question are kept for it, not dropped. Input
 * that ends before every question is answered (Ctrl-D) is a usage error; Ctrl-C ends the process.
 */
export function terminalPrompter(write: (text: string) => void): Prompter {
  const rl = createInterface({ input: process.stdin, output: process.stdout, terminal: process.stdin.isTTY === true });
  const lines = rl[Symbol.asyncIterator]();
  rl.on('SIGINT', () => {
    write('\n');
    process.exit(130);
  });
  const readLine = async (prompt: string): Promise<string> => {
    rl.setPrompt(prompt);
    rl.prompt();
    const next = await lines.next();
    if (next.done) throw new CliError('input ended before every question was answered', EXIT.usage);
    return String(next.value).trim();
  };
  return {
    async ask(question, fallback, check) {
      for (;;) {
        const answer = (await readLine(`${question}${fallback ? ` [${fallback}]` : ''}: `)) || fallback;
        const problem = check?.(answer) ?? null;
        if (problem === null) return answer;
        write(`  ${problem}\n`);
      }
    },
    async confirm(question, fallback) {
      for (;;) {
        const answer = (await readLine(`${question} [${fallback ? 'Y/n' : 'y/N'}]: `)).toLowerCase();
        if (answer === '') return fallback;
        if (['y', 'yes'].includes(answer)) return true;
        if (['n', 'no'].includes(answer)) return false;
        write('  answer y or n\n');
      }
    },
    close: () => rl.close(),
  };
}
