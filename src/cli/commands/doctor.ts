import type { Command } from 'commander';
import { CliError, EXIT, type CliIo } from '../io.js';
import { withConfigOption } from '../options.js';
import { style, type Tone } from '../terminal.js';
import type { Check, CheckStatus } from '../doctor-checks.js';

/** Options of `gatehouse doctor`. */
export interface DoctorOptions {
  config?: string;
  json?: boolean;
}

const TONES: Record<CheckStatus, Tone> = { ok: 'green', warn: 'yellow', fail: 'red', skip: 'gray' };

/** The report as human lines: each check with ok/warn/fail, its details and its fix. */
export function formatReport(checks: readonly Check[], colour: boolean): string {
  const lines: string[] = [];
  for (const check of checks) {
    const status = style(colour, TONES[check.status], check.status.padEnd(4));
    lines.push(`${status}  ${style(colour, 'bold', check.name.padEnd(10))}  ${check.message}`);
    for (const detail of check.details ?? []) {
      // A multi-line detail (a YAML error with its excerpt) stays under its dash.
      const [first, ...rest] = detail.split('\n').filter((line) => line.trim() !== '');
      lines.push(`${' '.repeat(18)}- ${first ?? ''}`, ...rest.map((line) => `${' '.repeat(20)}${line}`));
    }
    if (check.fix && check.status !== 'ok')
      lines.push(`${' '.repeat(18)}${style(colour, 'cyan', 'fix:')} ${check.fix}`);
  }
  const failed = checks.filter((c) => c.status === 'fail').length;
  const warned = checks.filter((c) => c.status === 'warn').length;
  lines.push(
    '',
    failed > 0
      ? style(colour, 'red', `${failed} check(s) failed${warned ? `, ${warned} warning(s)` : ''}`)
      : style(colour, 'green', `all checks passed${warned ? ` (${warned} warning(s))` : ''}`),
  );
  return `${lines.join('\n')}\n`;
}

/** `gatehouse doctor [--config FILE] [--json]`: checks a local installation and says how to fix each problem. */
export function registerDoctor(program: Command, io: CliIo): void {
  withConfigOption(
    program
      .command('doctor')
      .description('check the configuration, data dir, store, provider, ports and bus, with a fix for each problem')
      .option('--json', 'print the checks as JSON')
      .addHelpText(
        'after',
        '\nEach check prints ok, warn or fail (fail with a fix). Exit code 1 when any check fails, 0 otherwise.\n' +
          'Nothing is changed; the provider check makes one models-list call with the configured key.',
      ),
  ).action(async (options: DoctorOptions) => {
    // The checks open the store and the provider: their modules are loaded only now (ADR 0044).
    const { runDoctor } = await import('./doctor.run.js');
    const { configPath, checks } = await runDoctor(io, options);
    const ok = !checks.some((c) => c.status === 'fail');
    if (options.json) {
      io.out(`${JSON.stringify({ ok, config_file: configPath, checks })}\n`);
    } else {
      io.out(formatReport(checks, io.stdoutIsTTY));
    }
    if (!ok) throw new CliError('doctor found problems (see the fixes above)', EXIT.failure);
  });
}
