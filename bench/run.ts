import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from 'node:net';
import pg from 'pg';
import { envNumber, spawnBenchServer } from './common.js';
import {
  allFigures,
  handoffPath,
  jsonTarget,
  printVerdicts,
  record,
  report,
  writeJson,
  type TargetOp,
} from './figures.js';
import { runLoad, type LoadOptions, type LoadRequest, type LoadResult } from './load.js';
import { percentile, send, sequential, singleUserAgent, sseFirstDelta, openWsChat } from './probes.js';
import { cpuMs, machineBusyMs, memoryMiB, ticksPerSecond } from './proc-stats.js';
import { killAllNow, spawnGateway, stopAll, stopChild, waitForHealth, type Child } from './processes.js';
import { startStreamModel, type StreamModel } from './stream-model.js';
import { startOtlpSink } from './otlp-sink.js';
import { memoryScenarios, webSocketClientsScenario } from './memory-scenarios.js';
import { ordinaryReport, ordinaryScenario } from './ordinary.js';

/**
 * `npm run bench`: the message path's throughput, latency and CPU, on SQLite
 * and on PostgreSQL. Throughput is judged as a ratio against a bare node:http
 * server measured in the same run; a single user's turn is broken down into
 * its phases (from the gateway's `Server-Timing`); the time a streamed token
 * takes through the gateway is measured on one clock; CPU is read from /proc.
 * A report: targets that are not met do not fail the run; a broken run (a
 * server that does not start, more than 1% failed requests) does.
 * `--json <file>` writes every figure (see bench/README.md).
 */

const TOKEN = 'bench-token';
/** Admin token, used only to read the turn ledger while draining and (p)'s /metrics (so the measured token is an api token). */
const ADMIN_TOKEN = 'bench-admin-token';
const HIGH_LIMIT = 100_000_000;
/**
 * Room in the fake-model gateway's turn queue: (b) accepts faster than the background turns run, and with the
 * default 10 000 the gateway sheds load (503) a few seconds into the window; (b) measures acknowledgement.
 */
const MAX_QUEUED_TURNS = 200_000;
const ERROR_BUDGET = 0.01;

const SCENARIOS = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j', 'k', 'l', 'm', 'n', 'o', 'p'] as const;
/** Run without BENCH_SCENARIOS: all but the long scenarios (k, l, m, o, p), which are asked for by name. */
const DEFAULT_SCENARIOS = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j', 'n'] as const;
const BACKENDS = ['sqlite', 'postgres'] as const;
type Backend = (typeof BACKENDS)[number];

/** The local PostgreSQL socket directory of Debian's packages. */
const PG_SOCKET_DIR = '/var/run/postgresql';

/**
 * The server of this machine: over its Unix socket when there is one (how a co-located gateway should reach
 * it: loopback TCP costs the sender the receiver's network stack on every query), else 127.0.0.1:5432.
 */
function defaultPgUrl(): string {
  return existsSync(join(PG_SOCKET_DIR, '.s.PGSQL.5432'))
    ? `postgres://postgres@localhost:5432/test?host=${PG_SOCKET_DIR}`
    : 'postgres://postgres@127.0.0.1:5432/test';
}

/** `BENCH_SCENARIOS=a,d` runs a subset (default: `DEFAULT_SCENARIOS`; `all`: every one). */
function scenarioSet(raw: string | undefined): Set<string> {
  if (raw === undefined || raw.trim() === '') return new Set(DEFAULT_SCENARIOS);
  if (raw.trim().toLowerCase() === 'all') return new Set(SCENARIOS);
  const picked = raw.split(',').map((part) => part.trim().toLowerCase().replace(/[()]/g, ''));
  const unknown = picked.filter((part) => !(SCENARIOS as readonly string[]).includes(part));
  if (unknown.length > 0 || picked.length === 0) {
    throw new Error(`BENCH_SCENARIOS must list some of ${SCENARIOS.join(',')}, not ${JSON.stringify(raw)}`);
  }
  return new Set(picked);
}

/** `BENCH_BACKENDS=sqlite` runs one store (default: both). */
function backendList(raw: string | undefined): Backend[] {
  if (raw === undefined || raw.trim() === '') return [...BACKENDS];
  const picked = raw.split(',').map((part) => part.trim().toLowerCase());
  const unknown = picked.filter((part) => !(BACKENDS as readonly string[]).includes(part));
  if (unknown.length > 0 || picked.length === 0) {
    throw new Error(`BENCH_BACKENDS must list some of ${BACKENDS.join(',')}, not ${JSON.stringify(raw)}`);
  }
  return BACKENDS.filter((b) => picked.includes(b));
}

const settings = {
  seconds: envNumber('BENCH_SECONDS', 5, false),
  warmupSeconds: envNumber('BENCH_WARMUP_SECONDS', 1, false),
  /** Requests before a single-user window (at most 15 s of them): V8 is still optimizing the turn path for the first thousand or so turns. */
  singleUserWarmup: envNumber('BENCH_SINGLE_USER_WARMUP', 2000, true),
  ackConcurrency: envNumber('BENCH_ACK_CONCURRENCY', 50, true),
  concurrency: envNumber('BENCH_CONCURRENCY', 32, true),
  sessions: envNumber('BENCH_SESSIONS', 64, true),
  replayPool: envNumber('BENCH_REPLAY_POOL', 256, true),
  maxRequests: envNumber('BENCH_MAX_REQUESTS', 1_000_000, true),
  streamSamples: envNumber('BENCH_STREAM_SAMPLES', 100, true),
  cpuProfDir: process.env.BENCH_CPU_PROF_DIR?.trim() || undefined,
  scenarios: scenarioSet(process.env.BENCH_SCENARIOS),
  backends: backendList(process.env.BENCH_BACKENDS),
  pgUrl: process.env.BENCH_PG_URL?.trim() || defaultPgUrl(),
  redisUrl: process.env.BENCH_REDIS_URL?.trim() || 'redis://127.0.0.1:6379',
  /** `BENCH_CLUSTER_BUS=local` runs (i) without Redis (its gateways then hear of each other only through the store). */
  clusterBus: process.env.BENCH_CLUSTER_BUS?.trim() === 'local' ? 'local' : 'redis',
};

/** The targets (docs: bench/README.md). */
const targets = {
  keyedRatio: 0.25,
  keyedP99Ms: 20,
  replayRatio: 0.5,
  cpuPerTurnC32Ms: 1.0,
  cpuPerTurnC1Ms: 2.0,
  echoP50Ms: 5,
  echoP99Ms: 15,
  firstTokenAddedMs: 2,
  slowTurnCpuPct: 2,
  clusterRatio: 1.5,
};

