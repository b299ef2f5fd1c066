import { existsSync, readFileSync } from 'node:fs';
import { isAbsolute, join, resolve } from 'node:path';
import { parse as parseYaml } from 'yaml';
import type { ConfigIssue } from './config.schema.js';

// The configuration file and the layers over it (environment, flags), without the schema: what the client
// commands need to find their gateway loads only this module and YAML (ADR 0044). config.load.ts validates.

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

/**
 * Why the model provider is the one in use: `file` (the file's `provider.type`), `environment` (no `provider`
 * block in the file, and OPENAI_API_KEY or ANTHROPIC_API_KEY is set) or `default` (neither: the built-in `echo`).
 */
export type ProviderSource = 'file' | 'environment' | 'default';

/** What the environment decided beyond plain values (`applyEnvironment`). */
export interface EnvironmentOutcome {
  providerSource: ProviderSource;
  /** The variable that selected the provider when `providerSource` is `environment`, else null. */
  providerVariable: 'OPENAI_API_KEY' | 'ANTHROPIC_API_KEY' | null;
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
 * DATABASE_URL, REDIS_URL and NATS_URL only fill what the file left unset. With no
 * `provider` block at all, OPENAI_API_KEY selects `openai` (with
 * OPENAI_BASE_URL when set), else ANTHROPIC_API_KEY selects `anthropic`;
 * a `provider` block in the file is never switched by the environment.
 * Returns why the provider is the one in use.
 */
export function applyEnvironment(raw: Record<string, unknown>, env: NodeJS.ProcessEnv): EnvironmentOutcome {
  const gateway = (): Record<string, unknown> => child(raw, 'gateway');
  if (env.GATEHOUSE_HOST) gateway().host = env.GATEHOUSE_HOST;
  if (env.GATEHOUSE_PORT) gateway().port = intOrText(env.GATEHOUSE_PORT);
  if (env.GATEHOUSE_DATA_DIR) raw.data_dir = env.GATEHOUSE_DATA_DIR;

  let outcome: EnvironmentOutcome = { providerSource: 'default', providerVariable: null };
  if (raw.provider === undefined) {
    if (env.OPENAI_API_KEY) {
      raw.provider = { type: 'openai' };
      outcome = { providerSource: 'environment', providerVariable: 'OPENAI_API_KEY' };
    } else if (env.ANTHROPIC_API_KEY) {
      raw.provider = { type: 'anthropic' };
      outcome = { providerSource: 'environment', providerVariable: 'ANTHROPIC_API_KEY' };
    }
  } else if (isRecord(raw.provider) && raw.provider.type !== undefined) {
    outcome = { providerSource: 'file', providerVariable: null };
  }

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
  else if (isRecord(raw.bus) && raw.bus.url == null) {
    // A bus block without a URL takes its driver's from the environment, as storage takes DATABASE_URL.
    const url = raw.bus.driver === 'redis' ? env.REDIS_URL : raw.bus.driver === 'nats' ? env.NATS_URL : undefined;
    if (url) raw.bus.url = url;
  }
  // TELEGRAM_BOT_TOKEN: enables Telegram when the file has no telegram block, else fills an unset token (DECISIONS §16).
  if (env.TELEGRAM_BOT_TOKEN) {
    const channels = child(raw, 'channels');
    if (channels.telegram === undefined) channels.telegram = { enabled: true, bot_token: env.TELEGRAM_BOT_TOKEN };
    else if (isRecord(channels.telegram) && channels.telegram.bot_token == null) {
      channels.telegram.bot_token = env.TELEGRAM_BOT_TOKEN;
    }
  }
  // SLACK_*: enable Slack when both required secrets are set and the file has no slack block, else fill unset ones.
  if (env.SLACK_BOT_TOKEN || env.SLACK_SIGNING_SECRET || env.SLACK_APP_TOKEN) {
    const channels = child(raw, 'channels');
    const given = {
      bot_token: env.SLACK_BOT_TOKEN,
      signing_secret: env.SLACK_SIGNING_SECRET,
      app_token: env.SLACK_APP_TOKEN,
    };
    if (channels.slack === undefined && given.bot_token && given.signing_secret) channels.slack = { enabled: true };
    const slack = isRecord(channels.slack) ? channels.slack : {};
    for (const [key, value] of Object.entries(given)) if (value && slack[key] == null) slack[key] = value;
  }
  // OpenTelemetry (DECISIONS §21): an OTLP endpoint in the environment turns tracing on unless the file decides;
  // the exporter reads the OTEL_* variables itself. OTEL_SDK_DISABLED=true turns it off whatever else says.
  if (env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) {
    const tracing = child(raw, 'tracing');
    if (tracing.enabled === undefined) tracing.enabled = true;
  }
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') child(raw, 'tracing').enabled = false;
  return outcome;
}

/** Applies CLI flags, the last and strongest layer. */
export function applyFlags(raw: Record<string, unknown>, flags: CliFlags): void {
  if (flags.host !== undefined) child(raw, 'gateway').host = flags.host;
  if (flags.port !== undefined) child(raw, 'gateway').port = intOrText(flags.port);
  if (flags.dataDir !== undefined) raw.data_dir = flags.dataDir;
}

/** Name of the configuration file PUT /config creates in `data_dir` when the gateway runs without one. */
export const DATA_DIR_CONFIG_FILE = 'gatehouse.yaml';

/** `<data_dir>/gatehouse.yaml`: where PUT /config writes when no configuration file was loaded. */
export function dataDirConfigPath(dataDir: string): string {
  return join(dataDir, DATA_DIR_CONFIG_FILE);
}

/**
 * Defaults the schema declares and the client commands read without it (`clientSettings`): one place for both.
 */
export const BASE_DEFAULTS = {
  data_dir: './data',
  host: '127.0.0.1',
  port: 58123,
  api_prefix: '/api/v1',
  profile: 'standard',
} as const;

/** What `gateway.api_prefix` must look like: starts with / and does not end with /. */
export const API_PREFIX_PATTERN = /^\/[A-Za-z0-9_\-/]*[A-Za-z0-9_-]$/;

/** The security profiles (DECISIONS §17). */
export const securityProfiles = ['minimal', 'standard', 'extended'] as const;

/** How a configuration is found and layered (`readRawConfig`). */
export interface RawConfigOptions {
  /** Flags of the command line (`--config`, `--host`, `--port`, `--data-dir`). */
  flags: CliFlags;
  env: NodeJS.ProcessEnv;
  cwd: string;
  /**
   * When no file is named and `./gatehouse.yaml` is absent, also read `<data_dir>/gatehouse.yaml` (the file
   * PUT /config creates), with `data_dir` from `--data-dir`, `GATEHOUSE_DATA_DIR` or the default. Off unless
   * asked for.
   */
  dataDirFallback?: boolean;
}

/** The configuration file's object and the layers over it, not yet validated. */
export interface RawConfig {
  /** Absolute path of the configuration file read, or null when none. */
  configPath: string | null;
  /** The raw object from the file (before env and flags), for writes back to it. */
  fileObject: Record<string, unknown>;
  /** The file's object with the environment and the flags applied. */
  raw: Record<string, unknown>;
  environment: EnvironmentOutcome;
}

/**
 * Finds the configuration file (`--config`, else `GATEHOUSE_CONFIG`, else `./gatehouse.yaml` when present, else
 * with `dataDirFallback` `<data_dir>/gatehouse.yaml` when present), reads it and applies the environment and the
 * flags. Throws ConfigError when a named file is missing or the file is not YAML.
 */
export function readRawConfig(options: RawConfigOptions): RawConfig {
  const { flags } = options;
  const explicit = flags.config ?? options.env.GATEHOUSE_CONFIG;
  let configPath: string | null = null;
  if (explicit) {
    configPath = isAbsolute(explicit) ? explicit : resolve(options.cwd, explicit);
    if (!existsSync(configPath)) throw new ConfigError([{ path: '(file)', message: `${configPath} does not exist` }]);
  } else if (existsSync(resolve(options.cwd, 'gatehouse.yaml'))) {
    configPath = resolve(options.cwd, 'gatehouse.yaml');
  } else if (options.dataDirFallback) {
    const dataDir = flags.dataDir ?? (options.env.GATEHOUSE_DATA_DIR || BASE_DEFAULTS.data_dir);
    const candidate = dataDirConfigPath(resolve(options.cwd, dataDir));
    if (existsSync(candidate)) configPath = candidate;
  }
  const fileObject = configPath ? readConfigFile(configPath) : {};
  const raw = structuredClone(fileObject);
  const environment = applyEnvironment(raw, options.env);
  applyFlags(raw, flags);
  return { configPath, fileObject, raw, environment };
}

/** The few settings a client command reads from the local configuration: where the gateway is, and its tokens. */
export interface ClientSettings {
  configPath: string | null;
  /** Absolute. */
  dataDir: string;
  host: string;
  port: number;
  apiPrefix: string;
  profile: (typeof securityProfiles)[number];
  /** How many tokens `gateway.auth` lists (admin and api together). */
  configuredTokens: number;
}

/**
 * The client settings read straight from the layered object, without the schema (ADR 0044: it is most of a
 * client command's start). Returns null when one of the keys read is not plainly valid: the caller then
 * validates the whole configuration, which names the problem as `serve` would.
 */
export function clientSettings(found: RawConfig, cwd: string): ClientSettings | null {
  const record = (value: unknown): Record<string, unknown> | null =>
    value === undefined ? {} : isRecord(value) ? value : null;
  const gateway = record(found.raw.gateway);
  const auth = gateway && record(gateway.auth);
  const security = record(found.raw.security);
  if (!gateway || !auth || !security) return null;
  const dataDir = found.raw.data_dir ?? BASE_DEFAULTS.data_dir;
  const host = gateway.host ?? BASE_DEFAULTS.host;
  const port = gateway.port ?? BASE_DEFAULTS.port;
  const apiPrefix = gateway.api_prefix ?? BASE_DEFAULTS.api_prefix;
  const profile = security.profile ?? BASE_DEFAULTS.profile;
  const tokens = (value: unknown): number | null =>
    value === undefined
      ? 0
      : Array.isArray(value) && value.every((t) => typeof t === 'string' && t !== '')
        ? value.length
        : null;
  const admin = tokens(auth.admin_tokens);
  const api = tokens(auth.api_tokens);
  if (
    typeof dataDir !== 'string' ||
    dataDir === '' ||
    typeof host !== 'string' ||
    typeof port !== 'number' ||
    !Number.isInteger(port) ||
    port < 0 ||
    port > 65_535 ||
    typeof apiPrefix !== 'string' ||
    !API_PREFIX_PATTERN.test(apiPrefix) ||
    !securityProfiles.includes(profile as never) ||
    admin === null ||
    api === null
  ) {
    return null;
  }
  return {
    configPath: found.configPath,
    dataDir: resolve(cwd, dataDir),
    host,
    port,
    apiPrefix,
    profile: profile as ClientSettings['profile'],
    configuredTokens: admin + api,
  };
}
