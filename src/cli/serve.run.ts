/** Starting the gateway for `gatehouse serve` (serve.ts): loaded only when that command runs. */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { ConfigError, loadConfig, type LoadedConfig } from '../config/config.load.js';
import { secretValues } from '../config/config.redact.js';
import type { Config } from '../config/config.schema.js';
import { createGateway, gatewayInternals, type Gateway } from '../gateway.js';
import { packageVersion } from '../lib/version.js';
import { ensurePrivateDirSync } from '../lib/private-files.js';
import { createLogPipeline, parseLogLine, type LogPipeline } from '../logs/index.js';
import { createProvider } from '../runtime/index.js';
import { adminTokenPath, dashboardSignInLink, startupRefusal } from '../security/admin-token.js';
import { createTokenScrubber } from '../security/audit.js';
import { isLoopbackHost } from '../security/host-origin.js';
import { humanBanner, jsonBanner, type BannerFacts } from './banner.js';
import { formatLogLine } from './commands/logs.js';
import { CliError, EXIT, type CliIo } from './io.js';
import type { ServeOptions } from './serve.js';
import { startFailure } from './start-failure.js';

/** Opens `url` with the desktop's opener when there is a desktop; false when there is none or it failed. */
function openInBrowser(io: CliIo, url: string): boolean {
  const opener =
    process.platform === 'darwin'
      ? 'open'
      : process.platform === 'win32'
        ? 'explorer'
        : io.env.DISPLAY || io.env.WAYLAND_DISPLAY
          ? 'xdg-open'
          : null;
  if (!opener) return false;
  try {
    const child = spawn(opener, [url], { stdio: 'ignore', detached: true });
    child.on('error', () => undefined);
    child.unref();
    return true;
  } catch {
    return false;
  }
}

/** Reads the admin token file; null when it is absent or unreadable. */
function readTokenFile(path: string): string | null {
  try {
    return readFileSync(path, 'utf8').trim() || null;
  } catch {
    return null;
  }
}

/**
 * On a terminal the log lines are shown as readable lines (time, level, source, message, fields) instead of JSON;
 * the day files, the ring buffer and GET /logs keep the JSON entries. The log pipeline is built here to choose
 * that output, and scrubs the same secrets the gateway's own pipeline would: the configured ones, and the admin
 * token (`addSecret`, once the first start has generated it).
 */
function terminalLogs(io: CliIo, config: Config): { logs: LogPipeline; addSecret(secret: string): void } {
  ensurePrivateDirSync(config.data_dir);
  const secrets = secretValues(config);
  const stored = readTokenFile(adminTokenPath(config.data_dir));
  if (stored) secrets.push(stored);
  let scrub = createTokenScrubber(secrets);
  const logs = createLogPipeline({
    dataDir: config.data_dir,
    level: config.logs.level,
    bufferEntries: config.logs.buffer_entries,
    scrub: (line) => scrub(line),
    stdout: {
      write(line: string): void {
        const parsed = parseLogLine(line.trimEnd());
        io.out(parsed ? `${formatLogLine(parsed.entry, true)}\n` : line);
      },
    },
  });
  return {
    logs,
    addSecret(secret) {
      secrets.push(secret);
      scrub = createTokenScrubber(secrets);
    },
  };
}

