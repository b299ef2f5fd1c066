import { existsSync, mkdtempSync, readdirSync, rmdirSync, statSync } from 'node:fs';
import { createConnection, createServer, type Socket } from 'node:net';
import { dirname, join } from 'node:path';
import { connect as tlsConnect } from 'node:tls';
import type { LoadedConfig } from '../config/config.load.js';
import type { Config } from '../config/config.schema.js';
import { createProvider } from '../runtime/index.js';
import { adminTokenPath, startupRefusal } from '../security/admin-token.js';
import { createStore } from '../store/index.js';
import { localUrl } from './target.js';

/**
 * The checks of `gatehouse doctor`. Each returns a `Check`: ok, warn, fail (with a concrete fix) or skip. They
 * leave nothing behind: the data dir is looked at (and an empty probe directory made in it and removed at once),
 * the store is opened only when its database exists (and queried, never written), ports are probed by binding
 * and closing at once, and the provider gets one models-list call.
 */

/** The verdict of one check. */
export type CheckStatus = 'ok' | 'warn' | 'fail' | 'skip';

/** One check's outcome. */
export interface Check {
  name: string;
  status: CheckStatus;
  message: string;
  /** Lines under the message (each problem of a list). */
  details?: string[];
  /** What to do about a warn or fail. */
  fix?: string;
}

/** Milliseconds a network probe (provider, port owner, bus) may take. */
const PROBE_MS = 5000;
/** Milliseconds the bus and port-owner probes may take. */
const QUICK_PROBE_MS = 2000;

const errorCode = (err: unknown): string | undefined =>
  (err as { code?: string }).code ?? (err as { cause?: { code?: string } }).cause?.code;

// ---------------------------------------------------------------------------------------------------------------
// Start-up refusals (DECISIONS §4)
// ---------------------------------------------------------------------------------------------------------------

/** Whether the gateway would refuse to start with this configuration (bind address, profile, tokens). */
export function checkStartup(config: Config): Check {
  const auth = config.gateway.auth;
  const refusal = startupRefusal({
    profile: config.security.profile,
    bindHost: config.gateway.host,
    configuredTokens: auth.api_tokens.length + auth.admin_tokens.length,
    adminTokenFileExists: existsSync(adminTokenPath(config.data_dir)),
  });
  if (refusal) {
    return {
      name: 'start-up',
      status: 'fail',
      message: refusal,
      fix:
        config.security.profile === 'minimal'
          ? 'set gateway.host to 127.0.0.1, or security.profile to standard'
          : 'add a token to gateway.auth.api_tokens (or admin_tokens), or run `gatehouse token rotate` to create an ' +
            'admin token file, or bind gateway.host to 127.0.0.1',
    };
  }
  return {
    name: 'start-up',
    status: 'ok',
    message: `profile ${config.security.profile}, auth mode ${auth.mode}, binds ${config.gateway.host}`,
  };
}

// ---------------------------------------------------------------------------------------------------------------
// Data dir: exists or can be created, 0700, files 0600 (ADR 0013)
// ---------------------------------------------------------------------------------------------------------------

const octal = (mode: number): string => `0${(mode & 0o777).toString(8)}`;

/**
 * Whether this process can create entries in `dir`: null when it can, else the error code. Tried for real (an empty
 * directory made and removed at once), so a read-only mount or a root-squashed share is caught too.
 */
function createProblem(dir: string): string | null {
  try {
    rmdirSync(mkdtempSync(join(dir, '.gatehouse-doctor-')));
    return null;
  } catch (err) {
    return errorCode(err) ?? (err as Error).message;
  }
}

/** The files and directories the gateway keeps private, as they exist in `dataDir` (a bounded walk). */
function privatePaths(dataDir: string): Array<{ path: string; dir: boolean }> {
  const found: Array<{ path: string; dir: boolean }> = [];
  const visit = (dir: string, depth: number): void => {
    let entries;
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const entry of entries.slice(0, 500)) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) {
        found.push({ path, dir: true });
        if (depth < 2) visit(path, depth + 1);
      } else if (entry.isFile()) {
        found.push({ path, dir: false });
      }
    }
  };
  visit(dataDir, 0);
  return found;
}

