/** The checks of `gatehouse doctor` (doctor.ts), loaded only when that command runs. */
import { ConfigError, loadConfig, type LoadedConfig } from '../../config/config.load.js';
import type { CliIo } from '../io.js';
import {
  checkBus,
  checkDataDir,
  checkPorts,
  checkProvider,
  checkStartup,
  checkStore,
  type Check,
} from '../doctor-checks.js';
import type { DoctorOptions } from './doctor.js';

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
