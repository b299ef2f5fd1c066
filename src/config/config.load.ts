import { resolve } from 'node:path';
import {
  type CliFlags,
  type ClientSettings,
  ConfigError,
  type EnvironmentOutcome,
  parseArgs,
  type ProviderSource,
  type RawConfigOptions,
  readRawConfig,
} from './config.file.js';
import { type Config, validateConfig } from './config.schema.js';

export {
  applyEnvironment,
  applyFlags,
  type CliFlags,
  ConfigError,
  DATA_DIR_CONFIG_FILE,
  dataDirConfigPath,
  type EnvironmentOutcome,
  parseArgs,
  type ProviderSource,
  readConfigFile,
} from './config.file.js';

/** The loaded configuration and where it came from. */
export interface LoadedConfig {
  config: Config;
  /** Absolute path of the configuration file read, or null when none. */
  configPath: string | null;
  /** The raw object from the file (before env and flags), for writes back to it. */
  fileObject: Record<string, unknown>;
  /** Non-fatal problems worth a start-up warning. */
  warnings: string[];
  /** Why `config.provider.type` is what it is (the start-up banner says it). */
  providerSource: ProviderSource;
  /** The environment variable that selected the provider (`providerSource` `environment`), else null. */
  providerVariable: EnvironmentOutcome['providerVariable'];
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

/** Options of `loadConfig`: those of `readRawConfig`, with the flags parsed here when not given. */
export interface LoadConfigOptions extends Omit<RawConfigOptions, 'flags'> {
  /** Command-line arguments to parse (`--config`, `--host`, `--port`, `--data-dir`); ignored when `flags` is given. */
  argv?: readonly string[];
  /** Flags already parsed (by the command line's argument library). */
  flags?: CliFlags;
}

/**
 * Loads the configuration: defaults ← file ← environment ← CLI flags.
 * The file is `--config`, else `GATEHOUSE_CONFIG`, else `./gatehouse.yaml`
 * when present (else, with `dataDirFallback`, `<data_dir>/gatehouse.yaml`
 * when present). Throws ConfigError listing every problem at once.
 */
export function loadConfig(options: LoadConfigOptions): LoadedConfig {
  const flags = options.flags ?? parseArgs(options.argv ?? []);
  const found = readRawConfig({ flags, env: options.env, cwd: options.cwd, dataDirFallback: options.dataDirFallback });
  const result = validateConfig(found.raw);
  if (!result.ok) throw new ConfigError(result.errors);
  const config = result.config;
  config.data_dir = resolve(options.cwd, config.data_dir);
  return {
    config,
    configPath: found.configPath,
    fileObject: found.fileObject,
    warnings: configWarnings(config),
    ...found.environment,
  };
}

/** The settings a client command reads (`clientSettings`), from a validated configuration. */
export function clientSettingsOf(loaded: Pick<LoadedConfig, 'config' | 'configPath'>): ClientSettings {
  const { config, configPath } = loaded;
  const { auth } = config.gateway;
  return {
    configPath,
    dataDir: config.data_dir,
    host: config.gateway.host,
    port: config.gateway.port,
    apiPrefix: config.gateway.api_prefix,
    profile: config.security.profile,
    configuredTokens: auth.admin_tokens.length + auth.api_tokens.length,
  };
}
