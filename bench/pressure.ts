import http from 'node:http';
import { mkdirSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import WebSocket from 'ws';
import { cdpSession, spawnBenchServer } from './common.js';
import { OUTCOME_STATUSES } from '../src/turns/turn-status.js';
import { runLoad } from './load.js';
import { percentile, serverTiming } from './probes.js';
import { memoryMiB } from './proc-stats.js';
import { spawnGateway, stopChild, waitForHealth, type Child } from './processes.js';

/**
 * The pressure the memory scenarios of the bench and the soak put on a
 * gateway, each as a driver that reports what the clients saw:
 *
 * - `Flood`: an open-loop offer of waited turns, 202 acceptances and
 *   WebSocket messages at a given rate; what the gateway refuses (503/429,
 *   with or without `Retry-After`; error frames) is counted apart from what
 *   it accepts (and how long that took);
 * - `slowConsumers`: SSE and WebSocket clients that stop reading while long
 *   replies stream to them, then read what is left to learn whether the
 *   gateway closed them;
 * - `largeToolTurns`: turns whose tool returns a large result (an MCP stdio
 *   server of the bench, `blob-tool-server.ts`);
 * - `coldStart`: a whole gateway process from spawn to its first 200 from
 *   `/health`, and its RSS when idle after it;
 * - `RssSampler` and `inspector` (heap after a full GC): the gateway's memory.
 *
 * The gateways run the built server (`dist/src/main.js`) against the bench's
 * `mixed-model.ts`, whose answers the turn's text picks.
 */

export const PRESSURE_TOKEN = 'pressure-token';
export const PRESSURE_ADMIN_TOKEN = 'pressure-admin-token';
const HIGH_LIMIT = 100_000_000;
const auth = { 'x-api-token': PRESSURE_TOKEN };
/** The MCP tool of `blob-tool-server.ts` as the agents see it. */
export const BLOB_TOOL = 'mcp__big__blob';

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** A gateway on the mixed model, with the blob tool server. */
export interface PressureGateway {
  child: Child;
  url: string;
  model: Child;
  stop(): Promise<void>;
}

/** How to start a pressure gateway. */
export interface PressureGatewayOptions {
  dir: string;
  name: string;
  storage: Record<string, unknown>;
  /** Flags of `node` before the gateway's script (e.g. `--inspect=127.0.0.1:0`). */
  nodeArgs?: string[];
  /** More top-level config keys (merged over the defaults). */
  extra?: Record<string, unknown>;
}

/** Starts the mixed model (a child process) and a gateway using it. */
export async function startPressureGateway(options: PressureGatewayOptions): Promise<PressureGateway> {
  mkdirSync(options.dir, { recursive: true });
  const model = spawnBenchServer('mixed model', 'mixed-model.js');
  const modelUrl = await model.ready;
  const config = {
    data_dir: join(options.dir, 'data'),
    gateway: {
      host: '127.0.0.1',
      port: 0,
      auth: { api_tokens: [PRESSURE_TOKEN], admin_tokens: [PRESSURE_ADMIN_TOKEN] },
    },
    security: {
      rate_limits: { read: HIGH_LIMIT, write: HIGH_LIMIT, analytics: HIGH_LIMIT, lifecycle: HIGH_LIMIT },
    },
    storage: options.storage,
    provider: { type: 'openai', base_url: `${modelUrl}/v1`, model: 'bench-model' },
    mcp: {
      // The whole 1 MB result reaches the gateway's own cap (limits.payloads.max_tool_result_bytes).
      max_output_bytes: 2 * 1024 * 1024,
      servers: {
        big: {
          transport: 'stdio',
          command: process.execPath,
          args: [join(import.meta.dirname, 'blob-tool-server.js')],
          timeout_seconds: 120,
        },
      },
    },
    logs: { level: 'warning' },
    ...options.extra,
  };
  const configPath = join(options.dir, 'gatehouse.yaml');
  writeFileSync(configPath, JSON.stringify(config, null, 2));
  const child = spawnGateway(['--config', configPath], {
    name: options.name,
    cwd: options.dir,
    nodeArgs: options.nodeArgs ?? process.env.BENCH_GATEWAY_NODE_ARGS?.split(' ').filter(Boolean) ?? [],
    startTimeoutMs: 30_000,
    stdin: 'pipe',
    keepLines: 200,
  });
  const url = await child.ready.catch(async (err: Error) => {
    await stopChild(model, 5_000);
    throw new Error(`${err.message}\n--- gateway output ---\n${child.tail()}`);
  });
  await waitForHealth(url, 30_000);
  await mcpReady(url, 'big', 30_000);
  return {
    child,
    url,
    model,
    async stop() {
      await stopChild(child, 30_000);
      await stopChild(model, 5_000);
    },
  };
}

/** Waits until the gateway's MCP server `name` is `ready` (its tools offered). */
async function mcpReady(url: string, name: string, timeoutMs: number): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  let last = '';
  while (performance.now() < deadline) {
    const { status, json } = await call(url, 'GET', '/api/v1/mcp/servers', undefined, PRESSURE_ADMIN_TOKEN);
    const items = Array.isArray(json.items) ? (json.items as Array<{ name?: unknown; state?: unknown }>) : [];
    const server = items.find((item) => item.name === name);
    if (status === 200 && server?.state === 'ready') return;
    last = `HTTP ${status}: ${JSON.stringify(json).slice(0, 300)}`;
    await sleep(100);
  }
  throw new Error(`MCP server ${name} not ready within ${timeoutMs} ms: ${last}`);
}