/** The phases of a turn, in the order the gateway's `Server-Timing` names them. */
const PHASES = ['accept', 'queue', 'claim', 'provider', 'persist', 'deliver'] as const;

interface ScenarioResult {
  id: string;
  backend: Backend | 'none';
  label: string;
  load: LoadResult;
  /** CPU of the server under test per completed request, ms. */
  serverCpuPerReqMs: number;
  /** Server and load generator CPU over the window, % of one core. */
  serverCpuPct: number;
  loadgenCpuPct: number;
  /** The fake model server's CPU over the window, % of one core (scenario d). */
  modelCpuPct?: number;
  /** Busy CPU of everything else on the machine over the window, % of one core. */
  otherCpuPct: number;
  notes: string[];
}

interface Breakdown {
  backend: Backend;
  label: string;
  count: number;
  e2e: { p50: number; p99: number };
  /** p50 of each phase, ms, and the rest of the client's time (HTTP both ways, parsing). */
  phases: Array<{ name: string; p50: number; p99: number }>;
  cpuPerTurnMs: number;
}

const results: ScenarioResult[] = [];
const breakdowns: Breakdown[] = [];
const lines: string[] = [];
const log = (line = ''): void => {
  console.log(line);
};
const progress = (line: string): void => console.error(`bench: ${line}`);

function messageBody(chat: string, extra: Record<string, unknown> = {}): Buffer {
  return Buffer.from(JSON.stringify({ platform: 'bench', user_id: 'u', chat_id: chat, text: 'hi', ...extra }));
}

const authHeaders = { 'x-api-token': TOKEN };

/** CPU readings over one measured window. */
class Window {
  private server0 = 0;
  private model0 = 0;
  private self0 = process.cpuUsage();
  private machine0 = 0;
  private wall0 = 0;
  serverMs = 0;
  modelMs = 0;
  selfMs = 0;
  machineMs = 0;
  wallMs = 0;

  constructor(
    private readonly server: Child,
    private readonly model?: Child,
    /** More gateway processes counted as the server (a cluster). */
    private readonly peers: Child[] = [],
  ) {}

  private serversCpuMs(): number {
    return [this.server, ...this.peers].reduce((sum, child) => sum + cpuMs(child.pid), 0);
  }

  start(): void {
    this.wall0 = performance.now();
    this.server0 = this.serversCpuMs();
    if (this.model) this.model0 = cpuMs(this.model.pid);
    this.self0 = process.cpuUsage();
    this.machine0 = machineBusyMs();
  }

  end(): void {
    this.wallMs = Math.max(1, performance.now() - this.wall0);
    this.serverMs = this.serversCpuMs() - this.server0;
    if (this.model) this.modelMs = cpuMs(this.model.pid) - this.model0;
    const self = process.cpuUsage(this.self0);
    this.selfMs = (self.user + self.system) / 1000;
    this.machineMs = machineBusyMs() - this.machine0;
  }

  /** Busy CPU of everything else on the machine, % of one core. */
  get otherPct(): number {
    return Math.max(0, ((this.machineMs - this.serverMs - this.modelMs - this.selfMs) / this.wallMs) * 100);
  }
}

/**
 * Runs one load scenario against `server`, measuring its CPU (and the model
 * server's, when given) over exactly the measured window.
 */
async function scenario(
  id: string,
  backend: Backend | 'none',
  label: string,
  server: Child,
  options: Omit<LoadOptions, 'warmupMs' | 'durationMs' | 'maxRequests' | 'onWindowStart' | 'onWindowEnd'>,
  extra: { model?: Child; notes?: string[]; peers?: Child[] } = {},
): Promise<ScenarioResult> {
  progress(
    `${id} ${label} [${backend}]: ${settings.warmupSeconds} s warm-up + ${settings.seconds} s, ${options.concurrency} in flight…`,
  );
  const window = new Window(server, extra.model, extra.peers);
  const alive = (child: Child): boolean => child.process.exitCode === null && child.process.signalCode === null;
  const servers = [server, ...(extra.peers ?? [])];
  const load = await runLoad({
    ...options,
    stop: () => !servers.every(alive) || (extra.model !== undefined && !alive(extra.model)),
    warmupMs: settings.warmupSeconds * 1000,
    durationMs: settings.seconds * 1000,
    maxRequests: settings.maxRequests,
    onWindowStart: () => window.start(),
    onWindowEnd: () => window.end(),
  });
  if (!alive(server)) throw new Error(`${server.name} exited during ${id}\n--- its output ---\n${server.tail()}`);
  if (extra.model && !alive(extra.model)) throw new Error(`${extra.model.name} exited during ${id}`);
  const result: ScenarioResult = {
    id,
    backend,
    label,
    load,
    serverCpuPerReqMs: load.completed > 0 ? window.serverMs / load.completed : NaN,
    serverCpuPct: (window.serverMs / window.wallMs) * 100,
    loadgenCpuPct: (window.selfMs / window.wallMs) * 100,
    otherCpuPct: window.otherPct,
    ...(extra.model ? { modelCpuPct: (window.modelMs / window.wallMs) * 100 } : {}),
    notes: extra.notes ?? [],
  };
  results.push(result);
  progress(
    `${id}: ${load.rps.toFixed(0)} req/s, p50 ${load.p50Ms.toFixed(2)} ms, p99 ${load.p99Ms.toFixed(2)} ms, ` +
      `${load.non2xx} non-2xx, ${load.errors} errors`,
  );
  return result;
}

interface Gateway {
  child: Child;
  url: string;
}

/** The storage block of a gateway on `backend` (PostgreSQL: the run's own fresh database). */
function storageOf(backend: Backend, pgDatabaseUrl: string | undefined): Record<string, unknown> {
  return backend === 'sqlite' ? { driver: 'sqlite' } : { driver: 'postgres', url: pgDatabaseUrl };
}