/** The data dir exists (or its nearest existing parent lets it be created), is writable, 0700, its files 0600. */
export function checkDataDir(dataDir: string): Check {
  const name = 'data dir';
  if (!existsSync(dataDir)) {
    let parent = dirname(dataDir);
    while (!existsSync(parent) && dirname(parent) !== parent) parent = dirname(parent);
    const problem = statSync(parent).isDirectory() ? createProblem(parent) : 'ENOTDIR';
    if (problem === null) {
      return { name, status: 'ok', message: `${dataDir} does not exist yet; the first start creates it (mode 0700)` };
    }
    return {
      name,
      status: 'fail',
      message:
        problem === 'ENOTDIR'
          ? `${dataDir} cannot be created: ${parent} is a file, not a directory`
          : `${dataDir} does not exist and cannot be created in ${parent} (${problem})`,
      fix:
        problem === 'ENOTDIR'
          ? 'set data_dir (or --data-dir, GATEHOUSE_DATA_DIR) to a directory path'
          : `set data_dir (or --data-dir, GATEHOUSE_DATA_DIR) to a directory this user may create, or create it as a user who may: mkdir -p -m 700 ${dataDir} && chown $(id -un) ${dataDir}`,
    };
  }
  const stat = statSync(dataDir);
  if (!stat.isDirectory()) {
    return {
      name,
      status: 'fail',
      message: `${dataDir} is not a directory`,
      fix: 'set data_dir to a directory (or move the file away)',
    };
  }
  const problem = createProblem(dataDir);
  if (problem !== null) {
    return {
      name,
      status: 'fail',
      message: `${dataDir} is not writable by this user (${problem}${stat.uid !== process.getuid?.() ? `; owned by uid ${stat.uid}` : ''})`,
      fix: `give it to the user that runs the gateway (chown -R $(id -un) ${dataDir}; chmod 700 ${dataDir}), or set data_dir elsewhere`,
    };
  }
  const wide: string[] = [];
  const foreign: string[] = [];
  const uid = process.getuid?.();
  if ((stat.mode & 0o077) !== 0) wide.push(`${dataDir} is ${octal(stat.mode)} (want 0700)`);
  for (const entry of privatePaths(dataDir)) {
    let mode: number;
    let owner: number;
    try {
      const s = statSync(entry.path);
      mode = s.mode;
      owner = s.uid;
    } catch {
      continue;
    }
    if (uid !== undefined && owner !== uid) foreign.push(`${entry.path} is owned by uid ${owner}`);
    if ((mode & 0o077) !== 0) wide.push(`${entry.path} is ${octal(mode)} (want ${entry.dir ? '0700' : '0600'})`);
  }
  if (foreign.length > 0) {
    return {
      name,
      status: 'fail',
      message: `${dataDir}: ${foreign.length} path(s) belong to another user, so the gateway cannot write them`,
      details: foreign.slice(0, 10),
      fix: `chown -R $(id -un) ${dataDir} (as root), then run the gateway as that user only`,
    };
  }
  if (wide.length > 0) {
    return {
      name,
      status: 'warn',
      message: `${dataDir}: ${wide.length} path(s) readable by other users (the next start tightens them)`,
      details: wide.slice(0, 10),
      fix: `chmod -R go-rwx ${dataDir}`,
    };
  }
  return { name, status: 'ok', message: `${dataDir} is writable, 0700, its files 0600` };
}

// ---------------------------------------------------------------------------------------------------------------
// Store: SQLite file or PostgreSQL server, one trivial query
// ---------------------------------------------------------------------------------------------------------------