/** Samples a process's RSS every `everyMs` and keeps the peak. */
export class RssSampler {
  peakMiB = 0;
  private intervalPeakMiB = 0;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly pid: number,
    private readonly everyMs = 200,
  ) {}

  /** The RSS now, MiB (NaN once the process is gone); also counted towards the peak. */
  sample(): number {
    let rss = NaN;
    try {
      rss = memoryMiB(this.pid, 'VmRSS');
    } catch {
      return NaN;
    }
    this.peakMiB = Math.max(this.peakMiB, rss);
    this.intervalPeakMiB = Math.max(this.intervalPeakMiB, rss);
    return rss;
  }

  /** The peak since the last call (or the start), MiB, the RSS now included; starts the next interval. */
  takeIntervalPeak(): number {
    this.sample();
    const peak = this.intervalPeakMiB;
    this.intervalPeakMiB = 0;
    return peak;
  }

  start(): this {
    this.sample();
    this.timer = setInterval(() => this.sample(), this.everyMs);
    this.timer.unref();
    return this;
  }

  /** Stops sampling; returns the peak (MiB). */
  stop(): number {
    clearInterval(this.timer);
    this.sample();
    return this.peakMiB;
  }
}

/** A minimal Chrome DevTools Protocol client over a `node --inspect` process's WebSocket. */
export async function inspector(url: string): Promise<{ heapAfterGcMiB(): Promise<number>; close(): void }> {
  const { send, close } = await cdpSession(url);
  return {
    /** Used V8 heap right after a full collection, MiB. */
    async heapAfterGcMiB(): Promise<number> {
      await send('HeapProfiler.collectGarbage');
      const usage = (await send('Runtime.getHeapUsage')) as { usedSize: number };
      return usage.usedSize / 1024 / 1024;
    },
    close,
  };
}

/**
 * The gateway's capacity of waited turns (turns/s, at least 1): the turns answered 200 per second by a closed
 * loop of 32 in flight (twice `agent.max_concurrent_turns`: every slot busy and a turn's worth waiting, what
 * the turn queue takes without refusing), each turn's model call told `text` (e.g. `delay=50`). Refusals are
 * not capacity: counting them once made a gateway that refused most of 64 in flight look 20× faster than it is.
 */
export async function waitedTurnCapacity(
  url: string,
  text: string,
  warmupMs: number,
  durationMs: number,
): Promise<number> {
  const load = await runLoad({
    url,
    concurrency: 32,
    warmupMs,
    durationMs,
    maxRequests: 1_000_000,
    requestTimeoutMs: 60_000,
    expectStatus: 200,
    request: (n) => ({
      method: 'POST',
      path: '/api/v1/message?wait=true&timeout_seconds=30',
      headers: { 'x-api-token': PRESSURE_TOKEN },
      body: Buffer.from(JSON.stringify({ platform: 'cap', user_id: 'u', chat_id: `cap${n % 256}`, text })),
    }),
  });
  return Math.max(1, load.okRps);
}

// ---------------------------------------------------------------------------------------------------------------
// HTTP

interface Reply {
  status: number;
  body: string;
  retryAfter: boolean;
  /** The answer's `Server-Timing` phases (accept, queue, claim, provider, persist, deliver, total), ms. */
  phases: Map<string, number>;
}

/**
 * One request. A keep-alive socket the server closed as it was reused (its
 * idle timeout racing the next request) is retried once on a new socket, as
 * the Node documentation advises (the request most likely never reached it).
 */
function request(
  agent: http.Agent,
  url: string,
  method: 'GET' | 'POST',
  path: string,
  body: Buffer | undefined,
  timeoutMs: number,
  headers: Record<string, string> = auth,
  retried = false,
  onConnect?: (ms: number) => void,
): Promise<Reply> {
  const base = new URL(url);
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        agent,
        host: base.hostname,
        port: base.port,
        method,
        path,
        headers: {
          ...headers,
          ...(body ? { 'content-type': 'application/json', 'content-length': body.length } : {}),
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            body: Buffer.concat(chunks).toString('utf8'),
            retryAfter: typeof res.headers['retry-after'] === 'string' && res.headers['retry-after'] !== '',
            phases: serverTiming(res.headers),
          }),
        );
        res.on('error', reject);
      },
    );
    if (onConnect) {
      req.once('socket', (socket) => {
        if (socket.connecting) socket.once('connect', () => onConnect(performance.now() - t0));
      });
    }
    req.setTimeout(timeoutMs, () => req.destroy(new Error(`timed out after ${timeoutMs} ms`)));
    req.on('error', (err: NodeJS.ErrnoException) => {
      if (!retried && req.reusedSocket && err.code === 'ECONNRESET') {
        request(agent, url, method, path, body, timeoutMs, headers, true, onConnect).then(resolve, reject);
      } else reject(err);
    });
    req.end(body);
  });
}