/** Starts the gateway and runs until a signal drains it. */
export async function serve(io: CliIo, options: ServeOptions): Promise<void> {
  let loaded: LoadedConfig;
  try {
    loaded = loadConfig({
      flags: { config: options.config, host: options.host, port: options.port, dataDir: options.dataDir },
      env: io.env,
      cwd: io.cwd,
      dataDirFallback: true,
    });
  } catch (err) {
    if (err instanceof ConfigError) throw new CliError(`${err.message}\nstart-up refused`, EXIT.usage);
    throw err;
  }
  const { config } = loaded;
  const auth = config.gateway.auth;
  const tokenFile = adminTokenPath(config.data_dir);
  const refusal = startupRefusal({
    profile: config.security.profile,
    bindHost: config.gateway.host,
    configuredTokens: auth.api_tokens.length + auth.admin_tokens.length,
    adminTokenFileExists: existsSync(tokenFile),
  });
  if (refusal) throw new CliError(`${refusal}\nstart-up refused`, EXIT.usage);

  // A terminal gets human lines only (banner and logs); anything else gets JSON lines only.
  const human = io.stdoutIsTTY;
  const terminal = human ? terminalLogs(io, config) : null;
  let gateway: Gateway;
  try {
    gateway = await createGateway({
      config,
      configPath: loaded.configPath,
      fileObject: loaded.fileObject,
      ...(terminal ? { logs: terminal.logs } : {}),
    });
  } catch (err) {
    await terminal?.logs.close(); // the gateway closes only a pipeline it built
    throw startFailure(err, config.data_dir) ?? err;
  }
  if (terminal && gateway.firstStart.adminToken) terminal.addSecret(gateway.firstStart.adminToken);
  const log = gateway.logger.child({ source: 'lifecycle' });
  for (const warning of loaded.warnings) log.warn(warning);
  if (loaded.configPath) log.info({ config_file: loaded.configPath }, 'configuration loaded');

  let stopping = false;
  const stop = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'draining');
    gateway
      .shutdown()
      .then(() => terminal?.logs.close())
      .then(
        () => process.exit(0),
        (err: unknown) => {
          log.error({ err }, 'shutdown failed');
          process.exit(1);
        },
      );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));

  let url: string;
  try {
    url = await gateway.listen();
  } catch (err) {
    log.error({ err: (err as Error).message }, 'cannot listen');
    await gateway.shutdown(0);
    await terminal?.logs.close();
    throw new CliError(
      `cannot listen on ${config.gateway.host}:${config.gateway.port}: ${(err as Error).message}`,
      EXIT.failure,
    );
  }

  const provider = createProvider(config.provider);
  const webhook = gatewayInternals(gateway).webhook;
  const generated = gateway.firstStart.adminToken;
  const facts: BannerFacts = {
    url,
    apiPrefix: config.gateway.api_prefix,
    version: packageVersion(),
    provider: {
      type: provider.type,
      model: provider.model,
      modelConfigured: config.provider.model !== null,
      source: loaded.providerSource,
      variable: loaded.providerVariable,
    },
    configPath: loaded.configPath,
    dataDir: config.data_dir,
    webhookUrl: webhook?.address ? `${webhook.address}${config.channels.webhook.path}` : null,
    generatedToken: generated ? { token: generated, path: gateway.firstStart.adminTokenPath ?? tokenFile } : null,
    adminTokenFile: !generated && existsSync(tokenFile) ? tokenFile : null,
  };
  // The banner goes to standard error, not through the logger: shown whatever logs.level is, and the first-start
  // token reaches no log line, log file or log API.
  io.err(human ? humanBanner(facts, true) : jsonBanner(facts, new Date()));
  log.info(
    {
      url,
      api: `${url}${config.gateway.api_prefix}`,
      profile: config.security.profile,
      loopback: isLoopbackHost(config.gateway.host),
      provider: provider.type,
      model: provider.type === 'echo' ? null : provider.model,
      provider_source: loaded.providerSource,
      ...(facts.adminTokenFile ? { admin_token_file: facts.adminTokenFile } : {}),
    },
    `listening on ${url}`,
  );
  if (options.open) {
    const token = readTokenFile(tokenFile);
    const link = token ? dashboardSignInLink(url, token) : `${url}/`;
    const opened = openInBrowser(io, link);
    const text = `Dashboard: ${link}${opened ? ' (opened in your browser)' : ''}`;
    io.err(
      human
        ? `${text}\n`
        : `${JSON.stringify({ timestamp: new Date().toISOString(), level: 'info', source: 'lifecycle', message: text })}\n`,
    );
  }
}
