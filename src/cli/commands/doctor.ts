import type { Command } from 'commander';
import { ConfigError, loadConfig, type LoadedConfig } from '../../config/config.load.js';
import { CliError, EXIT, type CliIo } from '../io.js';
import { withConfigOption } from '../options.js';
import { style, type Tone } from '../terminal.js';
import {
  checkBus,
  checkDataDir,
  checkPorts,
  checkProvider,
  checkStartup,
  checkStore,
  type Check,
  type CheckStatus,
} from '../doctor-checks.js';

/** Options of `gatehouse doctor`. */
interface DoctorOptions {
  config?: string;
  json?: boolean;
}

const TONES: Record<CheckStatus, Tone> = { ok: 'green', warn: 'yellow', fail: 'red', skip: 'gray' };

/** The configuration check: it loads (every problem listed), with its warnings. */
function checkConfig(io: CliIo, options: DoctorOptions): { check: Check; loaded: LoadedConfig | null } {
  try {
    const loaded = loadConfig({
      argv: options.config ? ['--config', options.config] : [],
      env: io.env,
      cwd: io.cwd,
      dataDirFallback: true,
    });
    const where = loaded.configPath ?? 'no file: built-in defaults and the environment';
    if (loaded.warnings.length > 0) {
      return {
        loaded,
        check: {
          name: 'config',
          status: 'warn',
          message: `${where}: valid, with ${loaded.warnings.length} warning(s)`,
          details: loaded.warnings,
          fix: `edit ${loaded.configPath ?? 'gatehouse.yaml'} as each warning says`,
        },
      };
    }
    return {
      loaded,
      check: {
        name: 'config',
        status: 'ok',
        message: loaded.configPath ? `${loaded.configPath} is valid` : `${where} (gatehouse init writes a file)`,
      },
    };
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    const fileProblem = err.issues.find((i) => i.path === '(file)' || i.path === '(root)');
    return {
      loaded: null,
      check: {
        name: 'config',
        status: 'fail',
        message: `invalid configuration: ${err.issues.length} problem(s)`,
        details: err.issues.map((i) => `${i.path}: ${i.message}`),
        fix: fileProblem
          ? 'fix the file as said above (YAML syntax at the line and column shown; the file must hold a mapping)'
          : 'fix each key listed (a dotted path into the file); examples/gatehouse.yaml lists every key with its ' +
            'type and default, and unknown keys are refused',
      },
    };
  }
}

/** Runs every check; those that need a valid configuration are skipped without one. */
export async function runDoctor(
  io: CliIo,
  options: DoctorOptions,
): Promise<{ configPath: string | null; checks: Check[] }> {
  const { check: configCheck, loaded } = checkConfig(io, options);
  if (!loaded) {
    const skipped = ['start-up', 'data dir', 'store', 'provider', 'port'].map((name): Check => ({
      name,
      status: 'skip',
      message: 'skipped: the configuration does not load',
    }));
    return { configPath: null, checks: [configCheck, ...skipped] };
  }
  const { config } = loaded;
  const dataDir = checkDataDir(config.data_dir);
  // The permissions are judged before the store is opened (opening SQLite tightens them).
  const store = await checkStore(config, dataDir.status === 'fail');
  const [provider, ports, bus] = await Promise.all([checkProvider(loaded), checkPorts(config), checkBus(config)]);
  return {
    configPath: loaded.configPath,
    checks: [configCheck, checkStartup(config), dataDir, store, provider, ...ports, ...(bus ? [bus] : [])],
  };
}

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