/** One request with a short-lived agent (set-up and polling). */
export async function call(
  url: string,
  method: 'GET' | 'POST',
  path: string,
  body?: unknown,
  token = PRESSURE_TOKEN,
): Promise<{ status: number; json: Record<string, unknown> }> {
  const agent = new http.Agent({ keepAlive: false });
  try {
    const reply = await request(
      agent,
      url,
      method,
      path,
      body === undefined ? undefined : Buffer.from(JSON.stringify(body)),
      60_000,
      { 'x-api-token': token },
    );
    let json: Record<string, unknown> = {};
    try {
      json = JSON.parse(reply.body) as Record<string, unknown>;
    } catch {
      json = { raw: reply.body.slice(0, 300) };
    }
    return { status: reply.status, json };
  } finally {
    agent.destroy();
  }
}

/** Waits until each turn has ended or paused (at most `timeoutMs`); returns how many did not. */
export async function waitForTurns(url: string, eventIds: Iterable<string>, timeoutMs: number): Promise<number> {
  const pending = new Set(eventIds);
  const deadline = performance.now() + timeoutMs;
  while (pending.size > 0 && performance.now() < deadline) {
    for (const eventId of [...pending]) {
      const { status, json } = await call(
        url,
        'GET',
        `/api/v1/turns/${encodeURIComponent(eventId)}`,
        undefined,
        PRESSURE_ADMIN_TOKEN,
      );
      if (status === 200 && typeof json.status === 'string' && OUTCOME_STATUSES.has(json.status)) {
        pending.delete(eventId);
      }
    }
    if (pending.size > 0) await sleep(200);
  }
  return pending.size;
}

// ---------------------------------------------------------------------------------------------------------------
// Flood

/** What one kind of offered work met. */
export interface KindStats {
  sent: number;
  /** 200 (waited), 202 (acknowledged) or an `accepted` frame (WebSocket). */
  accepted: number;
  /** 503 or 429 (HTTP), an UNAVAILABLE or RATE_LIMITED error frame (WebSocket). */
  refused: number;
  /** HTTP refusals without a `Retry-After` header. */
  refusedWithoutRetryAfter: number;
  /** Anything else: other statuses, transport errors, timeouts, turns that did not complete. */
  failed: number;
  /** Latency of accepted work, ms: the answer (HTTP), the `final` frame (WebSocket). */
  latencies: number[];
  statuses: Record<string, number>;
  /** Why work failed, by kind of reason (numbers and ids left out). */
  reasons: Record<string, number>;
  /** HTTP: time to open each new connection, ms (long ones tell of a full accept queue: SYN retransmissions). */
  connects: number[];
  /** HTTP: latency of accepted work from its connection being open (the latency less the connect), ms. */
  afterConnect: number[];
  /**
   * HTTP: latency of accepted work on the gateway's own clock (`Server-Timing` total: from the handler's start to
   * the answer), ms. Apart from the client's view, it leaves out time in socket buffers and in either event loop.
   */
  server: number[];
  /** HTTP: each `Server-Timing` phase of accepted work, ms (where the gateway's time went). */
  phases: Record<string, number[]>;
}

/** What a flood offered and what became of it. */
export interface FloodResult {
  seconds: number;
  /** Offers the pacing made (sent or not). */
  offered: number;
  /** Offers not sent: the client's in-flight cap (HTTP) or every WebSocket connection busy. */
  notSent: number;
  /** WebSocket connections of the flood refused or not authenticated within 10 s (left out). */
  lanesRefused: number;
  waited: KindStats;
  ack: KindStats;
  ws: KindStats;
  firstError?: string;
}

/** How to flood. */
export interface FloodOptions {
  url: string;
  /** Offers per second, all kinds together (a third each: waited turns, 202 acceptances, WebSocket messages). */
  rate: number;
  seconds: number;
  /** HTTP requests in flight at most (also the agent's sockets). */
  maxInFlight: number;
  /** WebSocket connections carrying the WebSocket share (each follows at most 16 turns). */
  wsConnections: number;
  /** Distinct sessions the work is spread over. */
  sessions: number;
  /** The turn's text (the mixed model's words, e.g. `delay=50`). */
  text: string;
  /** Chat ids' prefix (keeps runs apart). */
  prefix: string;
  /** Seconds a waited turn may wait (`timeout_seconds`). */
  waitSeconds?: number;
  /** Only some kinds (default all three). */
  kinds?: ReadonlyArray<'waited' | 'ack' | 'ws'>;
}

const newStats = (): KindStats => ({
  sent: 0,
  accepted: 0,
  refused: 0,
  refusedWithoutRetryAfter: 0,
  failed: 0,
  latencies: [],
  statuses: {},
  reasons: {},
  connects: [],
  afterConnect: [],
  server: [],
  phases: {},
});

const REFUSED = new Set([503, 429]);
const REFUSED_CODES = new Set(['UNAVAILABLE', 'RATE_LIMITED', 'OVERLOADED']);
/** Turns one WebSocket connection may follow at once (the gateway's default `maxTurnsPerConnection`). */
const WS_TURNS_PER_CONNECTION = 16;

