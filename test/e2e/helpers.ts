/**
 * Helpers for end-to-end tests against the built process (`dist/src/main.js`)
 * over real sockets: a config file in a temp dir, start/stop with bounded
 * waits, small HTTP and SSE clients, and bounded polling.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnGateway, stopChild, type Child } from '../../bench/processes.js';
import type { FakeOpenAI } from '../helpers/fake-openai.js';
import { parseSse, type SseEvent } from '../helpers/sse.js';

export const API_TOKEN = 'e2e-api';
export const ADMIN_TOKEN = 'e2e-admin';

/** A temp dir holding the config file; `dataDir` is inside it and survives restarts of the gateway. */
export interface E2EHome {
  dir: string;
  dataDir: string;
  configFile: string;
}

const homes = new Set<string>();

/** Removes every temp dir `e2eHome` made (call from afterEach, after the gateways are killed). */
export function removeE2EHomes(): void {
  for (const dir of homes) rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
  homes.clear();
}

/**
 * Writes `gatehouse.yaml` (as JSON, which is YAML) for a gateway talking to
 * the fake OpenAI server: port 0, api + admin tokens, warnings only. `extra`
 * adds (or replaces) whole top-level blocks such as `agent` or `security`.
 */
export function e2eHome(fake: FakeOpenAI, extra: Record<string, unknown> = {}): E2EHome {
  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-e2e-'));
  homes.add(dir);
  const dataDir = join(dir, 'data');
  const configFile = join(dir, 'gatehouse.yaml');
  const config = {
    data_dir: dataDir,
    gateway: { port: 0, auth: { api_tokens: [API_TOKEN], admin_tokens: [ADMIN_TOKEN] } },
    provider: { type: 'openai', base_url: fake.url, model: 'gpt-4o-mini', timeout_seconds: 30 },
    logs: { level: 'warning' },
    ...extra,
  };
  writeFileSync(configFile, JSON.stringify(config, null, 2));
  return { dir, dataDir, configFile };
}

/** Rejects with `label` if `promise` does not settle within `ms`. */
export async function within<T>(promise: Promise<T>, ms: number, label: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms: ${label}`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** A started gateway process and its base URL. */
export interface Running {
  gw: Child;
  url: string;
}

/**
 * Spawns the built gateway on the home's config, in a process group of its own (so `gw.killGroup` stops it as
 * a supervisor would), and waits (at most 10 s) until it listens. A start never waits for a predecessor that
 * was killed to be reaped: real supervisors don't either.
 */
export async function startGateway(home: E2EHome): Promise<Running> {
  const gw = spawnGateway(['--config', home.configFile], { startTimeoutMs: 10_000, group: true });
  return { gw, url: await gw.ready };
}

/**
 * SIGKILL to the gateway's whole process group, as `kill -9` from a supervisor; returns at once with the
 * promise of its exit, so the next start need not wait for the kernel to reap it (ADR 0035).
 */
export function killNow(running: Running): Promise<number | string> {
  running.gw.killGroup('SIGKILL');
  return running.gw.exited;
}

/**
 * Sends `signal` and resolves with the exit code (or signal name); a gateway
 * still running after `timeoutMs` is killed, so it answers `'SIGKILL'`.
 */
export function stopGateway(running: Running, signal: NodeJS.Signals, timeoutMs = 10_000): Promise<number | string> {
  return stopChild(running.gw, timeoutMs, signal);
}

/** A JSON answer. */
export interface Answer<T = Record<string, unknown>> {
  status: number;
  headers: Headers;
  body: T;
}

/** One JSON request; the body is parsed when there is one (else `{}`). */
export async function call<T = Record<string, unknown>>(
  url: string,
  method: string,
  path: string,
  options: { token?: string; body?: unknown; headers?: Record<string, string>; timeoutMs?: number } = {},
): Promise<Answer<T>> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.token) headers['x-api-token'] = options.token;
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(`${url}${path}`, {
    method,
    headers,
    ...(options.body !== undefined ? { body: JSON.stringify(options.body) } : {}),
    signal: AbortSignal.timeout(options.timeoutMs ?? 15_000),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: (text ? JSON.parse(text) : {}) as T };
}

/** The body of POST /message. */
export interface MessageInput {
  platform: string;
  user_id: string;
  chat_id: string;
  text: string;
  wait?: boolean;
  timeout_seconds?: number;
}

/** POST /api/v1/message with the api token and an optional `Idempotency-Key`. */
export function postMessage<T = Record<string, unknown>>(
  url: string,
  input: MessageInput,
  key?: string,
): Promise<Answer<T>> {
  return call<T>(url, 'POST', '/api/v1/message', {
    token: API_TOKEN,
    body: input,
    ...(key !== undefined ? { headers: { 'idempotency-key': key } } : {}),
  });
}

/** The turn record as GET /turns/{id} answers it. */
export interface TurnView {
  event_id: string;
  session_key: string;
  status: string;
  response: string | null;
  termination_reason: string | null;
  started_at: string | null;
  finished_at: string | null;
}

/** GET /api/v1/turns/{id} with the admin token. */
export function getTurn(url: string, eventId: string): Promise<Answer<TurnView>> {
  return call<TurnView>(url, 'GET', `/api/v1/turns/${encodeURIComponent(eventId)}`, { token: ADMIN_TOKEN });
}

export const TERMINAL = new Set(['completed', 'incomplete', 'failed', 'interrupted']);

export { pollUntil } from '../helpers/until.js';

/** Reads an SSE response to its end (bounded) and parses its events; comments are skipped. */
export async function readSse(
  url: string,
  path: string,
  options: { token: string; headers?: Record<string, string>; timeoutMs?: number },
): Promise<{ status: number; contentType: string | null; events: SseEvent[] }> {
  const res = await fetch(`${url}${path}`, {
    headers: { 'x-api-token': options.token, accept: 'text/event-stream', ...options.headers },
    signal: AbortSignal.timeout(options.timeoutMs ?? 10_000),
  });
  const events: SseEvent[] = parseSse(await res.text());
  return { status: res.status, contentType: res.headers.get('content-type'), events };
}