async function startGateway(
  dir: string,
  name: string,
  storage: Record<string, unknown>,
  provider: Record<string, unknown>,
  extra: Record<string, unknown> = {},
  /** More flags of `node` (e.g. `--inspect` for (p)'s profile). */
  nodeArgs: string[] = [],
): Promise<Gateway> {
  mkdirSync(dir, { recursive: true });
  const config = {
    data_dir: join(dir, 'data'),
    gateway: { host: '127.0.0.1', port: 0, auth: { api_tokens: [TOKEN], admin_tokens: [ADMIN_TOKEN] } },
    security: {
      rate_limits: { read: HIGH_LIMIT, write: HIGH_LIMIT, analytics: HIGH_LIMIT, lifecycle: HIGH_LIMIT },
    },
    storage,
    provider,
    logs: { level: 'warning' },
    ...extra,
  };
  const configPath = join(dir, 'gatehouse.yaml');
  // JSON is YAML.
  writeFileSync(configPath, JSON.stringify(config, null, 2));
  const child = spawnGateway(['--config', configPath], {
    name,
    cwd: dir,
    nodeArgs: [...(settings.cpuProfDir ? ['--cpu-prof', `--cpu-prof-dir=${settings.cpuProfDir}`] : []), ...nodeArgs],
    startTimeoutMs: 30_000,
    // stdin stays open like the other children's; the output is kept only as a tail for error reports.
    stdin: 'pipe',
    keepLines: 0,
  });
  const url = await child.ready.catch((err: Error) => {
    throw new Error(`${err.message}\n--- gateway output ---\n${child.tail()}`);
  });
  await waitForHealth(url);
  progress(`${name} on ${url} (pid ${child.pid})`);
  return { child, url };
}

async function startBenchServer(name: string, file: string): Promise<{ child: Child; url: string }> {
  // stdin stays open: our own small servers exit when it closes.
  const child = spawnBenchServer(name, file);
  const url = await child.ready.catch((err: Error) => {
    throw new Error(`${err.message}\n--- ${name} output ---\n${child.tail()}`);
  });
  return { child, url };
}