interface WsLane {
  socket: WebSocket;
  inFlight: Map<string, { t0: number; eventId?: string }>;
  byEvent: Map<string, string>;
}

/**
 * An open-loop flood: `run()` offers work at `rate` for `seconds` (resolving
 * when the window ends, with requests still in flight); `finish()` waits for
 * those (at most `timeoutMs`), closes the connections and returns the tally.
 */
export class Flood {
  private readonly agent: http.Agent;
  private readonly waited = newStats();
  private readonly ack = newStats();
  private readonly ws = newStats();
  private readonly lanes: WsLane[] = [];
  private readonly pending = new Set<Promise<void>>();
  private inFlight = 0;
  private offered = 0;
  private notSent = 0;
  private lanesRefused = 0;
  private firstError: string | undefined;
  private windowSeconds = 0;
  private n = 0;

  constructor(private readonly options: FloodOptions) {
    this.agent = new http.Agent({ keepAlive: true, maxSockets: options.maxInFlight, maxFreeSockets: 256 });
  }

  private fail(stats: KindStats, message: string): void {
    stats.failed++;
    this.firstError ??= message;
    const reason = message
      .replace(/"request_id":"[^"]*"/g, '')
      .replace(/\d+/g, 'N')
      .slice(0, 120);
    stats.reasons[reason] = (stats.reasons[reason] ?? 0) + 1;
  }

  /**
   * Opens the WebSocket connections of the flood. One that is refused or not authenticated within 10 s (an
   * overloaded gateway may do either) is left out and counted in `lanesRefused`; the flood goes on with the rest.
   */
  private async openLanes(): Promise<void> {
    const kinds = this.options.kinds ?? ['waited', 'ack', 'ws'];
    if (!kinds.includes('ws')) return;
    const base = this.options.url.replace(/^http/, 'ws');
    await Promise.all(
      Array.from({ length: this.options.wsConnections }, async (_, i) => {
        const socket = new WebSocket(
          `${base}/api/v1/ws?token=${PRESSURE_TOKEN}&platform=flood&user_id=u&chat_id=${this.options.prefix}-lane${i}`,
        );
        socket.on('error', (err) => (this.firstError ??= `WebSocket: ${err.message}`));
        const lane: WsLane = { socket, inFlight: new Map(), byEvent: new Map() };
        const open = await new Promise<boolean>((resolve) => {
          const timer = setTimeout(() => resolve(false), 10_000);
          socket.on('message', (data: Buffer) => {
            const frame = JSON.parse(data.toString('utf8')) as {
              type?: string;
              ref?: string;
              event_id?: string;
              status?: string;
              error?: { code?: string; message?: string };
            };
            if (frame.type === 'auth_ok') {
              clearTimeout(timer);
              resolve(true);
              return;
            }
            this.onFrame(lane, frame);
          });
          socket.once('close', () => {
            clearTimeout(timer);
            resolve(false);
          });
        });
        if (!open) {
          this.lanesRefused++;
          socket.terminate();
          return;
        }
        socket.on('close', () => {
          for (const [, entry] of lane.inFlight) {
            void entry;
            this.fail(this.ws, 'WebSocket closed with turns in flight');
          }
          lane.inFlight.clear();
        });
        this.lanes.push(lane);
      }),
    );
  }

  private onFrame(
    lane: WsLane,
    frame: {
      type?: string;
      ref?: string;
      event_id?: string;
      status?: string;
      error?: { code?: string; message?: string };
    },
  ): void {
    if (frame.type === 'accepted' && frame.ref !== undefined && frame.event_id !== undefined) {
      const entry = lane.inFlight.get(frame.ref);
      if (!entry) return;
      entry.eventId = frame.event_id;
      lane.byEvent.set(frame.event_id, frame.ref);
      this.ws.accepted++;
      return;
    }
    if (frame.type === 'final' && frame.event_id !== undefined) {
      const ref = lane.byEvent.get(frame.event_id);
      if (ref === undefined) return;
      const entry = lane.inFlight.get(ref)!;
      lane.byEvent.delete(frame.event_id);
      lane.inFlight.delete(ref);
      this.ws.statuses[`final:${frame.status}`] = (this.ws.statuses[`final:${frame.status}`] ?? 0) + 1;
      if (frame.status === 'completed') this.ws.latencies.push(performance.now() - entry.t0);
      else this.fail(this.ws, `WebSocket turn ended ${frame.status}`);
      return;
    }
    if (frame.type === 'error') {
      const ref = frame.ref ?? (frame.event_id !== undefined ? lane.byEvent.get(frame.event_id) : undefined);
      const code = frame.error?.code ?? 'unknown';
      this.ws.statuses[code] = (this.ws.statuses[code] ?? 0) + 1;
      if (ref === undefined) return;
      const entry = lane.inFlight.get(ref);
      if (!entry) return;
      lane.inFlight.delete(ref);
      if (entry.eventId !== undefined) lane.byEvent.delete(entry.eventId);
      if (entry.eventId === undefined && REFUSED_CODES.has(code)) this.ws.refused++;
      else this.fail(this.ws, `WebSocket error frame ${code}: ${frame.error?.message ?? ''}`);
    }
  }

