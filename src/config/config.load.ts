import { existsSync, readFileSync } from 'node:fs';
import { isAbsolute, join, resolve } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { type Config, type ConfigIssue, defaultConfig, validateConfig } from './config.schema.js';

/** Start-up was refused: every problem found, each at a dotted path. */
export class ConfigError extends Error {
  constructor(readonly issues: ConfigIssue[]) {
    super(`invalid configuration:\n${issues.map((i) => `  ${i.path}: ${i.message}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

/** What the command line said. */
export interface CliFlags {
  config?: string;
  host?: string;
  port?: string;
  dataDir?: string;
  help?: boolean;
}

/** The loaded configuration and where it came from. */
export interface LoadedConfig {
  config: Config;
  /** Absolute path of the configuration file read, or null when none. */
  configPath: string | null;
  /** The raw object from the file (before env and flags), for writes back to it. */
  fileObject: Record<string, unknown>;
  /** Non-fatal problems worth a start-up warning. */
  warnings: string[];
}

const FLAG_NAMES: Record<string, keyof CliFlags> = {
  '--config': 'config',
  '--host': 'host',
  '--port': 'port',
  '--data-dir': 'dataDir',
};

/** Parses `--config F --host H --port P --data-dir D` (also `--flag=value`). */
export function parseArgs(argv: readonly string[]): CliFlags {
  const flags: CliFlags = {};
  const issues: ConfigIssue[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '--help' || arg === '-h') {
      flags.help = true;
      continue;
    }
    const eq = arg.indexOf('=');
    const name = eq > 0 ? arg.slice(0, eq) : arg;
    const key = FLAG_NAMES[name];
    if (!key) {
      issues.push({ path: '(cli)', message: `unknown argument ${JSON.stringify(arg)}` });
      continue;
    }
    const value = eq > 0 ? arg.slice(eq + 1) : argv[++i];
    if (value === undefined || value === '') {
      issues.push({ path: '(cli)', message: `${name} needs a value` });
      continue;
    }
    (flags as Record<string, string>)[key] = value;
  }
  if (issues.length) throw new ConfigError(issues);
  return flags;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function child(obj: Record<string, unknown>, key: string): Record<string, unknown> {
  const existing = obj[key];
  if (isRecord(existing)) return existing;
  const created: Record<string, unknown> = {};
  obj[key] = created;
  return created;
}

/** A number when the text is a plain integer, else the text (so the schema reports the type error). */
function intOrText(text: string): number | string {
  return /^\d+$/.test(text) ? Number(text) : text;
}

/** Reads and parses a YAML configuration file; the empty file is `{}`. */
export function readConfigFile(path: string): Record<string, unknown> {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new ConfigError([{ path: '(file)', message: `cannot read ${path}: ${(err as Error).message}` }]);
  }
  let parsed: unknown;
  try {
    parsed = parseYaml(text);
  } catch (err) {
    throw new ConfigError([{ path: '(file)', message: `${path} is not valid YAML: ${(err as Error).message}` }]);
  }
  if (parsed === null || parsed === undefined) return {};
  if (!isRecord(parsed)) throw new ConfigError([{ path: '(root)', message: `${path} must hold a mapping` }]);
  return parsed;
}

/**
 * Applies the documented environment variables over a raw config object
 * (DECISIONS §1). `GATEHOUSE_*` always win over the file; provider keys,
 * DATABASE_URL and REDIS_URL only fill what the file left unset.
 */
export function applyEnvironment(raw: Record<string, unknown>, env: NodeJS.ProcessEnv): void {
  const gateway = (): Record<string, unknown> => child(raw, 'gateway');
  if (env.GATEHOUSE_HOST) gateway().host = env.GATEHOUSE_HOST;
  if (env.GATEHOUSE_PORT) gateway().port = intOrText(env.GATEHOUSE_PORT);
  if (env.GATEHOUSE_DATA_DIR) raw.data_dir = env.GATEHOUSE_DATA_DIR;

  const provider = isRecord(raw.provider) ? raw.provider : undefined;
  const type = provider?.type ?? 'echo';
  if (type === 'openai') {
    if (env.OPENAI_API_KEY && provider && provider.api_key == null) provider.api_key = env.OPENAI_API_KEY;
    if (env.OPENAI_BASE_URL && provider && provider.base_url == null) provider.base_url = env.OPENAI_BASE_URL;
  }
  if (type === 'anthropic' && env.ANTHROPIC_API_KEY && provider && provider.api_key == null) {
    provider.api_key = env.ANTHROPIC_API_KEY;
  }
  if (env.DATABASE_URL && !('storage' in raw) && /^postgres(ql)?:\/\//.test(env.DATABASE_URL)) {
    raw.storage = { driver: 'postgres', url: env.DATABASE_URL };
  } else if (
    env.DATABASE_URL &&
    isRecord(raw.storage) &&
    raw.storage.driver === 'postgres' &&
    raw.storage.url == null
  ) {
    raw.storage.url = env.DATABASE_URL;
  }
  if (env.REDIS_URL && !('bus' in raw)) raw.bus = { driver: 'redis', url: env.REDIS_URL };
}

/** Applies CLI flags, the last and strongest layer. */
export function applyFlags(raw: Record<string, unknown>, flags: CliFlags): void {
  if (flags.host !== undefined) child(raw, 'gateway').host = flags.host;
  if (flags.port !== undefined) child(raw, 'gateway').port = intOrText(flags.port);
  if (flags.dataDir !== undefined) raw.data_dir = flags.dataDir;
}

/** Entries of allowed_hosts that are wildcards and therefore dropped (spec: Origin and host checks). */
const WILDCARD_HOSTS = new Set(['', '0.0.0.0', '::', '[::]']);

/** Start-up warnings derivable from a valid config. */
export function configWarnings(config: Config): string[] {
  const warnings: string[] = [];
  const hosts = config.gateway.auth.allowed_hosts;
  if (hosts.length > 0 && hosts.every((h) => WILDCARD_HOSTS.has(h.trim().toLowerCase()))) {
    warnings.push('gateway.auth.allowed_hosts holds only wildcard entries; it counts as not configured');
  }
  const origins = config.gateway.auth.allowed_origins;
  if (origins.some((o) => o.trim() === '*' || o.trim() === '')) {
    warnings.push('gateway.auth.allowed_origins wildcard entries are ignored; list each origin');
  }
  return warnings;
}

/** Name of the configuration file PUT /config creates in `data_dir` when the gateway runs without one. */
export const DATA_DIR_CONFIG_FILE = 'gatehouse.yaml';

/** `<data_dir>/gatehouse.yaml`: where PUT /config writes when no configuration file was loaded. */
export function dataDirConfigPath(dataDir: string): string {
  return join(dataDir, DATA_DIR_CONFIG_FILE);
}

/** Options of `loadConfig`. */
export interface LoadConfigOptions {
  argv: readonly string[];
  env: NodeJS.ProcessEnv;
  cwd: string;
  /**
   * When no file is named and `./gatehouse.yaml` is absent, also read
   * `<data_dir>/gatehouse.yaml` (the file PUT /config creates), with
   * `data_dir` from `--data-dir`, `GATEHOUSE_DATA_DIR` or the default.
   * Off unless asked for.
   */
  dataDirFallback?: boolean;
}

/**
 * Loads the configuration: defaults ← file ← environment ← CLI flags.
 * The file is `--config`, else `GATEHOUSE_CONFIG`, else `./gatehouse.yaml`
 * when present (else, with `dataDirFallback`, `<data_dir>/gatehouse.yaml`
 * when present). Throws ConfigError listing every problem at once.
 */
export function loadConfig(options: LoadConfigOptions): LoadedConfig {
  const flags = parseArgs(options.argv);
  const explicit = flags.config ?? options.env.GATEHOUSE_CONFIG;
  let configPath: string | null = null;
  if (explicit) {
    configPath = isAbsolute(explicit) ? explicit : resolve(options.cwd, explicit);
    if (!existsSync(configPath)) throw new ConfigError([{ path: '(file)', message: `${configPath} does not exist` }]);
  } else if (existsSync(resolve(options.cwd, 'gatehouse.yaml'))) {
    configPath = resolve(options.cwd, 'gatehouse.yaml');
  } else if (options.dataDirFallback) {
    const dataDir = flags.dataDir ?? (options.env.GATEHOUSE_DATA_DIR || defaultConfig().data_dir);
    const candidate = dataDirConfigPath(resolve(options.cwd, dataDir));
    if (existsSync(candidate)) configPath = candidate;
  }
  const fileObject = configPath ? readConfigFile(configPath) : {};
  const raw = structuredClone(fileObject);
  applyEnvironment(raw, options.env);
  applyFlags(raw, flags);
  const result = validateConfig(raw);
  if (!result.ok) throw new ConfigError(result.errors);
  const config = result.config;
  config.data_dir = resolve(options.cwd, config.data_dir);
  return { config, configPath, fileObject, warnings: configWarnings(config) };
}