/** A single request outside the load generator (set-up and polling), with a timeout. */
async function call(
  url: string,
  method: 'GET' | 'POST',
  body?: Buffer,
  headers: Record<string, string> = {},
): Promise<{ status: number; json: Record<string, unknown> }> {
  const response = await fetch(url, {
    method,
    headers: { ...authHeaders, ...(body ? { 'content-type': 'application/json' } : {}), ...headers },
    ...(body ? { body } : {}),
    signal: AbortSignal.timeout(30_000),
  });
  const text = await response.text();
  let json: Record<string, unknown> = {};
  try {
    json = JSON.parse(text) as Record<string, unknown>;
  } catch {
    json = { raw: text.slice(0, 300) };
  }
  return { status: response.status, json };
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Waits until the turns queued behind the given event ids have ended (each
 * session runs FIFO, so the last one accepted per session stands for the rest),
 * then until the gateway's CPU settles. Bounded in time. Returns seconds waited
 * and how many of the watched turns did not complete.
 */
async function drain(gateway: Gateway, lastPerSession: Iterable<string>): Promise<{ seconds: number; failed: number }> {
  const t0 = performance.now();
  const deadline = t0 + 300_000;
  const pending = new Set(lastPerSession);
  let failed = 0;
  while (pending.size > 0) {
    if (performance.now() > deadline) throw new Error(`backlog did not drain in 300 s (${pending.size} sessions busy)`);
    for (const eventId of [...pending]) {
      const { status, json } = await call(`${gateway.url}/api/v1/turns/${eventId}`, 'GET', undefined, {
        'x-api-token': ADMIN_TOKEN,
      });
      if (status !== 200) throw new Error(`GET /turns/${eventId} → HTTP ${status}: ${JSON.stringify(json)}`);
      if (json.status === 'accepted' || json.status === 'running') break;
      pending.delete(eventId);
      if (json.status !== 'completed') failed++;
    }
    if (pending.size > 0) await sleep(100);
  }
  await settle(gateway.child);
  return { seconds: (performance.now() - t0) / 1000, failed };
}

/** Waits until the gateway is idle: under 5% of a core over 300 ms (at most 10 s). */
async function settle(child: Child): Promise<void> {
  const idleDeadline = performance.now() + 10_000;
  for (;;) {
    const before = cpuMs(child.pid);
    await sleep(300);
    if (cpuMs(child.pid) - before <= 15 || performance.now() > idleDeadline) break;
  }
}

function eventIdOf(body: string): string | undefined {
  try {
    const parsed = JSON.parse(body) as { event_id?: unknown };
    return typeof parsed.event_id === 'string' ? parsed.event_id : undefined;
  } catch {
    return undefined;
  }
}

const fmt = (value: number, digits: number): string => (Number.isFinite(value) ? value.toFixed(digits) : '—');

function judge(
  id: string,
  backend: Backend | 'none',
  label: string,
  value: number,
  unit: string,
  op?: TargetOp,
  target?: number,
): void {
  record({
    id,
    backend,
    label,
    value,
    unit,
    ...(op !== undefined && target !== undefined ? { target: { op, value: target } } : {}),
  });
}

/** A fresh PostgreSQL database for one run (dropped afterwards), or the reason there is none. */
async function freshDatabase(): Promise<{ url: string; drop(): Promise<void> } | { skipped: string }> {
  const name = `gatehouse_bench_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: settings.pgUrl, connectionTimeoutMillis: 3_000 });
  admin.on('error', () => undefined);
  try {
    await admin.connect();
    await admin.query(`create database ${name}`);
  } catch (err) {
    return { skipped: `PostgreSQL at ${settings.pgUrl} unavailable: ${(err as Error).message}` };
  } finally {
    await admin.end().catch(() => undefined);
  }
  const url = new URL(settings.pgUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const client = new pg.Client({ connectionString: settings.pgUrl });
      client.on('error', () => undefined);
      await client.connect();
      try {
        await client.query(`drop database if exists ${name} with (force)`);
      } finally {
        await client.end();
      }
    },
  };
}

/** The phases and end-to-end latency of sequential waited turns, with the gateway's CPU per turn. */
async function singleUser(
  id: string,
  backend: Backend,
  label: string,
  gateway: Gateway,
  chatPrefix: string,
): Promise<Breakdown> {
  progress(
    `${id} ${label} [${backend}]: ${settings.singleUserWarmup} requests (at most 15 s) warm-up, then one request at a time for ${settings.seconds} s…`,
  );
  const window = new Window(gateway.child);
  const bodies = Array.from({ length: settings.sessions }, (_, i) => messageBody(`${chatPrefix}${i}`));
  const run = await sequential({
    url: gateway.url,
    warmup: settings.singleUserWarmup,
    warmupMaxSeconds: 15,
    seconds: settings.seconds,
    maxRequests: settings.maxRequests,
    expectStatus: 200,
    request: (n) => ({
      method: 'POST',
      path: '/api/v1/message?wait=true&timeout_seconds=60',
      headers: authHeaders,
      body: bodies[n % bodies.length]!,
    }),
    check: (answer) => (/"status":"completed"/.test(answer.body) ? undefined : 'turn did not complete'),
    onWindowStart: () => window.start(),
    onWindowEnd: () => window.end(),
  });
  if (run.failures > 0) throw new Error(`${id}: ${run.failures} requests failed; first: ${run.firstFailure}`);
  const phases: Breakdown['phases'] = PHASES.map((name) => ({
    name,
    p50: percentile(run.phases.get(name) ?? [], 50),
    p99: percentile(run.phases.get(name) ?? [], 99),
  }));
  // What the server's phases do not cover: HTTP both ways, routing, parsing, the client itself.
  const total = run.phases.get('total') ?? [];
  const rest = run.latencies.map((ms, i) => ms - (total[i] ?? NaN)).filter((ms) => Number.isFinite(ms));
  phases.push({ name: 'http (client − server)', p50: percentile(rest, 50), p99: percentile(rest, 99) });
  const breakdown: Breakdown = {
    backend,
    label,
    count: run.count,
    e2e: { p50: percentile(run.latencies, 50), p99: percentile(run.latencies, 99) },
    phases,
    cpuPerTurnMs: run.count > 0 ? window.serverMs / run.count : NaN,
  };
  breakdowns.push(breakdown);
  progress(
    `${id}: ${run.count} turns, p50 ${fmt(breakdown.e2e.p50, 2)} ms, p99 ${fmt(breakdown.e2e.p99, 2)} ms, ` +
      `CPU/turn ${fmt(breakdown.cpuPerTurnMs, 2)} ms`,
  );
  return breakdown;
}

/** (f): what the gateway adds between the model's first token and the client's first `delta`, SSE and WebSocket. */
async function firstToken(backend: Backend, gateway: Gateway, model: StreamModel): Promise<void> {
  progress(
    `(f) time to first token [${backend}]: ${settings.streamSamples} streamed replies over SSE, then WebSocket…`,
  );
  const created = await call(
    `${gateway.url}/api/v1/sessions`,
    'POST',
    Buffer.from(JSON.stringify({ channel: 'bench' })),
  );
  const sessionId = created.json.id;
  if (created.status !== 201 || typeof sessionId !== 'string') {
    throw new Error(`POST /sessions → HTTP ${created.status}: ${JSON.stringify(created.json)}`);
  }
  const agent = singleUserAgent();
  const sse: number[] = [];
  try {
    const path = `/api/v1/sessions/${encodeURIComponent(sessionId)}/messages`;
    for (let i = 0; i < settings.streamSamples + 10; i++) {
      const body = Buffer.from(JSON.stringify({ content: `ttft sse ${i}`, role: 'user' }));
      const { firstDeltaAt, events } = await sseFirstDelta(agent, gateway.url, path, authHeaders, body);
      if (!events.includes('done')) throw new Error(`SSE reply without done: ${events.join(',')}`);
      if (i >= 10) sse.push(firstDeltaAt - model.firstTokenAt);
    }
  } finally {
    agent.destroy();
  }
  const chat = await openWsChat(gateway.url, TOKEN, `ttft-${backend}`);
  const ws: number[] = [];
  try {
    for (let i = 0; i < settings.streamSamples + 10; i++) {
      const { firstDeltaAt, status } = await chat.ask(`ttft ws ${i}`);
      if (status !== 'completed') throw new Error(`WebSocket reply ended ${status}`);
      if (i >= 10) ws.push(firstDeltaAt - model.firstTokenAt);
    }
  } finally {
    chat.close();
  }
  for (const [wire, samples] of [
    ['SSE', sse],
    ['WebSocket', ws],
  ] as const) {
    const key = wire === 'SSE' ? 'sse' : 'ws';
    judge(
      `ttft.${key}.added_p50_ms`,
      backend,
      `(f) first token → first delta, ${wire}, p50`,
      percentile(samples, 50),
      'ms',
      '<=',
      targets.firstTokenAddedMs,
    );
    judge(
      `ttft.${key}.added_p99_ms`,
      backend,
      `(f) first token → first delta, ${wire}, p99`,
      percentile(samples, 99),
      'ms',
    );
  }
  progress(
    `(f): added p50 SSE ${fmt(percentile(sse, 50), 2)} ms, WebSocket ${fmt(percentile(ws, 50), 2)} ms ` +
      `(p99 ${fmt(percentile(sse, 99), 2)} / ${fmt(percentile(ws, 99), 2)} ms)`,
  );
}

/** (g): the gateway's CPU while one slow streamed turn is in flight (a token every 200 ms), a client waiting. */
async function slowTurn(backend: Backend, gateway: Gateway): Promise<void> {
  progress(`(g) one slow turn in flight [${backend}]: 5 s window…`);
  const agent = singleUserAgent();
  const window = new Window(gateway.child);
  try {
    const answer = send(
      agent,
      gateway.url,
      {
        method: 'POST',
        path: '/api/v1/message?wait=true&timeout_seconds=60',
        headers: authHeaders,
        body: messageBody('slow-turn', { text: 'slow please' }),
      },
      60_000,
    );
    await sleep(1_500);
    window.start();
    await sleep(5_000);
    window.end();
    const done = await answer;
    if (done.status !== 200 || !/"status":"completed"/.test(done.body)) {
      throw new Error(`(g) slow turn → HTTP ${done.status}: ${done.body.slice(0, 300)}`);
    }
  } finally {
    agent.destroy();
  }
  const pct = (window.serverMs / window.wallMs) * 100;
  judge(
    'idle.slow_turn.cpu_pct',
    backend,
    '(g) one slow turn in flight, gateway CPU',
    pct,
    '% of a core',
    '<',
    targets.slowTurnCpuPct,
  );
  progress(`(g): ${fmt(pct, 2)} % of a core (${fmt(window.serverMs, 0)} ms over ${fmt(window.wallMs / 1000, 1)} s)`);
}

function printLoadTable(baseline: ScenarioResult | undefined): void {
  const columns = [
    ['scenario', 40, 'left'],
    ['req/s', 8, 'right'],
    ['p50 ms', 8, 'right'],
    ['p99 ms', 8, 'right'],
    ['non-2xx', 8, 'right'],
    ['CPU/req ms', 11, 'right'],
    ['ratio vs baseline', 19, 'right'],
  ] as const;
  const row = (cells: string[]): string =>
    cells
      .map((cell, i) => {
        const [, width, align] = columns[i]!;
        return align === 'left' ? cell.padEnd(width) : cell.padStart(width);
      })
      .join('   ')
      .trimEnd();
  log(row(columns.map(([name]) => name)));
  for (const r of results) {
    const ratio = baseline && (r.id === '(b)' || r.id === '(c)') ? r.load.rps / baseline.load.rps : NaN;
    log(
      row([
        `${r.id} ${r.label}${r.backend === 'none' ? '' : ` [${r.backend}]`}`,
        fmt(r.load.rps, 0),
        fmt(r.load.p50Ms, 2),
        fmt(r.load.p99Ms, 2),
        String(r.load.non2xx),
        fmt(r.serverCpuPerReqMs, 3),
        fmt(ratio, 2),
      ]),
    );
  }
}

function printBreakdowns(): void {
  if (breakdowns.length === 0) return;
  log();
  log('Latency budget of one waited turn, one user (p50 / p99 ms; phases from the gateway’s Server-Timing):');
  const names = breakdowns[0]!.phases.map((p) => p.name);
  const header = ['', ...names, 'end to end', 'CPU/turn'];
  const width = 30;
  log(header.map((cell, i) => (i === 0 ? cell.padEnd(width) : cell.padStart(14))).join(''));
  for (const b of breakdowns) {
    const cells = [
      `${b.label} [${b.backend}]`.padEnd(width),
      ...b.phases.map((p) => `${fmt(p.p50, 2)}/${fmt(p.p99, 1)}`.padStart(14)),
      `${fmt(b.e2e.p50, 2)}/${fmt(b.e2e.p99, 1)}`.padStart(14),
      fmt(b.cpuPerTurnMs, 2).padStart(14),
    ];
    log(cells.join(''));
  }
  log(
    '  accept: the intake commit, durable (the acknowledgement point); queue: waiting for a slot; claim: ' +
      'accepted→running with the user message, durable; provider: context + model call(s); persist: the outcome ' +
      'commit (reply, usage, ledger, idempotency, events), durable; deliver: outcome → answer written.',
  );
}

function printReport(memory: Map<Backend, { idle: number; after: number; peak: number }>): boolean {
  const baseline = results.find((r) => r.id === '(a)');
  log();
  log(
    `Gatehouse bench — ${settings.warmupSeconds} s warm-up + ${settings.seconds} s measured per load scenario ` +
      `(${settings.ackConcurrency} in flight for (a)–(c), ${settings.concurrency} for (d)), ` +
      `${availableParallelism()} CPUs, Node ${process.version}, CLK_TCK ${ticksPerSecond()}`,
  );
  log();
  printLoadTable(baseline);
  printBreakdowns();
  for (const line of ordinaryReport()) log(line);
  log();
  printVerdicts(log);
  log();
  log(`CPU over each measured load window (% of one core; ${availableParallelism() * 100}% = every core):`);
  for (const r of results) {
    const model = r.modelCpuPct !== undefined ? `, fake model ${fmt(r.modelCpuPct, 0)}%` : '';
    log(
      `  ${`${r.id} ${r.label}${r.backend === 'none' ? '' : ` [${r.backend}]`}`.padEnd(44)} server ${fmt(r.serverCpuPct, 0).padStart(3)}%, ` +
        `load generator ${fmt(r.loadgenCpuPct, 0).padStart(3)}%${model}, ` +
        `everything else on the machine ${fmt(r.otherCpuPct, 0).padStart(3)}%`,
    );
  }
  const busiest = Math.max(0, ...results.map((r) => r.otherCpuPct));
  if (busiest > 25) {
    log(
      `  warning: other processes used up to ${fmt(busiest, 0)}% CPU during a window; ` +
        'numbers (and ratios) are noisy — rerun on an idle machine for a fair comparison.',
    );
  }
  for (const [backend, m] of memory) {
    log(
      `gateway RSS [${backend}]: idle after start ${fmt(m.idle, 1)} MiB, after the run ${fmt(m.after, 1)} MiB ` +
        `(peak ${fmt(m.peak, 1)} MiB)`,
    );
  }
  const notes = [...results.flatMap((r) => r.notes.map((note) => `${r.id} [${r.backend}] ${note}`)), ...lines];
  if (notes.length > 0) {
    log();
    log('notes:');
    for (const note of notes) log(`  ${note}`);
  }
  log();
  let broken = false;
  for (const r of results) {
    const statuses = Object.entries(r.load.statuses)
      .map(([status, count]) => `${status}×${count}`)
      .join(' ');
    const share = r.load.issued > 0 ? r.load.errors / r.load.issued : 0;
    log(
      `${r.id} [${r.backend}]: ${r.load.issued} requests issued, ${r.load.completed} in the window; ` +
        `statuses ${statuses || 'none'}; ${r.load.non2xx} non-2xx, ${r.load.errors} errors`,
    );
    if (r.load.firstError) log(`    first error: ${r.load.firstError}`);
    if (share > ERROR_BUDGET || r.load.completed === 0) {
      broken = true;
      log(`    BROKEN: ${(share * 100).toFixed(2)}% of requests failed (budget ${ERROR_BUDGET * 100}%)`);
    }
  }
  return !broken;
}

/** The load of full turns ((d), (i)): waited messages round the sessions, spread over `gateways`. */
function fullTurns(
  gateways: Gateway[],
  bodies: Buffer[],
): Omit<LoadOptions, 'warmupMs' | 'durationMs' | 'maxRequests' | 'onWindowStart' | 'onWindowEnd'> {
  return {
    url: gateways[0]!.url,
    alsoUrls: gateways.slice(1).map((gateway) => gateway.url),
    concurrency: settings.concurrency,
    requestTimeoutMs: 70_000,
    expectStatus: 200,
    request: (n): LoadRequest => ({
      method: 'POST',
      path: '/api/v1/message?wait=true&timeout_seconds=60',
      headers: authHeaders,
      body: bodies[n % bodies.length]!,
    }),
    check: (body) => (/"status":"completed"/.test(body) ? undefined : 'turn did not complete'),
  };
}

/** The load scenarios (b)–(e) against a gateway on the instant fake model (a child process). */
async function loadScenarios(
  backend: Backend,
  gateway: Gateway,
  model: Child,
  baselineRps: number | undefined,
): Promise<void> {
  const runId = Date.now().toString(36);
  const bodies = Array.from({ length: settings.sessions }, (_, i) => messageBody(`c${i}`));

  // (e) one user on the instant fake model: CPU per turn and the phases, before history piles up.
  if (settings.scenarios.has('e')) {
    const single = await singleUser('(e)', backend, 'fake model, c=1', gateway, 'e');
    judge(
      'turn.fake.c1.cpu_ms',
      backend,
      '(e) CPU per turn, fake model, c=1',
      single.cpuPerTurnMs,
      'ms',
      '<=',
      targets.cpuPerTurnC1Ms,
    );
    judge('turn.fake.c1.p50_ms', backend, '(e) waited turn, fake model, c=1, p50', single.e2e.p50, 'ms');
    judge('turn.fake.c1.p99_ms', backend, '(e) waited turn, fake model, c=1, p99', single.e2e.p99, 'ms');
    await settle(gateway.child);
  }

  // (b) keyed acceptance: a new key every request; each accepted message queues a turn.
  if (settings.scenarios.has('b')) {
    const lastPerSession = new Map<number, string>();
    const keyed = await scenario(
      '(b)',
      backend,
      'keyed POST /message 202',
      gateway.child,
      {
        url: gateway.url,
        concurrency: settings.ackConcurrency,
        requestTimeoutMs: 30_000,
        expectStatus: 202,
        request: (n): LoadRequest => ({
          method: 'POST',
          path: '/api/v1/message',
          headers: { ...authHeaders, 'idempotency-key': `b-${runId}-${n}` },
          body: bodies[n % settings.sessions]!,
        }),
        check: (body, n) => {
          const eventId = eventIdOf(body);
          if (!eventId) return 'no event_id in the 202';
          lastPerSession.set(n % settings.sessions, eventId);
          return undefined;
        },
      },
      {
        notes: [
          'every accepted message also runs a full turn (fake model) in the background, competing for the same CPU ' +
            'during the window; its backlog is drained before the next scenario.',
        ],
      },
    );
    judge(
      'ack.keyed.ratio',
      backend,
      '(b) keyed 202 req/s ÷ baseline',
      baselineRps ? keyed.load.rps / baselineRps : NaN,
      'ratio',
      '>=',
      targets.keyedRatio,
    );
    judge('ack.keyed.p99_ms', backend, '(b) keyed 202, p99', keyed.load.p99Ms, 'ms', '<=', targets.keyedP99Ms);
    judge('ack.keyed.rps', backend, '(b) keyed 202 req/s', keyed.load.rps, 'req/s');
    progress(`draining the turns (b) queued [${backend}]…`);
    const drainedB = await drain(gateway, lastPerSession.values());
    keyed.notes.push(
      `${keyed.load.statuses['202'] ?? 0} turns accepted; backlog drained ${fmt(drainedB.seconds, 1)} s after the load ` +
        `stopped${drainedB.failed > 0 ? `; ${drainedB.failed} watched turns did not complete` : ''}.`,
    );
  }

  // (c) keyed replay: a pool of accepted keys, then retries of the same keys and bodies.
  if (settings.scenarios.has('c')) {
    const pool = Array.from({ length: settings.replayPool }, (_, i) => ({
      key: `c-${runId}-${i}`,
      body: bodies[i % settings.sessions]!,
      eventId: '',
    }));
    progress(`(c) submitting the pool of ${pool.length} keyed messages…`);
    const poolLast = new Map<number, string>();
    for (let i = 0; i < pool.length; i += settings.ackConcurrency) {
      await Promise.all(
        pool.slice(i, i + settings.ackConcurrency).map(async (entry, j) => {
          const { status, json } = await call(`${gateway.url}/api/v1/message`, 'POST', entry.body, {
            'idempotency-key': entry.key,
          });
          if (status !== 202 || typeof json.event_id !== 'string') {
            throw new Error(`(c) pool: POST /message → HTTP ${status}: ${JSON.stringify(json)}`);
          }
          entry.eventId = json.event_id;
          poolLast.set((i + j) % settings.sessions, json.event_id);
        }),
      );
    }
    await drain(gateway, poolLast.values());
    const replay = await scenario(
      '(c)',
      backend,
      'keyed replay',
      gateway.child,
      {
        url: gateway.url,
        concurrency: settings.ackConcurrency,
        requestTimeoutMs: 30_000,
        expectStatus: 202,
        request: (n): LoadRequest => {
          const entry = pool[n % pool.length]!;
          return {
            method: 'POST',
            path: '/api/v1/message',
            headers: { ...authHeaders, 'idempotency-key': entry.key },
            body: entry.body,
          };
        },
        check: (body, n) =>
          eventIdOf(body) === pool[n % pool.length]!.eventId ? undefined : 'replay answered another event_id',
      },
      { notes: [`retries of ${pool.length} keys accepted before the window (no new turns).`] },
    );
    judge(
      'ack.replay.ratio',
      backend,
      '(c) keyed replay req/s ÷ baseline',
      baselineRps ? replay.load.rps / baselineRps : NaN,
      'ratio',
      '>=',
      targets.replayRatio,
    );
  }

  // (d) full turns: wait=true, no key, distinct sessions; the fake model answers at once.
  if (settings.scenarios.has('d')) {
    const turnBodies = Array.from({ length: settings.sessions }, (_, i) => messageBody(`d${i}`));
    const full = await scenario(
      '(d)',
      backend,
      'full turns (wait=true)',
      gateway.child,
      fullTurns([gateway], turnBodies),
      {
        model,
        notes: [
          `req/s is turns/s; CPU/req is gateway CPU per turn (/proc/<pid>/stat utime+stime over the window ÷ turns), ` +
            `${settings.sessions} sessions, history grows over the run.`,
        ],
      },
    );
    judge(
      'turn.fake.c32.cpu_ms',
      backend,
      `(d) CPU per turn, fake model, c=${settings.concurrency}`,
      full.serverCpuPerReqMs,
      'ms',
      '<=',
      targets.cpuPerTurnC32Ms,
    );
    judge('turn.fake.c32.rps', backend, `(d) full turns/s, c=${settings.concurrency}`, full.load.rps, 'turns/s');
  }
}

/** True when something listens at `url`'s host and port (within 1 s). */
function reachable(url: string): Promise<boolean> {
  const parsed = new URL(url);
  return new Promise((resolve) => {
    const socket = connect({ host: parsed.hostname, port: Number(parsed.port) || 6379 });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(1_000, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

/**
 * (i) Scale-out: full turns (as (d)) against one gateway, then against two gateways on the same PostgreSQL
 * database and a Redis bus (when Redis answers; otherwise the local bus), requests alternating between them.
 * The ratio is turns/s of two over one, in the same run; CPU per turn sums both gateways.
 */
async function clusterScenario(backend: Backend, dir: string, storage: Record<string, unknown>): Promise<void> {
  const model = await startBenchServer('fake OpenAI server', 'fake-openai.js');
  const provider = { type: 'openai', base_url: `${model.url}/v1`, model: 'bench-model' };
  const bus =
    settings.clusterBus !== 'local' && (await reachable(settings.redisUrl))
      ? { driver: 'redis', url: settings.redisUrl, namespace: `bench_${randomBytes(4).toString('hex')}` }
      : { driver: 'local' };
  const turnBodies = Array.from({ length: settings.sessions }, (_, i) => messageBody(`i${i}`));
  const run = (label: string, gateways: Gateway[]) =>
    scenario('(i)', backend, label, gateways[0]!.child, fullTurns(gateways, turnBodies), {
      model: model.child,
      peers: gateways.slice(1).map((gateway) => gateway.child),
      notes: [
        `bus ${bus.driver}; PostgreSQL over ${/[?&]host=\//.test(settings.pgUrl) ? 'its Unix socket' : 'TCP'}; ` +
          `requests alternate between the gateways; CPU/req sums every gateway's CPU.`,
      ],
    });
  try {
    const one = await startGateway(join(dir, 'cluster-1'), `gateway [${backend}, cluster of 1]`, storage, provider, {
      bus,
    });
    await sleep(500);
    const single = await run('cluster: 1 gateway, full turns', [one]);
    await stopChild(one.child, 15_000);
    const pair: Gateway[] = [];
    for (const name of ['a', 'b']) {
      pair.push(
        await startGateway(
          join(dir, `cluster-2${name}`),
          `gateway [${backend}, cluster of 2: ${name}]`,
          storage,
          provider,
          {
            bus,
          },
        ),
      );
    }
    await sleep(500);
    const double = await run('cluster: 2 gateways, full turns', pair);
    for (const gateway of pair) await stopChild(gateway.child, 15_000);
    judge('cluster.one.rps', backend, '(i) 1 gateway, full turns/s', single.load.rps, 'turns/s');
    judge('cluster.two.rps', backend, '(i) 2 gateways, full turns/s', double.load.rps, 'turns/s');
    judge('cluster.one.cpu_ms', backend, '(i) 1 gateway, CPU per turn', single.serverCpuPerReqMs, 'ms');
    judge('cluster.two.cpu_ms', backend, '(i) 2 gateways, CPU per turn (both)', double.serverCpuPerReqMs, 'ms');
    judge(
      'cluster.ratio',
      backend,
      '(i) 2 gateways ÷ 1, turns/s',
      double.load.rps / single.load.rps,
      '×',
      '>=',
      targets.clusterRatio,
    );
  } finally {
    await stopChild(model.child, 5_000);
  }
}