  private sendHttp(kind: 'waited' | 'ack', n: number): void {
    const stats = kind === 'waited' ? this.waited : this.ack;
    if (this.inFlight >= this.options.maxInFlight) {
      this.notSent++;
      return;
    }
    const wait = this.options.waitSeconds ?? 30;
    const body = Buffer.from(
      JSON.stringify({
        platform: 'flood',
        user_id: 'u',
        chat_id: `${this.options.prefix}-${kind}${n % this.options.sessions}`,
        text: `${this.options.text} n=${n}`,
      }),
    );
    const path = kind === 'waited' ? `/api/v1/message?wait=true&timeout_seconds=${wait}` : '/api/v1/message';
    stats.sent++;
    this.inFlight++;
    const t0 = performance.now();
    let connectMs = 0;
    const done = request(this.agent, this.options.url, 'POST', path, body, (wait + 15) * 1000, auth, false, (ms) => {
      connectMs = ms;
      stats.connects.push(ms);
    })
      .then(
        (reply) => {
          stats.statuses[reply.status] = (stats.statuses[reply.status] ?? 0) + 1;
          const ok = kind === 'waited' ? 200 : 202;
          if (reply.status === ok) {
            stats.accepted++;
            stats.latencies.push(performance.now() - t0);
            stats.afterConnect.push(performance.now() - t0 - connectMs);
            const total = reply.phases.get('total');
            if (total !== undefined) stats.server.push(total);
            for (const [name, ms] of reply.phases) (stats.phases[name] ??= []).push(ms);
          } else if (REFUSED.has(reply.status)) {
            stats.refused++;
            if (!reply.retryAfter) stats.refusedWithoutRetryAfter++;
          } else {
            this.fail(stats, `POST ${path} → HTTP ${reply.status}: ${reply.body.slice(0, 200)}`);
          }
        },
        (err: Error) => {
          stats.statuses.error = (stats.statuses.error ?? 0) + 1;
          this.fail(stats, `POST ${path} → ${err.message}`);
        },
      )
      .finally(() => {
        this.inFlight--;
        this.pending.delete(done);
      });
    this.pending.add(done);
  }

  private sendWs(n: number): void {
    const count = this.lanes.length;
    for (let i = 0; i < count; i++) {
      const lane = this.lanes[(n + i) % count]!;
      if (lane.socket.readyState !== WebSocket.OPEN || lane.inFlight.size >= WS_TURNS_PER_CONNECTION) continue;
      const ref = `r${n}`;
      lane.inFlight.set(ref, { t0: performance.now() });
      this.ws.sent++;
      lane.socket.send(
        JSON.stringify({
          type: 'message',
          ref,
          text: `${this.options.text} n=${n}`,
          session_key: `gateway:flood:${this.options.prefix}-ws${n % this.options.sessions}`,
        }),
      );
      return;
    }
    this.notSent++;
  }

  private offer(): void {
    const n = this.n++;
    this.offered++;
    const kinds = this.options.kinds ?? ['waited', 'ack', 'ws'];
    const kind = kinds[n % kinds.length]!;
    if (kind === 'ws') this.sendWs(n);
    else this.sendHttp(kind, n);
  }

  /** Offers work at the rate for the window; resolves when the window ends. */
  async run(): Promise<void> {
    await this.openLanes();
    const start = performance.now();
    const end = start + this.options.seconds * 1000;
    await new Promise<void>((resolve) => {
      const tick = setInterval(() => {
        const now = Math.min(performance.now(), end);
        const due = Math.floor(((now - start) / 1000) * this.options.rate);
        // A client stalled by its own CPU does not burst: at most a quarter second of offers at once.
        const burst = Math.max(1, Math.ceil(this.options.rate / 4));
        if (due - this.offered > burst) {
          this.notSent += due - this.offered - burst;
          this.offered = due - burst;
        }
        while (this.offered < due) this.offer();
        if (now >= end) {
          clearInterval(tick);
          resolve();
        }
      }, 5);
    });
    this.windowSeconds = (performance.now() - start) / 1000;
  }

  /** Waits for the work still in flight (at most `timeoutMs`), then closes the connections; the tally. */
  async finish(timeoutMs: number): Promise<FloodResult> {
    const deadline = performance.now() + timeoutMs;
    while (
      (this.pending.size > 0 || this.lanes.some((lane) => lane.inFlight.size > 0)) &&
      performance.now() < deadline
    ) {
      await sleep(50);
    }
    for (const lane of this.lanes) lane.socket.terminate();
    this.agent.destroy();
    return {
      seconds: this.windowSeconds,
      offered: this.offered,
      notSent: this.notSent,
      lanesRefused: this.lanesRefused,
      waited: this.waited,
      ack: this.ack,
      ws: this.ws,
      ...(this.firstError !== undefined ? { firstError: this.firstError } : {}),
    };
  }
}

