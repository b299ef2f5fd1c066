import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import WebSocket from 'ws';
import { cdpSession } from './common.js';
import type { Figure } from './figures.js';
import { spawnGateway, stopChild, waitForHealth, type Child } from './processes.js';

/**
 * The idle cost of WebSocket clients (issue: 19,000 authenticated, subscribed
 * clients on one process at ≤ 8 KB each). Spawns the built gateway, opens
 * `clients` WebSocket connections with the api token in the handshake, each
 * subscribed to the `memory` topic, and compares the gateway's memory after a
 * full garbage collection (asked for through the inspector protocol, so the
 * product carries no hook for it) with its memory before the first client:
 * V8 heap, external memory and RSS, per client. Then one write on the topic
 * checks that every client still receives the live feed, and closing them all
 * checks that the memory goes back.
 *
 * Run alone: `node dist/bench/ws-clients.js [clients]` (WS_CLIENTS, default 19,000). The bench calls
 * `measureWebSocketClients` and records `webSocketClientFigures`.
 */

const API_TOKEN = 'ws-clients-api';
const ADMIN_TOKEN = 'ws-clients-admin';
/** Clients opened at once while connecting. */
const CONNECT_CONCURRENCY = 200;
/** Clients opened and closed before the baseline, so code paths, caches and pools are warm. */
const WARMUP_CLIENTS = 200;

/** What one run measured. */
export interface WebSocketClientsResult {
  clients: number;
  /** Gateway memory after a full GC, before the clients (after a warm-up of `WARMUP_CLIENTS`). */
  before: MemorySample;
  /** The same with every client open, authenticated and subscribed. */
  open: MemorySample;
  /** The same after every client closed. */
  closed: MemorySample;
  /** (open − before) ÷ clients, in bytes. */
  perClient: { heap: number; external: number; rss: number };
  /** Clients that received the one live-feed event published while all were open. */
  broadcastReceived: number;
  /** Seconds to open, authenticate and subscribe every client. */
  connectSeconds: number;
}

/** The gateway's memory at one moment (bytes). */
export interface MemorySample {
  heapUsed: number;
  external: number;
  rss: number;
}

export interface WebSocketClientsOptions {
  /** Clients to open (default 19,000). */
  clients?: number;
  /** Progress lines (default: none). */
  log?: (line: string) => void;
}

/** A minimal Chrome DevTools Protocol client over the inspector's WebSocket. */
async function inspector(url: string) {
  const session = await cdpSession(url);
  // Always carries `params` (an empty object when none are given).
  const send = (method: string, params: object = {}): Promise<unknown> => session.send(method, params);
  return {
    /** Memory right after two full collections. */
    async sample(pid: number): Promise<MemorySample> {
      await send('HeapProfiler.collectGarbage');
      await send('HeapProfiler.collectGarbage');
      const evaluated = (await send('Runtime.evaluate', {
        expression: 'JSON.stringify(process.memoryUsage())',
        returnByValue: true,
      })) as { result?: { value?: string } };
      const usage = JSON.parse(evaluated.result?.value ?? '{}') as { heapUsed?: number; external?: number };
      return { heapUsed: usage.heapUsed ?? NaN, external: usage.external ?? NaN, rss: rssBytes(pid) };
    },
    close: () => session.close(),
  };
}

function rssBytes(pid: number): number {
  const match = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return match ? Number(match[1]) * 1024 : NaN;
}

/** One client: open, authenticated (header token) and subscribed to `memory`; counts the events it gets. */
function openClient(wsUrl: string, onEvent: () => void): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(wsUrl, { headers: { 'x-api-token': API_TOKEN }, perMessageDeflate: false });
    let state: 'auth' | 'subscribe' | 'ready' = 'auth';
    socket.on('message', (data: Buffer) => {
      const frame = JSON.parse(data.toString('utf8')) as { type?: string };
      if (state === 'auth' && frame.type === 'auth_ok') {
        state = 'subscribe';
        socket.send('{"type":"subscribe","topics":["memory"]}');
      } else if (state === 'subscribe' && frame.type === 'subscribed') {
        state = 'ready';
        resolve(socket);
      } else if (state === 'ready' && frame.type === 'event') {
        onEvent();
      } else if (state !== 'ready') {
        reject(new Error(`unexpected frame before subscribed: ${data.toString('utf8').slice(0, 200)}`));
        socket.terminate();
      }
    });
    socket.once('error', reject);
    socket.once('close', (code) => {
      if (state !== 'ready') reject(new Error(`closed (${code}) before subscribed`));
    });
  });
}

/** Opens `count` clients, `CONNECT_CONCURRENCY` at a time. */
async function openClients(wsUrl: string, count: number, onEvent: () => void): Promise<WebSocket[]> {
  const sockets: WebSocket[] = [];
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < count) {
      next++;
      sockets.push(await openClient(wsUrl, onEvent));
    }
  };
  await Promise.all(Array.from({ length: Math.min(CONNECT_CONCURRENCY, count) }, worker));
  return sockets;
}

async function closeClients(sockets: WebSocket[]): Promise<void> {
  await Promise.all(
    sockets.map(
      (socket) =>
        new Promise<void>((resolve) => {
          if (socket.readyState === WebSocket.CLOSED) return resolve();
          socket.once('close', () => resolve());
          socket.close();
        }),
    ),
  );
}