/** Every scenario on one store: three gateways one after the other, sharing the store. */
/**
 * (j) tracing (ADR 0039): CPU per turn of one user on the fake model with tracing off, then with tracing on
 * exporting every turn's spans to a local OTLP/HTTP receiver, in the same run; the difference is what tracing
 * costs a turn.
 */
async function tracingScenario(backend: Backend, dir: string, storage: Record<string, unknown>): Promise<void> {
  const model = await startBenchServer('fake OpenAI server', 'fake-openai.js');
  const sink = await startOtlpSink();
  const provider = { type: 'openai', base_url: `${model.url}/v1`, model: 'bench-model' };
  const cpu: Record<'off' | 'on', number> = { off: NaN, on: NaN };
  try {
    for (const mode of ['off', 'on'] as const) {
      const tracing = mode === 'on' ? { enabled: true, endpoint: sink.url } : { enabled: false };
      const gateway = await startGateway(
        join(dir, `tracing-${mode}`),
        `gateway [${backend}, tracing ${mode}]`,
        storage,
        provider,
        {
          tracing,
        },
      );
      const single = await singleUser('(j)', backend, `tracing ${mode}, fake model, c=1`, gateway, `j${mode}`);
      cpu[mode] = single.cpuPerTurnMs;
      judge(
        `turn.tracing.${mode}.cpu_ms`,
        backend,
        `(j) CPU per turn, tracing ${mode}, c=1`,
        single.cpuPerTurnMs,
        'ms',
      );
      // Graceful: the last spans are flushed before it exits.
      await stopChild(gateway.child, 15_000);
      if (mode === 'off' && sink.exports > 0) throw new Error(`(j): tracing off, yet ${sink.exports} exports arrived`);
    }
  } finally {
    await sink.close();
    await stopChild(model.child, 5_000);
  }
  if (sink.spans === 0) throw new Error('(j): tracing on, yet no span arrived');
  judge('turn.tracing.added_cpu_ms', backend, '(j) CPU per turn added by tracing', cpu.on - cpu.off, 'ms');
  judge('turn.tracing.spans', backend, '(j) spans received with tracing on', sink.spans, 'spans');
  progress(
    `(j): CPU/turn off ${fmt(cpu.off, 3)} ms, on ${fmt(cpu.on, 3)} ms; ${sink.spans} spans in ${sink.exports} exports`,
  );
}