/** Every kind's stats together. */
export function totals(result: FloodResult): KindStats {
  const all = newStats();
  for (const stats of [result.waited, result.ack, result.ws]) {
    all.sent += stats.sent;
    all.accepted += stats.accepted;
    all.refused += stats.refused;
    all.refusedWithoutRetryAfter += stats.refusedWithoutRetryAfter;
    all.failed += stats.failed;
  }
  return all;
}

/** One line about a flood's outcome. */
export function floodLine(result: FloodResult): string {
  const kind = (name: string, s: KindStats): string => {
    const top = Object.entries(s.reasons).sort((a, b) => b[1] - a[1])[0];
    return (
      `${name} ${s.sent} sent: ${s.accepted} accepted (p99 ${percentile(s.latencies, 99).toFixed(1)} ms), ` +
      `${s.refused} refused (${s.refusedWithoutRetryAfter} without Retry-After), ${s.failed} failed` +
      (s.connects.length > 0
        ? `, ${s.connects.length} connections opened (p99 ${percentile(s.connects, 99).toFixed(0)} ms)`
        : '') +
      (top ? ` (mostly ${top[1]}× ${top[0]})` : '')
    );
  };
  return (
    `${result.offered} offered in ${result.seconds.toFixed(1)} s (${(result.offered / Math.max(0.001, result.seconds)).toFixed(0)}/s), ` +
    `${result.notSent} not sent (client cap)${result.lanesRefused > 0 ? `, ${result.lanesRefused} WebSocket connections refused` : ''}; ${kind('waited', result.waited)}; ${kind('202', result.ack)}; ${kind('ws', result.ws)}`
  );
}

/**
 * After a flood: waited turns one at a time, each on a fresh session, until
 * three in a row answer 200 within `thresholdMs`. Seconds from the call to
 * the first of those three (NaN when that does not happen within `timeoutMs`).
 */
export async function timeToRecover(
  url: string,
  text: string,
  thresholdMs: number,
  timeoutMs: number,
  prefix: string,
): Promise<number> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const t0 = performance.now();
  let streakStart = NaN;
  let streak = 0;
  let n = 0;
  try {
    while (performance.now() - t0 < timeoutMs) {
      const sentAt = performance.now();
      const body = Buffer.from(
        JSON.stringify({ platform: 'probe', user_id: 'u', chat_id: `${prefix}-probe${n++}`, text }),
      );
      let ok = false;
      try {
        const reply = await request(agent, url, 'POST', '/api/v1/message?wait=true&timeout_seconds=30', body, 45_000);
        ok = reply.status === 200 && performance.now() - sentAt <= thresholdMs;
      } catch {
        ok = false;
      }
      if (ok) {
        if (streak === 0) streakStart = sentAt;
        if (++streak >= 3) return (streakStart - t0) / 1000;
      } else {
        streak = 0;
        await sleep(20);
      }
    }
    return NaN;
  } finally {
    agent.destroy();
  }
}

/**
 * Seconds until the gateway takes new work again: an acknowledged message (`wait` false) answered 202, not shed,
 * and health no longer `degraded` by its `memory` component. Polled every 50 ms. What was accepted during the
 * flood still runs after this (`timeToRecover` measures when waited turns are fast again).
 */