async function until(check: () => boolean, timeoutMs: number): Promise<boolean> {
  const deadline = performance.now() + timeoutMs;
  while (!check()) {
    if (performance.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return true;
}

/**
 * Measures the gateway's memory per idle, authenticated, subscribed
 * WebSocket client (see the file's comment). Needs `dist/` built and
 * `clients` + a few hundred open files in both processes.
 */
export async function measureWebSocketClients(options: WebSocketClientsOptions = {}): Promise<WebSocketClientsResult> {
  const clients = options.clients ?? 19_000;
  const log = options.log ?? (() => undefined);
  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-ws-clients-'));
  let gateway: Child | undefined;
  const sockets: WebSocket[] = [];
  try {
    const configFile = join(dir, 'gatehouse.yaml');
    writeFileSync(
      configFile,
      JSON.stringify({
        data_dir: join(dir, 'data'),
        gateway: { port: 0, auth: { api_tokens: [API_TOKEN], admin_tokens: [ADMIN_TOKEN] } },
        security: { rate_limits: { read: 100_000_000, write: 100_000_000 } },
        limits: { streams: { websocket_max_connections: clients + WARMUP_CLIENTS } },
        logs: { level: 'warning' },
      }),
    );
    gateway = spawnGateway(['--config', configFile], {
      name: 'gateway',
      nodeArgs: ['--inspect=127.0.0.1:0'],
      startTimeoutMs: 15_000,
      keepLines: 200,
    });
    const url = await gateway.ready;
    await waitForHealth(url);
    const debuggerLine = await gateway.line('stderr', /Debugger listening on (ws:\/\/\S+)/);
    const cdp = await inspector(/Debugger listening on (ws:\/\/\S+)/.exec(debuggerLine)![1]!);
    const wsUrl = `${url.replace(/^http/, 'ws')}/api/v1/ws`;
    let events = 0;
    const onEvent = (): void => {
      events++;
    };

    await closeClients(await openClients(wsUrl, WARMUP_CLIENTS, onEvent));
    await new Promise((resolve) => setTimeout(resolve, 200));
    const before = await cdp.sample(gateway.pid);
    log(`before: heap ${mib(before.heapUsed)} MiB, rss ${mib(before.rss)} MiB`);

    const started = performance.now();
    sockets.push(...(await openClients(wsUrl, clients, onEvent)));
    const connectSeconds = (performance.now() - started) / 1000;
    log(`${clients} clients open and subscribed in ${connectSeconds.toFixed(1)} s`);
    const open = await cdp.sample(gateway.pid);
    log(`open: heap ${mib(open.heapUsed)} MiB, external ${mib(open.external)} MiB, rss ${mib(open.rss)} MiB`);

    const res = await fetch(`${url}/api/v1/memory`, {
      method: 'POST',
      headers: { 'x-api-token': ADMIN_TOKEN, 'content-type': 'application/json' },
      body: JSON.stringify({ content: 'a broadcast to every client' }),
    });
    if (res.status !== 201) throw new Error(`POST /memory answered ${res.status}: ${await res.text()}`);
    await until(() => events >= clients, 30_000);
    const broadcastReceived = events;
    log(`broadcast received by ${broadcastReceived} of ${clients}`);

    await closeClients(sockets.splice(0));
    await new Promise((resolve) => setTimeout(resolve, 500));
    const closed = await cdp.sample(gateway.pid);
    log(`closed: heap ${mib(closed.heapUsed)} MiB, rss ${mib(closed.rss)} MiB`);
    cdp.close();

    return {
      clients,
      before,
      open,
      closed,
      perClient: {
        heap: (open.heapUsed - before.heapUsed) / clients,
        external: (open.external - before.external) / clients,
        rss: (open.rss - before.rss) / clients,
      },
      broadcastReceived,
      connectSeconds,
    };
  } finally {
    for (const socket of sockets) socket.terminate();
    if (gateway) await stopChild(gateway, 10_000, 'SIGTERM');
    rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
  }
}

/** The bench's figures of one run (`record` each). */
export function webSocketClientFigures(result: WebSocketClientsResult, backend = 'sqlite'): Omit<Figure, 'met'>[] {
  const kib = (bytes: number) => bytes / 1024;
  return [
    {
      id: 'ws_clients.rss_per_client_kib',
      backend,
      label: `RSS per idle subscribed WebSocket client (${result.clients})`,
      value: kib(result.perClient.rss),
      unit: 'KiB',
      target: { op: '<=', value: 8 },
    },
    {
      id: 'ws_clients.heap_per_client_kib',
      backend,
      label: 'V8 heap per idle WebSocket client, after GC',
      value: kib(result.perClient.heap),
      unit: 'KiB',
    },
    {
      id: 'ws_clients.broadcast_received_ratio',
      backend,
      label: 'WebSocket clients that received a live-feed event',
      value: result.broadcastReceived / result.clients,
      unit: 'ratio',
      target: { op: '>=', value: 1 },
    },
  ];
}

const mib = (bytes: number) => (bytes / 1024 / 1024).toFixed(1);

async function main(): Promise<void> {
  const raw = process.argv[2] ?? process.env.WS_CLIENTS;
  const clients = raw === undefined || raw === '' ? 19_000 : Number(raw);
  if (!Number.isInteger(clients) || clients <= 0) throw new Error('clients must be a positive integer');
  const result = await measureWebSocketClients({ clients, log: (line) => process.stdout.write(`${line}\n`) });
  const kib = (bytes: number) => (bytes / 1024).toFixed(2);
  process.stdout.write(
    `per client: rss ${kib(result.perClient.rss)} KiB, heap ${kib(result.perClient.heap)} KiB, ` +
      `external ${kib(result.perClient.external)} KiB (${result.clients} clients; broadcast reached ` +
      `${result.broadcastReceived})\n`,
  );
  process.stdout.write(`${JSON.stringify(result)}\n`);
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((err: unknown) => {
    process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  });
}