async function runBackend(
  backend: Backend,
  tmp: string,
  baselineRps: number | undefined,
  memory: Map<Backend, { idle: number; after: number; peak: number }>,
): Promise<void> {
  let pgDatabase: { url: string; drop(): Promise<void> } | undefined;
  if (backend === 'postgres') {
    const fresh = await freshDatabase();
    if ('skipped' in fresh) {
      lines.push(`[postgres] skipped: ${fresh.skipped}`);
      progress(fresh.skipped);
      return;
    }
    pgDatabase = fresh;
  }
  try {
    const storage = storageOf(backend, pgDatabase?.url);
    const dir = join(tmp, backend);

    if (['b', 'c', 'd', 'e'].some((id) => settings.scenarios.has(id))) {
      const model = await startBenchServer('fake OpenAI server', 'fake-openai.js');
      const gateway = await startGateway(
        join(dir, 'fake'),
        `gateway [${backend}, fake model]`,
        storage,
        {
          type: 'openai',
          base_url: `${model.url}/v1`,
          model: 'bench-model',
        },
        { agent: { max_queued_turns: MAX_QUEUED_TURNS } },
      );
      await sleep(500);
      const idleRss = memoryMiB(gateway.child.pid, 'VmRSS');
      await loadScenarios(backend, gateway, model.child, baselineRps);
      memory.set(backend, {
        idle: idleRss,
        after: memoryMiB(gateway.child.pid, 'VmRSS'),
        peak: memoryMiB(gateway.child.pid, 'VmHWM'),
      });
      // Graceful, so a --cpu-prof profile gets written.
      await stopChild(gateway.child, 15_000);
      await stopChild(model.child, 5_000);
    }

    if (settings.scenarios.has('h')) {
      const gateway = await startGateway(join(dir, 'echo'), `gateway [${backend}, echo]`, storage, { type: 'echo' });
      const single = await singleUser('(h)', backend, 'echo, c=1', gateway, 'h');
      judge(
        'turn.echo.c1.p50_ms',
        backend,
        '(h) waited echo turn, c=1, p50',
        single.e2e.p50,
        'ms',
        '<=',
        targets.echoP50Ms,
      );
      judge(
        'turn.echo.c1.p99_ms',
        backend,
        '(h) waited echo turn, c=1, p99',
        single.e2e.p99,
        'ms',
        '<=',
        targets.echoP99Ms,
      );
      judge('turn.echo.c1.cpu_ms', backend, '(h) CPU per turn, echo, c=1', single.cpuPerTurnMs, 'ms');
      for (const phase of single.phases) {
        judge(
          `turn.echo.c1.phase.${phase.name.split(' ')[0]}.p50_ms`,
          backend,
          `(h) phase ${phase.name}, p50`,
          phase.p50,
          'ms',
        );
      }
      await stopChild(gateway.child, 15_000);
    }

    if (settings.scenarios.has('j')) await tracingScenario(backend, dir, storage);

    if (settings.scenarios.has('i')) {
      if (backend === 'postgres') await clusterScenario(backend, dir, storage);
      else lines.push('[sqlite] (i) cluster: skipped (one process per SQLite database; several share PostgreSQL)');
    }

    if (settings.scenarios.has('p')) {
      await ordinaryScenario({
        backend,
        dir: join(dir, 'ordinary'),
        warmupSeconds: settings.warmupSeconds,
        redisUrl: settings.redisUrl,
        apiToken: TOKEN,
        metricsToken: ADMIN_TOKEN,
        startModel: () => startBenchServer('fake OpenAI server', 'fake-openai.js'),
        startGateway: (gatewayDir, name, provider, extra, nodeArgs) =>
          startGateway(gatewayDir, name, storage, provider, extra, nodeArgs),
        reachable,
        settle,
        progress,
      });
    }

    if (['k', 'l', 'm', 'n'].some((id) => settings.scenarios.has(id))) {
      await memoryScenarios({
        backend,
        dir: join(dir, 'memory'),
        storage,
        seconds: settings.seconds,
        warmupSeconds: settings.warmupSeconds,
        scenarios: settings.scenarios,
        progress,
        note: (line) => lines.push(line),
      });
    }

    if (settings.scenarios.has('f') || settings.scenarios.has('g')) {
      const model = await startStreamModel();
      try {
        const gateway = await startGateway(join(dir, 'stream'), `gateway [${backend}, streaming model]`, storage, {
          type: 'openai',
          base_url: `${model.origin}/v1`,
          model: 'bench-model',
        });
        if (settings.scenarios.has('f')) await firstToken(backend, gateway, model);
        if (settings.scenarios.has('g')) {
          await settle(gateway.child);
          await slowTurn(backend, gateway);
        }
        await stopChild(gateway.child, 15_000);
      } finally {
        await model.close();
      }
    }
  } finally {
    await pgDatabase?.drop().catch((err: unknown) => progress(`could not drop the bench database: ${String(err)}`));
  }
}