export async function timeToTakeWork(url: string, timeoutMs: number, prefix: string): Promise<number> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const t0 = performance.now();
  let n = 0;
  try {
    while (performance.now() - t0 < timeoutMs) {
      try {
        const health = await request(agent, url, 'GET', '/api/v1/health', undefined, 5_000);
        const memory = (JSON.parse(health.body) as { components?: { memory?: { status?: string } } }).components?.memory
          ?.status;
        if (memory === undefined || memory === 'ok') {
          const body = Buffer.from(
            JSON.stringify({ platform: 'probe', user_id: 'u', chat_id: `${prefix}-take${n++}`, text: 'probe' }),
          );
          const reply = await request(agent, url, 'POST', '/api/v1/message', body, 5_000);
          if (reply.status === 202) return (performance.now() - t0) / 1000;
        }
      } catch {
        // not answering yet: try again
      }
      await sleep(50);
    }
    return NaN;
  } finally {
    agent.destroy();
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Slow consumers

/** How many non-reading clients of each kind, on what replies. */
export interface SlowOptions {
  url: string;
  /** SSE clients following the turns (`GET /turns/{id}/events`), spread over the turns. */
  sse: number;
  /** WebSocket clients, each sending one message whose reply it then does not read. */
  ws: number;
  /** Turns started over HTTP for the SSE clients when there are no WebSocket clients. */
  replyBytes: number;
  chunkBytes: number;
  intervalMs: number;
  prefix: string;
  /** How long to wait for the turns to end. */
  timeoutMs: number;
}

/** What became of the non-reading clients once they read again. */
export interface SlowResult {
  /** `refused`: clients the gateway would not take (503, an error frame) or that got no turn to follow. */
  sse: { clients: number; refused: number; closed: number; completed: number; other: number };
  ws: {
    clients: number;
    refused: number;
    closed: number;
    completed: number;
    other: number;
    closeCodes: Record<string, number>;
  };
  turns: number;
  turnsNotEnded: number;
}

/**
 * Non-reading clients: WebSocket clients each ask for a long reply and stop
 * reading once it is accepted; SSE clients follow those turns (or one turn
 * started over HTTP) and never read. Once every turn has ended they read
 * again: a stream that ends without its `done` event (SSE) or a connection
 * closed before its `final` frame (WebSocket) was closed by the gateway.
 */
export async function slowConsumers(options: SlowOptions): Promise<SlowResult> {
  const text = `reply=long bytes=${options.replyBytes} chunk=${options.chunkBytes} interval=${options.intervalMs} delay=300`;
  const base = options.url.replace(/^http/, 'ws');
  const sockets: Array<{ socket: WebSocket; eventId: string }> = [];
  let wsRefused = 0;
  let sseRefused = 0;
  await Promise.all(
    Array.from({ length: options.ws }, async (_, i) => {
      const socket = new WebSocket(
        `${base}/api/v1/ws?token=${PRESSURE_TOKEN}&platform=slow&user_id=u&chat_id=${options.prefix}-w${i}`,
      );
      socket.on('error', () => undefined);
      // Null: refused (an error frame, a refused upgrade) or nothing accepted within 30 s.
      const eventId = await new Promise<string | null>((resolve) => {
        const timer = setTimeout(() => resolve(null), 30_000);
        socket.once('close', () => {
          clearTimeout(timer);
          resolve(null);
        });
        const onMessage = (data: Buffer): void => {
          const frame = JSON.parse(data.toString('utf8')) as { type?: string; event_id?: string; error?: unknown };
          if (frame.type === 'auth_ok') socket.send(JSON.stringify({ type: 'message', text, ref: 'slow' }));
          else if (frame.type === 'accepted' && frame.event_id !== undefined) {
            clearTimeout(timer);
            socket.off('message', onMessage);
            // From here on it reads nothing.
            socket.pause();
            resolve(frame.event_id);
          } else if (frame.type === 'error') {
            clearTimeout(timer);
            resolve(null);
          }
        };
        socket.on('message', onMessage);
      });
      if (eventId === null) {
        wsRefused++;
        socket.terminate();
        return;
      }
      sockets.push({ socket, eventId });
    }),
  );
  const turns = sockets.map((s) => s.eventId);
  if (turns.length === 0 && options.sse > 0) {
    const { status, json } = await call(options.url, 'POST', '/api/v1/message', {
      platform: 'slow',
      user_id: 'u',
      chat_id: `${options.prefix}-sse`,
      text,
    });
    if (status === 202 && typeof json.event_id === 'string') turns.push(json.event_id);
    else if (status !== 503 && status !== 429) {
      throw new Error(`slow consumers: POST /message → HTTP ${status}: ${JSON.stringify(json)}`);
    }
  }
  const agent = new http.Agent({ keepAlive: false, maxSockets: Infinity });
  const base2 = new URL(options.url);
  const opened = await Promise.all(
    Array.from(
      { length: turns.length > 0 ? options.sse : 0 },
      (_, i) =>
        new Promise<http.IncomingMessage | null>((resolve, reject) => {
          const req = http.request(
            {
              agent,
              host: base2.hostname,
              port: base2.port,
              method: 'GET',
              path: `/api/v1/turns/${encodeURIComponent(turns[i % turns.length]!)}/events`,
              headers: { ...auth, accept: 'text/event-stream' },
            },
            // No 'data' listener: the response stays paused and its socket stops being read.
            (res) => {
              if (res.statusCode === 200) return resolve(res);
              res.resume();
              if (res.statusCode === 503 || res.statusCode === 429) resolve(null);
              else reject(new Error(`SSE follow → HTTP ${res.statusCode}`));
            },
          );
          req.on('error', reject);
          req.end();
        }),
    ),
  );
  const streams = opened.filter((res): res is http.IncomingMessage => res !== null);
  sseRefused = options.sse - streams.length;
  const turnsNotEnded = await waitForTurns(options.url, turns, options.timeoutMs);
  await sleep(1_000);

  const result: SlowResult = {
    sse: { clients: options.sse, refused: sseRefused, closed: 0, completed: 0, other: 0 },
    ws: { clients: options.ws, refused: wsRefused, closed: 0, completed: 0, other: 0, closeCodes: {} },
    turns: turns.length,
    turnsNotEnded,
  };
  await Promise.all([
    ...streams.map(
      (res) =>
        new Promise<void>((resolve) => {
          let tail = '';
          let sawDone = false;
          let settled = false;
          const settle = (outcome: 'closed' | 'completed' | 'other'): void => {
            if (settled) return;
            settled = true;
            clearTimeout(timer);
            result.sse[outcome]++;
            res.destroy();
            resolve();
          };
          const timer = setTimeout(() => settle('other'), 60_000);
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => {
            tail = (tail + chunk).slice(-4096);
            if (/^event: done$/m.test(tail)) sawDone = true;
          });
          const end = (): void => settle(sawDone ? 'completed' : 'closed');
          res.once('end', end);
          res.once('error', end);
          res.once('close', end);
        }),
    ),
    ...sockets.map(
      ({ socket, eventId }) =>
        new Promise<void>((resolve) => {
          let final = false;
          let settled = false;
          const settle = (outcome: 'closed' | 'completed' | 'other', code?: number): void => {
            if (settled) return;
            settled = true;
            clearTimeout(timer);
            result.ws[outcome]++;
            if (code !== undefined) result.ws.closeCodes[code] = (result.ws.closeCodes[code] ?? 0) + 1;
            socket.terminate();
            resolve();
          };
          const timer = setTimeout(() => settle('other'), 60_000);
          socket.on('message', (data: Buffer) => {
            const frame = JSON.parse(data.toString('utf8')) as { type?: string; event_id?: string };
            if (frame.type === 'final' && frame.event_id === eventId) {
              final = true;
              settle('completed');
            }
          });
          socket.once('close', (code: number) => settle(final ? 'completed' : 'closed', code));
          socket.resume();
        }),
    ),
  ]);
  agent.destroy();
  return result;
}

