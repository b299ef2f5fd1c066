import type { Command } from 'commander';
import type { SelfAuditReport, Severity } from '../../self-audit/index.js';
import { CliError, EXIT, type CliIo } from '../io.js';
import { withConfigOption } from '../options.js';
import { localConfig } from '../target.js';
import { style, type Tone } from '../terminal.js';

/** Width the human report wraps its text at. */
const WIDTH = 100;

const TONE: Record<Severity, Tone> = { critical: 'red', warning: 'yellow', info: 'cyan' };

/** Wraps `text` into lines of at most `width` characters (a longer word keeps its own line). */
function wrap(text: string, width: number): string[] {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(/\s+/).filter(Boolean)) {
    if (line !== '' && line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else {
      line = line === '' ? word : `${line} ${word}`;
    }
  }
  if (line !== '') lines.push(line);
  return lines;
}

/** The report as a table for people: severity, id and title, then what was found and the fix under each. */
export function renderAuditReport(
  report: SelfAuditReport,
  options: { colour: boolean; configPath: string | null; dataDir: string },
): string {
  const { colour } = options;
  const source = options.configPath ?? 'the built-in defaults (no configuration file)';
  const out = [`Security audit of ${source}`, `  data dir ${options.dataDir}`, ''];
  if (report.findings.length === 0) {
    out.push(style(colour, 'green', 'No findings.'));
  } else {
    const idWidth = Math.max(2, ...report.findings.map((f) => f.id.length));
    const indent = ' '.repeat(2 + 8 + 2); // under the id column
    const textWidth = WIDTH - indent.length;
    out.push(style(colour, 'bold', `  ${'SEVERITY'.padEnd(8)}  ${'ID'.padEnd(idWidth)}  FINDING`));
    for (const f of report.findings) {
      out.push(`  ${style(colour, TONE[f.severity], f.severity.padEnd(8))}  ${f.id.padEnd(idWidth)}  ${f.title}`);
      wrap(`found: ${f.found}`, textWidth).forEach((line) => out.push(`${indent}${line}`));
      wrap(`fix: ${f.fix}`, textWidth).forEach((line) => out.push(`${indent}${style(colour, 'dim', line)}`));
    }
  }
  const { critical, warning, info } = report.summary;
  out.push('', `${critical} critical, ${warning} warning, ${info} info`);
  return `${out.join('\n')}\n`;
}

/** `gatehouse security audit`: the self-audit of the local configuration and data dir (no gateway needed). */
export function registerSecurity(program: Command, io: CliIo): void {
  const security = program.command('security').description('security checks of the local configuration');
  withConfigOption(
    security
      .command('audit')
      .description(
        'audit the local configuration and data dir: binds, Host rules, tokens, webhook, profile, file modes, ' +
          'provider transport, budget (exit 1 on a critical finding)',
      )
      .option('--json', 'print the findings as JSON'),
  ).action(async (options: { config?: string; json?: boolean }) => {
    const { config, configPath } = await localConfig(io, options.config);
    const { hasCritical, nodeFileProbe, runSelfAudit } = await import('../../self-audit/index.js');
    const report = await runSelfAudit(config, nodeFileProbe);
    if (options.json) io.out(`${JSON.stringify(report, null, 2)}\n`);
    else io.out(renderAuditReport(report, { colour: io.stdoutIsTTY, configPath, dataDir: config.data_dir }));
    if (hasCritical(report)) {
      const n = report.summary.critical;
      throw new CliError(`${n} critical finding${n === 1 ? '' : 's'}`, EXIT.failure);
    }
  });
}