/** `postgres://user:***@host:5432/db`: a URL fit to print. */
function safeUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    return '(not a URL)';
  }
}

/**
 * Opens the store without migrating it, runs `select 1` and counts the applied migrations, then closes it. SQLite
 * is opened only when its file exists (otherwise the first start creates it), after the data dir check looked at
 * the modes (opening tightens them, as a start does); PostgreSQL is connected to.
 */
export async function checkStore(config: Config, dataDirFailed: boolean): Promise<Check> {
  const name = 'store';
  const { driver, url } = config.storage;
  let where: string;
  if (driver === 'sqlite') {
    where = join(config.data_dir, 'gatehouse.db');
    if (dataDirFailed) return { name, status: 'skip', message: `SQLite ${where}: skipped (the data dir check failed)` };
    if (!existsSync(where)) {
      return { name, status: 'ok', message: `SQLite ${where} does not exist yet; the first start creates it` };
    }
  } else {
    if (!url) {
      return {
        name,
        status: 'fail',
        message: 'storage.driver is postgres and storage.url is not set',
        fix: 'set storage.url (or DATABASE_URL) to postgres://user:password@host:5432/database',
      };
    }
    where = `PostgreSQL ${safeUrl(url)}`;
  }
  let store;
  try {
    store = createStore({ driver, dataDir: config.data_dir, url });
  } catch (err) {
    return {
      name,
      status: 'fail',
      message: `${where}: ${(err as Error).message}`,
      fix:
        driver === 'sqlite'
          ? `check that ${where} is a Gatehouse database this user may read and write`
          : 'fix storage.url',
    };
  }
  try {
    await store.ping();
    let migrations: number | null = null;
    try {
      const row = await store.db
        .selectFrom('schema_migrations')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .executeTakeFirst();
      migrations = Number(row?.n ?? 0);
    } catch {
      migrations = null; // no schema yet: the first start creates it
    }
    return {
      name,
      status: 'ok',
      message:
        migrations === null
          ? `${driver === 'sqlite' ? 'SQLite ' : ''}${where} answers; no schema yet (the first start creates it)`
          : `${driver === 'sqlite' ? 'SQLite ' : ''}${where} answers; ${migrations} migration(s) applied`,
    };
  } catch (err) {
    return {
      name,
      status: 'fail',
      message: `${driver === 'sqlite' ? 'SQLite ' : ''}${where}: ${(err as Error).message}`,
      fix:
        driver === 'sqlite'
          ? `check that ${where} is a Gatehouse database this user may read and write (or restore it from a backup)`
          : 'is PostgreSQL running and reachable? check the host, port, user, password and database of storage.url (DATABASE_URL)',
    };
  } finally {
    await store.close().catch(() => undefined);
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Provider: one models-list call
// ---------------------------------------------------------------------------------------------------------------

/** The OpenAI endpoint used when `provider.base_url` is null (as the provider uses it). */
const OPENAI_BASE_URL = 'https://api.openai.com/v1';
/** The Anthropic endpoint used when `provider.base_url` is null (its paths start with /v1/). */
const ANTHROPIC_BASE_URL = 'https://api.anthropic.com';
const ANTHROPIC_VERSION = '2023-06-01';

/** Where the provider came from, for messages. */
function providerOrigin(loaded: LoadedConfig): string {
  if (loaded.providerSource === 'environment') return `selected by ${loaded.providerVariable}`;
  if (loaded.providerSource === 'file') return `from ${loaded.configPath ?? 'the file'}`;
  return 'the default';
}

/** The error message of a provider's error body (OpenAI's and Anthropic's shapes), without the key. */
async function errorText(response: Response, key: string | null): Promise<string> {
  let text = '';
  try {
    text = (await response.text()).slice(0, 4096);
    const body = JSON.parse(text) as { error?: { message?: unknown } | string; message?: unknown };
    const message = typeof body.error === 'string' ? body.error : (body.error?.message ?? body.message);
    text = typeof message === 'string' ? message : response.statusText;
  } catch {
    text = text.trim().slice(0, 200) || response.statusText;
  }
  return key ? text.split(key).join('***') : text;
}

/**
 * The provider answers its models list with the configured key: OpenAI-compatible `GET {base_url}/models`,
 * Anthropic `GET {base_url}/v1/models`; echo needs nothing. Warns when the configured model is not listed.
 */
export async function checkProvider(loaded: LoadedConfig): Promise<Check> {
  const name = 'provider';
  const { provider } = loaded.config;
  const origin = providerOrigin(loaded);
  if (provider.type === 'echo') {
    return {
      name,
      status: 'ok',
      message: `echo (${origin}): it only echoes the message back; no model is called`,
      fix: 'to use a model, set provider.type (gatehouse init), or OPENAI_API_KEY / ANTHROPIC_API_KEY with no provider block',
    };
  }
  const model = createProvider(provider).model;
  const key = provider.api_key;
  const keyVariable = provider.type === 'openai' ? 'OPENAI_API_KEY' : 'ANTHROPIC_API_KEY';
  const base = (provider.base_url ?? (provider.type === 'openai' ? OPENAI_BASE_URL : ANTHROPIC_BASE_URL)).replace(
    /\/+$/,
    '',
  );
  const url = provider.type === 'openai' ? `${base}/models` : `${base}/v1/models?limit=1000`;
  const headers: Record<string, string> = { accept: 'application/json' };
  if (provider.type === 'openai' && key) headers.authorization = `Bearer ${key}`;
  if (provider.type === 'anthropic') {
    headers['anthropic-version'] = ANTHROPIC_VERSION;
    if (key) headers['x-api-key'] = key;
  }
  const label = `${provider.type} at ${base}, model ${model} (${origin})`;
  let response: Response;
  try {
    // A redirect is not followed: the key is never sent on to another address.
    response = await fetch(url, { headers, redirect: 'manual', signal: AbortSignal.timeout(PROBE_MS) });
  } catch (err) {
    const cause = (err as { cause?: { message?: string } }).cause?.message;
    const reason =
      (err as Error).name === 'TimeoutError' ? 'timed out' : (errorCode(err) ?? cause ?? (err as Error).message);
    return {
      name,
      status: 'fail',
      message: `${label}: cannot reach ${url} (${reason})`,
      fix: `is the server running and reachable from here? check provider.base_url${provider.type === 'openai' ? ' (or OPENAI_BASE_URL)' : ''}; a local Ollama is http://127.0.0.1:11434/v1`,
    };
  }
  if (response.status === 401 || response.status === 403) {
    return {
      name,
      status: 'fail',
      message: `${label}: the server refused the key (HTTP ${response.status}: ${await errorText(response, key)})`,
      fix: key
        ? `check the key in ${keyVariable} (or provider.api_key): it is wrong, revoked or lacks access`
        : `set ${keyVariable} in the environment the gateway starts in (keys are never needed in the file)`,
    };
  }
  if (!response.ok) {
    const detail = await errorText(response, key);
    return {
      name,
      status: 'fail',
      message: `${label}: GET ${url} answered HTTP ${response.status} (${detail})`,
      fix:
        response.status === 404 || (response.status >= 300 && response.status < 400)
          ? `provider.base_url is probably wrong: it must be the API root (${provider.type === 'openai' ? 'e.g. https://api.openai.com/v1 or http://127.0.0.1:11434/v1' : 'https://api.anthropic.com'})`
          : 'the server has a problem; try again later, or check its status page',
    };
  }
  let ids: string[] = [];
  try {
    const body = (await response.json()) as { data?: Array<{ id?: unknown }> };
    ids = (body.data ?? []).map((m) => m.id).filter((id): id is string => typeof id === 'string');
  } catch {
    return {
      name,
      status: 'fail',
      message: `${label}: GET ${url} answered something that is not a models list`,
      fix: 'provider.base_url does not point at an OpenAI-compatible API root (it usually ends in /v1)',
    };
  }
  if (ids.length > 0 && !ids.includes(model)) {
    const some = ids.slice(0, 8).join(', ');
    return {
      name,
      status: 'warn',
      message: `${label}: reachable, but the server does not list model ${model}`,
      fix: `set provider.model to one it offers (${some}${ids.length > 8 ? ', …' : ''})`,
    };
  }
  return { name, status: 'ok', message: `${label}: reachable, ${ids.length} model(s) listed` };
}

// ---------------------------------------------------------------------------------------------------------------
// Ports: free, or held by a running gateway
// ---------------------------------------------------------------------------------------------------------------

/** Binds `host:port` and closes it at once: null when free, else the error code. */
function tryBind(host: string, port: number): Promise<string | null> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', (err) => resolve(errorCode(err) ?? err.message));
    server.listen({ host, port, exclusive: true }, () => server.close(() => resolve(null)));
  });
}

