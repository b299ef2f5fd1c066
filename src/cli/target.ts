import { existsSync, readFileSync } from 'node:fs';
import type { ClientSettings } from '../config/config.file.js';
import type { Config } from '../config/config.schema.js';
import { adminTokenPath } from '../security/admin-token.js';
import { isLoopbackHost } from '../security/host-origin.js';
import { CliError, EXIT, type CliIo } from './io.js';

/** The options every client command takes (DECISIONS §15). */
export interface ClientOptions {
  url?: string;
  token?: string;
  config?: string;
}

/** Where a client command talks to, and with which token. */
export interface ClientTarget {
  /** Base URL without a trailing slash, e.g. `http://127.0.0.1:8080`. */
  url: string;
  /** The API prefix, e.g. `/api/v1`. */
  apiPrefix: string;
  /** The token, or null (a gateway in auth mode `open` on loopback needs none for api reads). */
  token: string | null;
  /** Where the token came from, for messages: `--token`, `GATEHOUSE_TOKEN` or the token file's path. */
  tokenSource: string | null;
}

/**
 * Loads the local configuration for a command (`--config`, `GATEHOUSE_CONFIG`, `./gatehouse.yaml`, defaults).
 * The configuration's modules (its schema, YAML) are loaded here, by the commands that need them (ADR 0044).
 */
export async function localConfig(
  io: CliIo,
  configFile?: string,
): Promise<{ config: Config; configPath: string | null }> {
  const { ConfigError, loadConfig } = await import('../config/config.load.js');
  try {
    const loaded = loadConfig({
      argv: configFile ? ['--config', configFile] : [],
      env: io.env,
      cwd: io.cwd,
      dataDirFallback: true,
    });
    return { config: loaded.config, configPath: loaded.configPath };
  } catch (err) {
    if (err instanceof ConfigError) throw new CliError(err.message, EXIT.failure);
    throw err;
  }
}

/**
 * The settings a client command reads from the local configuration (where the gateway is, its data dir and
 * tokens), read without the configuration's schema (ADR 0044). When one of those keys is not plainly valid, the
 * whole configuration is validated instead, so the error names the problem as `serve` would.
 */
export async function localSettings(io: CliIo, configFile?: string): Promise<ClientSettings> {
  const { clientSettings, ConfigError, readRawConfig } = await import('../config/config.file.js');
  try {
    const found = readRawConfig({
      flags: configFile ? { config: configFile } : {},
      env: io.env,
      cwd: io.cwd,
      dataDirFallback: true,
    });
    const settings = clientSettings(found, io.cwd);
    if (settings) return settings;
  } catch (err) {
    if (err instanceof ConfigError) throw new CliError(err.message, EXIT.failure);
    throw err;
  }
  const { clientSettingsOf } = await import('../config/config.load.js');
  return clientSettingsOf(await localConfig(io, configFile));
}

/** The URL a local client reaches a gateway bound to `host:port` at (a wildcard bind is reached on loopback). */
export function localUrl(settings: Pick<ClientSettings, 'host' | 'port'>): string {
  const host = settings.host;
  const reach = host === '0.0.0.0' || host === '' ? '127.0.0.1' : host === '::' ? '[::1]' : host;
  const shown = reach.includes(':') && !reach.startsWith('[') ? `[${reach}]` : reach;
  return `http://${shown}:${settings.port}`;
}

/**
 * Resolves the gateway and the token of a client command: `--url`, else `GATEHOUSE_URL`, else the local
 * configuration's address; `--token`, else `GATEHOUSE_TOKEN`, else (for a local gateway only) the generated
 * admin token file in the local data dir.
 */
export async function resolveTarget(io: CliIo, options: ClientOptions): Promise<ClientTarget> {
  const explicitUrl = options.url ?? (io.env.GATEHOUSE_URL || undefined);
  let settings: ClientSettings | null = null;
  const local = async (): Promise<ClientSettings> => (settings ??= await localSettings(io, options.config));
  let url: string;
  let apiPrefix = '/api/v1';
  if (explicitUrl) {
    let parsed: URL;
    try {
      parsed = new URL(explicitUrl);
    } catch {
      throw new CliError(`--url ${JSON.stringify(explicitUrl)} is not a URL`, EXIT.usage);
    }
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
      throw new CliError(`--url must be http:// or https://, not ${parsed.protocol}`, EXIT.usage);
    }
    url = `${parsed.origin}`;
    const path = parsed.pathname.replace(/\/+$/, '');
    if (path !== '') apiPrefix = path;
  } else {
    url = localUrl(await local());
    apiPrefix = (await local()).apiPrefix;
  }
  if (options.token) return { url, apiPrefix, token: options.token, tokenSource: '--token' };
  if (io.env.GATEHOUSE_TOKEN) return { url, apiPrefix, token: io.env.GATEHOUSE_TOKEN, tokenSource: 'GATEHOUSE_TOKEN' };
  // The generated admin token belongs to the local gateway: it is sent to the local configuration's address, or
  // to a --url on this machine (loopback), which is the same gateway reached another way; never elsewhere.
  if (!explicitUrl || isLoopbackHost(new URL(url).hostname)) {
    let dataDir: string | null = null;
    try {
      dataDir = (await local()).dataDir;
    } catch (err) {
      // With --url, a local configuration that can't be read only means no local token.
      if (!explicitUrl) throw err;
    }
    const path = dataDir === null ? null : adminTokenPath(dataDir);
    if (path && existsSync(path)) {
      const token = readFileSync(path, 'utf8').trim();
      if (token) return { url, apiPrefix, token, tokenSource: path };
    }
  }
  return { url, apiPrefix, token: null, tokenSource: null };
}

