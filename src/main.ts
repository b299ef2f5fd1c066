#!/usr/bin/env node
import { ConfigError, loadConfig } from './config/config.load.js';
import { createGateway } from './gateway.js';
import { isLoopbackHost } from './security/host-origin.js';
import { startupRefusal } from './security/admin-token.js';
import { existsSync } from 'node:fs';
import { join } from 'node:path';

const USAGE = `Usage: gatehouse [--config FILE] [--host HOST] [--port PORT] [--data-dir DIR]

Starts the Gatehouse agent gateway. Configuration is read from FILE (or
$GATEHOUSE_CONFIG, or ./gatehouse.yaml), then the environment, then flags.
`;

function fail(message: string): never {
  process.stderr.write(`gatehouse: ${message}\n`);
  process.exit(2);
}

/** Process entry: config, gateway, listen, signals. */
async function main(): Promise<void> {
  let loaded;
  try {
    loaded = loadConfig({ argv: process.argv.slice(2), env: process.env, cwd: process.cwd(), dataDirFallback: true });
  } catch (err) {
    if (err instanceof ConfigError) fail(`${err.message}\nstart-up refused`);
    throw err;
  }
  if (process.argv.includes('--help') || process.argv.includes('-h')) {
    process.stdout.write(USAGE);
    return;
  }
  const { config } = loaded;
  const auth = config.gateway.auth;
  const refusal = startupRefusal({
    profile: config.security.profile,
    bindHost: config.gateway.host,
    configuredTokens: auth.api_tokens.length + auth.admin_tokens.length,
    adminTokenFileExists: existsSync(join(config.data_dir, 'gateway_auth', 'admin_token')),
  });
  if (refusal) fail(`${refusal}\nstart-up refused`);

  const gateway = await createGateway({ config, configPath: loaded.configPath, fileObject: loaded.fileObject });
  const log = gateway.logger.child({ source: 'lifecycle' });
  for (const warning of loaded.warnings) log.warn(warning);
  if (loaded.configPath) log.info({ config_file: loaded.configPath }, 'configuration loaded');

  let stopping = false;
  const stop = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'draining');
    gateway.shutdown().then(
      () => process.exit(0),
      (err: unknown) => {
        log.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));

  let address: string;
  try {
    address = await gateway.listen();
  } catch (err) {
    log.error({ err: (err as Error).message }, 'cannot listen');
    await gateway.shutdown(0);
    fail(`cannot listen on ${config.gateway.host}:${config.gateway.port}: ${(err as Error).message}`);
  }
  const url = address;
  log.info(
    {
      url,
      api: `${url}${config.gateway.api_prefix}`,
      profile: config.security.profile,
      loopback: isLoopbackHost(config.gateway.host),
    },
    `listening on ${url}`,
  );
  process.stderr.write(`Gatehouse listening on ${url} (health: ${url}${config.gateway.api_prefix}/health)\n`);
  if (gateway.firstStart.adminToken) {
    // Shown once, on the terminal only: never through the logger, the logs API or the audit log.
    process.stderr.write(
      `\nFirst start: an admin token was generated and saved to ${gateway.firstStart.adminTokenPath} (mode 0600).\n` +
        `  Admin token: ${gateway.firstStart.adminToken}\n` +
        `  Try: curl -H "X-API-Token: <token>" ${url}${config.gateway.api_prefix}/health\n\n`,
    );
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`gatehouse: fatal: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