/** GET `url` within a short timeout: the parsed JSON body, or null. */
async function getJson(url: string): Promise<Record<string, unknown> | null> {
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(QUICK_PROBE_MS) });
    const body: unknown = await response.json();
    return body && typeof body === 'object' ? (body as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

/** One port's check: free, or in use by the gateway that `isGateway` recognises at its health URL. */
async function checkPort(options: {
  name: string;
  key: string;
  host: string;
  port: number;
  healthUrl: string;
  isGateway: (body: Record<string, unknown>) => boolean;
}): Promise<Check> {
  const { name, key, host, port } = options;
  if (port === 0) return { name, status: 'ok', message: `${key} is 0: a free port is picked at each start` };
  const problem = await tryBind(host, port);
  if (problem === null) return { name, status: 'ok', message: `${host}:${port} is free` };
  if (problem === 'EADDRINUSE') {
    const body = await getJson(options.healthUrl);
    if (body && options.isGateway(body)) {
      return {
        name,
        status: 'ok',
        message: `${host}:${port} is in use by a running gateway (${options.healthUrl}: ${String(body.status)})`,
      };
    }
    return {
      name,
      status: 'fail',
      message: `${host}:${port} is in use by another program`,
      fix: `stop it (find it with: lsof -iTCP:${port} -sTCP:LISTEN), or set ${key} to a free port`,
    };
  }
  if (problem === 'EACCES') {
    return {
      name,
      status: 'fail',
      message: `binding ${host}:${port} is not permitted for this user`,
      fix: `set ${key} to a port above 1023 (or put a reverse proxy in front)`,
    };
  }
  if (problem === 'EADDRNOTAVAIL' || problem === 'ENOTFOUND' || problem === 'EAI_AGAIN') {
    return {
      name,
      status: 'fail',
      message: `${host} is not an address of this machine (${problem})`,
      fix: `set the bind address to one of this machine's addresses (127.0.0.1, 0.0.0.0, ::1, …)`,
    };
  }
  return {
    name,
    status: 'fail',
    message: `cannot bind ${host}:${port} (${problem})`,
    fix: `set ${key} to a free port`,
  };
}

/** The main port, and the webhook's when the webhook server is enabled. */
export async function checkPorts(config: Config): Promise<Check[]> {
  const base = localUrl(config.gateway);
  const checks = [
    checkPort({
      name: 'port',
      key: 'gateway.port',
      host: config.gateway.host,
      port: config.gateway.port,
      healthUrl: `${base}${config.gateway.api_prefix}/health`,
      isGateway: (body) => typeof body.status === 'string' && 'server_running' in body,
    }),
  ];
  const webhook = config.channels.webhook;
  if (webhook.enabled) {
    if (webhook.port !== 0 && webhook.port === config.gateway.port) {
      checks.push(
        Promise.resolve({
          name: 'webhook',
          status: 'fail',
          message: `channels.webhook.port ${webhook.port} is gateway.port too`,
          fix: 'give the webhook server its own port (channels.webhook.port, default 8080)',
        }),
      );
    } else {
      const reach = localUrl(webhook);
      const path = webhook.path.length > 1 ? webhook.path.replace(/\/+$/, '') : '';
      checks.push(
        checkPort({
          name: 'webhook',
          key: 'channels.webhook.port',
          host: webhook.host,
          port: webhook.port,
          healthUrl: `${reach}${path}/health`,
          isGateway: (body) => body.status === 'ok',
        }),
      );
    }
  }
  return Promise.all(checks);
}

// ---------------------------------------------------------------------------------------------------------------
// Bus: Redis PING or the NATS server's INFO
// ---------------------------------------------------------------------------------------------------------------

/** Connects to `url` and resolves with the first line the server sends (after `greeting`, when given). */
function firstLine(url: URL, defaultPort: number, greeting: string | null): Promise<string> {
  return new Promise((resolve, reject) => {
    const port = Number(url.port || defaultPort);
    const host = url.hostname.replace(/^\[|\]$/g, '');
    const secure = url.protocol === 'rediss:' || url.protocol === 'tls:';
    const socket: Socket = secure ? tlsConnect({ host, port, servername: host }) : createConnection({ host, port });
    let buffer = '';
    const done = (err: Error | null, line?: string): void => {
      clearTimeout(timer);
      socket.destroy();
      if (err) reject(err);
      else resolve(line ?? '');
    };
    const timer = setTimeout(() => done(new Error('timed out')), QUICK_PROBE_MS);
    socket.once(secure ? 'secureConnect' : 'connect', () => {
      if (greeting !== null) socket.write(greeting);
    });
    socket.on('data', (chunk: Buffer) => {
      buffer += chunk.toString('utf8');
      const end = buffer.indexOf('\r\n');
      if (end !== -1) done(null, buffer.slice(0, end));
    });
    socket.once('error', (err) => done(new Error(errorCode(err) ?? err.message)));
    socket.once('close', () => done(new Error('closed by the server')));
  });
}

/** When `bus.driver` is redis or nats: the server answers a PING (Redis) or greets with INFO (NATS). */
export async function checkBus(config: Config): Promise<Check | null> {
  const { driver, url } = config.bus;
  if (driver === 'local') return null;
  const name = 'bus';
  const variable = driver === 'redis' ? ' (or REDIS_URL)' : '';
  if (!url) {
    return {
      name,
      status: 'fail',
      message: `bus.driver is ${driver} and bus.url is not set`,
      fix: `set bus.url${variable}, e.g. ${driver === 'redis' ? 'redis://127.0.0.1:6379' : 'nats://127.0.0.1:4222'}`,
    };
  }
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return {
      name,
      status: 'fail',
      message: `bus.url is not a URL`,
      fix: `set bus.url${variable} to a ${driver}:// URL`,
    };
  }
  const shown = safeUrl(url);
  try {
    const line = driver === 'redis' ? await firstLine(parsed, 6379, 'PING\r\n') : await firstLine(parsed, 4222, null);
    if (driver === 'redis' && !/^[+-]/.test(line))
      throw new Error(`unexpected answer ${JSON.stringify(line.slice(0, 40))}`);
    if (driver === 'nats' && !line.startsWith('INFO ')) throw new Error('not a NATS server (no INFO greeting)');
    const note = driver === 'redis' && /NOAUTH|auth/i.test(line) ? ' (it asks for authentication)' : '';
    return { name, status: 'ok', message: `${driver} at ${shown} answers${note}` };
  } catch (err) {
    return {
      name,
      status: 'fail',
      message: `${driver} at ${shown}: ${(err as Error).message}`,
      fix: `is ${driver === 'redis' ? 'Redis' : 'NATS'} running and reachable? check bus.url${variable}`,
    };
  }
}