async function main(): Promise<number> {
  const startedAt = new Date();
  const jsonFile = jsonTarget(process.argv.slice(2));
  const tmp = mkdtempSync(join(tmpdir(), 'gatehouse-bench-'));
  const cleanupAndExit = (code: number): void => {
    killAllNow();
    rmSync(tmp, { recursive: true, force: true });
    process.exit(code);
  };
  process.once('SIGINT', () => cleanupAndExit(130));
  process.once('SIGTERM', () => cleanupAndExit(143));
  process.once('exit', killAllNow);
  const crash = (err: unknown): void => {
    console.error(`bench crashed: ${(err as Error).stack ?? String(err)}`);
    cleanupAndExit(1);
  };
  process.once('uncaughtException', crash);
  process.once('unhandledRejection', crash);

  const memory = new Map<Backend, { idle: number; after: number; peak: number }>();
  const finish = (ok: boolean): number => {
    const json = report(startedAt, {
      ...settings,
      scenarios: [...settings.scenarios],
      pgUrl: undefined,
    });
    // Under `npm run bench` the search bench runs next and writes the file `--json` names (bench/README.md).
    if (process.env.npm_lifecycle_event === 'bench') writeJson(handoffPath(), json);
    if (jsonFile) {
      writeJson(jsonFile, json);
      log(`figures written to ${jsonFile} (${allFigures().length} figures)`);
    }
    return ok ? 0 : 1;
  };
  try {
    let baselineRps: number | undefined;
    // (a) the baseline, alone on the machine.
    if (settings.scenarios.has('a')) {
      const hello = await startBenchServer('baseline server', 'hello-server.js');
      const baselineBodies = Array.from({ length: settings.sessions }, (_, i) => messageBody(`c${i}`));
      const baseline = await scenario('(a)', 'none', 'node:http baseline', hello.child, {
        url: hello.url,
        concurrency: settings.ackConcurrency,
        requestTimeoutMs: 30_000,
        expectStatus: 200,
        request: (n): LoadRequest => ({
          method: 'POST',
          path: '/api/v1/message',
          headers: { ...authHeaders, 'idempotency-key': `a-${n}` },
          body: baselineBodies[n % settings.sessions]!,
        }),
      });
      baselineRps = baseline.load.rps;
      judge('baseline.rps', 'none', '(a) node:http baseline req/s', baseline.load.rps, 'req/s');
      await stopChild(hello.child, 5_000);
    }
    for (const backend of settings.backends) await runBackend(backend, tmp, baselineRps, memory);
    // (o) once: its gateway keeps its state in a SQLite file of its own.
    if (settings.scenarios.has('o')) await webSocketClientsScenario(progress, (line) => lines.push(line));
  } catch (err) {
    printReport(memory);
    console.error(`\nbench failed: ${(err as Error).stack ?? String(err)}`);
    finish(false);
    return 1;
  } finally {
    await stopAll(5_000);
    rmSync(tmp, { recursive: true, force: true });
  }
  return finish(printReport(memory));
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    console.error(`bench failed: ${(err as Error).stack ?? String(err)}`);
    killAllNow();
    process.exitCode = 1;
  },
);