/** The error envelope's parts, as far as a client reads them. */
interface Envelope {
  error?: { code?: string; message?: string; request_id?: string };
}

/** An answer of the gateway that is not 2xx, as a readable failure. */
export class ApiCallError extends CliError {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message, EXIT.failure);
    this.name = 'ApiCallError';
  }
}

/** Options of `callApi`. */
export interface CallOptions {
  method?: string;
  body?: unknown;
  query?: Record<string, string | number | boolean | undefined>;
  headers?: Record<string, string>;
  signal?: AbortSignal;
  /** Milliseconds before giving up; default 15 000. */
  timeoutMs?: number;
}

/** The headers that carry a target's token. */
export function authHeaders(target: ClientTarget): Record<string, string> {
  return target.token ? { authorization: `Bearer ${target.token}` } : {};
}

/** `<url><api_prefix><path>?<query>`. */
export function apiUrl(target: ClientTarget, path: string, query: CallOptions['query'] = {}): string {
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries(query)) if (value !== undefined) search.set(key, String(value));
  const qs = search.toString();
  return `${target.url}${target.apiPrefix}${path}${qs ? `?${qs}` : ''}`;
}

/**
 * Calls the API and returns the parsed JSON body. A refused connection, a timeout or a non-2xx answer throws a
 * CliError whose message says what happened and what to try (the envelope's message and request id included).
 */
export async function callApi<T = unknown>(target: ClientTarget, path: string, options: CallOptions = {}): Promise<T> {
  const response = await requestApi(target, path, options);
  const text = await response.text();
  let parsed: unknown = null;
  if (text) {
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = null;
    }
  }
  if (!response.ok) {
    const error = (parsed as Envelope | null)?.error ?? {};
    const code = error.code ?? `HTTP_${response.status}`;
    const hint =
      response.status === 401
        ? ' (pass --token or set GATEHOUSE_TOKEN)'
        : response.status === 403
          ? ' (this needs an admin token)'
          : '';
    const requestId = error.request_id ? ` [request ${error.request_id}]` : '';
    throw new ApiCallError(
      response.status,
      code,
      `${code}: ${error.message ?? response.statusText}${hint}${requestId}`,
    );
  }
  return parsed as T;
}

/** `fetch` against the API with the token and a timeout; network failures become CliErrors that name the URL. */
export async function fetchApi(target: ClientTarget, path: string, options: CallOptions = {}): Promise<Response> {
  const timeout = AbortSignal.timeout(options.timeoutMs ?? 15_000);
  const signal = options.signal ? AbortSignal.any([options.signal, timeout]) : timeout;
  const headers: Record<string, string> = { ...authHeaders(target), ...options.headers };
  let body: string | undefined;
  if (options.body !== undefined) {
    headers['content-type'] = 'application/json';
    body = JSON.stringify(options.body);
  }
  try {
    return await fetch(apiUrl(target, path, options.query), { method: options.method ?? 'GET', headers, body, signal });
  } catch (err) {
    if (options.signal?.aborted) throw err;
    const cause = (err as { cause?: { code?: string; message?: string } }).cause;
    const reason = timeout.aborted ? 'timed out' : (cause?.code ?? cause?.message ?? (err as Error).message);
    throw new CliError(
      `cannot reach the gateway at ${target.url} (${reason}); is it running? (start it with: gatehouse serve, or pass --url)`,
    );
  }
}

/** A whole answer of the gateway, its body read. */
export interface ApiResponse {
  status: number;
  statusText: string;
  ok: boolean;
  text(): Promise<string>;
}

/**
 * One request to the API over `node:http`/`node:https`, its whole body read, with the token and a timeout that
 * covers the body too; network failures become CliErrors that name the URL, as with `fetchApi`. The commands
 * use it instead of `fetch`, whose first call loads Node's built-in undici (about 0.1 s of a command's start,
 * ADR 0044); `fetchApi` stays for the streams (`logs --follow`).
 */
export async function requestApi(target: ClientTarget, path: string, options: CallOptions = {}): Promise<ApiResponse> {
  const timeout = AbortSignal.timeout(options.timeoutMs ?? 15_000);
  const signal = options.signal ? AbortSignal.any([options.signal, timeout]) : timeout;
  const headers: Record<string, string> = { ...authHeaders(target), ...options.headers };
  let body: Buffer | undefined;
  if (options.body !== undefined) {
    body = Buffer.from(JSON.stringify(options.body));
    headers['content-type'] = 'application/json';
    headers['content-length'] = String(body.length);
  }
  const url = new URL(apiUrl(target, path, options.query));
  try {
    const { request } = url.protocol === 'https:' ? await import('node:https') : await import('node:http');
    return await new Promise<ApiResponse>((resolve, reject) => {
      const req = request(url, { method: options.method ?? 'GET', headers, signal, agent: false }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.once('error', reject);
        res.once('aborted', () => reject(new Error('the answer broke off')));
        res.once('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          const status = res.statusCode ?? 0;
          resolve({
            status,
            statusText: res.statusMessage ?? '',
            ok: status >= 200 && status < 300,
            text: () => Promise.resolve(text),
          });
        });
      });
      req.once('error', reject);
      req.end(body);
    });
  } catch (err) {
    if (options.signal?.aborted) throw err;
    const code = (err as { code?: string }).code;
    const reason = timeout.aborted ? 'timed out' : code && code !== 'ABORT_ERR' ? code : (err as Error).message;
    throw new CliError(
      `cannot reach the gateway at ${target.url} (${reason}); is it running? (start it with: gatehouse serve, or pass --url)`,
    );
  }
}