// ---------------------------------------------------------------------------------------------------------------
// Large tool results

/** What turns with a large tool result came to. */
export interface LargeResult {
  turns: number;
  completed: number;
  /** Refused at the door (503/429: the gateway shedding what it cannot take at once). */
  refused: number;
  failed: number;
  /** The largest tool result the model was given, bytes (as the model reported it). */
  modelSawBytes: number;
  firstError?: string;
}

/** `count` waited turns at once, each calling the blob tool for `toolBytes` bytes. */
export async function largeToolTurns(
  url: string,
  count: number,
  toolBytes: number,
  prefix: string,
): Promise<LargeResult> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: count });
  const result: LargeResult = { turns: count, completed: 0, refused: 0, failed: 0, modelSawBytes: 0 };
  try {
    await Promise.all(
      Array.from({ length: count }, async (_, i) => {
        const body = Buffer.from(
          JSON.stringify({
            platform: 'large',
            user_id: 'u',
            chat_id: `${prefix}-${i}`,
            text: `tool=${BLOB_TOOL} tool_bytes=${toolBytes}`,
          }),
        );
        try {
          const reply = await request(
            agent,
            url,
            'POST',
            '/api/v1/message?wait=true&timeout_seconds=300',
            body,
            330_000,
          );
          const json = JSON.parse(reply.body) as { status?: string; response?: unknown };
          const saw = /tool result: (\d+) bytes/.exec(typeof json.response === 'string' ? json.response : '');
          if (reply.status === 200 && json.status === 'completed' && saw) {
            result.completed++;
            result.modelSawBytes = Math.max(result.modelSawBytes, Number(saw[1]));
          } else if (reply.status === 503 || reply.status === 429) {
            result.refused++;
          } else {
            result.failed++;
            result.firstError ??= `HTTP ${reply.status}: ${reply.body.slice(0, 300)}`;
          }
        } catch (err) {
          result.failed++;
          result.firstError ??= (err as Error).message;
        }
      }),
    );
  } finally {
    agent.destroy();
  }
  return result;
}

// ---------------------------------------------------------------------------------------------------------------
// Cold start and idle

/** A free TCP port on 127.0.0.1 (bound, read, released). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/**
 * One cold start: a fresh data dir, `node <flags> dist/src/main.js` on a
 * known port, `/health` polled every 5 ms from the spawn until it answers
 * 200; then the process idles `idleSeconds` and its RSS is read.
 */
export async function coldStart(
  dir: string,
  storage: Record<string, unknown>,
  idleSeconds: number,
): Promise<{ toHealthMs: number; idleRssMiB: number }> {
  mkdirSync(dir, { recursive: true });
  const port = await freePort();
  const configPath = join(dir, 'gatehouse.yaml');
  writeFileSync(
    configPath,
    JSON.stringify({
      data_dir: join(dir, 'data'),
      gateway: {
        host: '127.0.0.1',
        port,
        auth: { api_tokens: [PRESSURE_TOKEN], admin_tokens: [PRESSURE_ADMIN_TOKEN] },
      },
      storage,
      provider: { type: 'echo' },
      logs: { level: 'warning' },
    }),
  );
  const t0 = performance.now();
  const child = spawnGateway(['--config', configPath], { name: 'gateway (cold start)', cwd: dir, keepLines: 50 });
  const agent = new http.Agent({ keepAlive: false });
  try {
    let toHealthMs = NaN;
    while (performance.now() - t0 < 30_000) {
      if (child.process.exitCode !== null) throw new Error(`gateway exited during start:\n${child.tail()}`);
      try {
        const reply = await request(agent, `http://127.0.0.1:${port}`, 'GET', '/api/v1/health', undefined, 2_000, {});
        if (reply.status === 200) {
          toHealthMs = performance.now() - t0;
          break;
        }
      } catch {
        // not listening yet
      }
      await sleep(5);
    }
    if (!Number.isFinite(toHealthMs)) throw new Error(`gateway not healthy within 30 s:\n${child.tail()}`);
    await sleep(idleSeconds * 1000);
    return { toHealthMs, idleRssMiB: memoryMiB(child.pid, 'VmRSS') };
  } finally {
    agent.destroy();
    await stopChild(child, 15_000);
  }
}
