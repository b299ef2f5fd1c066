import http from 'node:http';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { SourceMap } from 'node:module';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { cdpSession, envNumber, type CdpSession } from './common.js';
import { recordFigure, type TargetOp } from './figures.js';
import { runLoad } from './load.js';
import { percentile, send } from './probes.js';
import { cpuMs, machineBusyMs, runMs, threadCpuMs } from './proc-stats.js';
import { freePort } from './pressure.js';
import { stopChild, type Child } from './processes.js';

/**
 * (p) ordinary load (bench/README.md): what a turn costs when the gateway is not saturated. Waited turns
 * (`POST /message?wait=true`, the instant fake model) are sent open loop at fixed rates — each send time
 * computed from the start, never waiting for a reply — and the gateway's CPU over a window (/proc, every
 * thread) is divided by the turns completed in it. Two variants: a new session every turn (`fresh`) and a few
 * sessions reused round-robin (`same`). Per turn, from the gateway's `/metrics`: commits, statements, bus
 * messages and HTTP requests; and, from a V8 CPU profile of a second window at the same rate (profiling
 * perturbs the CPU figure, so the unprofiled window gives the ms and the profiled one the shares), the main
 * thread's CPU by category. On PostgreSQL, also one gateway against two on the same database and bus (Redis,
 * NATS): the two's summed CPU per turn over the one's.
 */

/** The knobs of (p) (bench/README.md). */
export const ordinarySettings = {
  rates: rateList('BENCH_ORDINARY_RATES', [30, 60, 120]),
  seconds: envNumber('BENCH_ORDINARY_SECONDS', 10, false),
  sessions: envNumber('BENCH_ORDINARY_SESSIONS', 8, true),
  /**
   * Closed-loop turns before a gateway's first window (at most `WARMUP_MAX_MS`): a gateway that has run for
   * hours has long finished compiling its hot path; after 2 000 turns V8 still compiles in the windows.
   */
  warmupTurns: envNumber('BENCH_ORDINARY_WARMUP_TURNS', 10_000, true),
  profile: process.env.BENCH_ORDINARY_PROFILE?.trim() !== '0',
  clusterRates: rateList('BENCH_ORDINARY_CLUSTER_RATES', [60, 120]),
  natsUrl: process.env.BENCH_NATS_URL?.trim() || 'nats://127.0.0.1:4222',
  /** Windows measured again (at most) while the rest of the machine is busier than `BUSY_PCT`; the quietest counts. */
  retries: envCount('BENCH_ORDINARY_RETRIES', 2),
};

/** The targets of (p): CPU per turn at 60 turns/s on fresh sessions, and what a second gateway adds. */
const targets = {
  freshR60CpuMs: { sqlite: 1.5, postgres: 2.5 } as Record<string, number>,
  clusterRatio: 1.15,
};

/** Busy CPU of the rest of the machine (% of one core) above which a window is measured again. */
const BUSY_PCT = 25;
/** The longest closed-loop warm-up of a gateway, ms. */
const WARMUP_MAX_MS = 45_000;
/** Seconds of the idle reading before the first window. */
const IDLE_SECONDS = 5;
/** V8 profiler sampling interval, µs (its default is 1000: too few samples for a turn of a millisecond or two). */
const SAMPLING_INTERVAL_US = 250;
const ERROR_BUDGET = 0.01;

/** What (p) needs from the bench (run.ts). */
export interface OrdinaryContext {
  backend: 'sqlite' | 'postgres';
  /** A fresh directory of this backend's run. */
  dir: string;
  warmupSeconds: number;
  redisUrl: string;
  apiToken: string;
  /** A token that may read `/metrics`. */
  metricsToken: string;
  startModel(): Promise<{ child: Child; url: string }>;
  /** Starts a gateway on this backend's store (run.ts's `startGateway`), with more `node` flags. */
  startGateway(
    dir: string,
    name: string,
    provider: Record<string, unknown>,
    extra: Record<string, unknown>,
    nodeArgs: string[],
  ): Promise<{ child: Child; url: string }>;
  reachable(url: string): Promise<boolean>;
  /** Waits until a gateway is idle. */
  settle(child: Child): Promise<void>;
  progress(line: string): void;
}

type Variant = 'fresh' | 'same';
/** Where a profile sample's CPU goes: the first frame from its leaf up that matches one (see `frameCategory`). */
const CATEGORIES = ['gc', 'statements', 'bus', 'timers', 'http', 'model', 'other'] as const;
type Category = (typeof CATEGORIES)[number];

interface Gateway {
  child: Child;
  url: string;
}

/** One measured rate: the unprofiled window's figures and, when profiled, the main thread's shares. */
interface RateResult {
  label: string;
  rate: number;
  turnsPerS: number;
  completed: number;
  failed: number;
  p50Ms: number;
  p99Ms: number;
  cpuMsPerTurn: number;
  mainMsPerTurn: number;
  /** CPU per turn of the database and bus servers of the machine (PostgreSQL, Redis, NATS), ms. */
  serversMsPerTurn: number;
  /** The same by server (`postgres`, `redis-server`, `nats-server`), ms. */
  serverMsPerTurn: Record<string, number>;
  /** The first gateway's CPU per turn by thread, in creation order, ms. */
  threads: string;
  /** The rest of the machine's busy CPU (not the gateways, the servers, the model or the bench), % of one core. */
  otherLoadPct: number;
  perTurn: { commits: number; statements: number; bus: number; http: number };
  /** ms per turn by category (main thread: share × its ms per turn; `offthread`: the other threads). */
  categories?: Record<Category | 'offthread', number>;
}

const tables = new Map<string, string[]>();

const fmt = (value: number, digits: number): string => (Number.isFinite(value) ? value.toFixed(digits) : '—');
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** A count ≥ 0 from the environment (`fallback` when unset or blank). */
function envCount(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw.trim() === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 0)
    throw new Error(`${name} must be an integer ≥ 0, not ${JSON.stringify(raw)}`);
  return value;
}

/** `BENCH_ORDINARY_RATES=30,60`: positive rates (turns/s); `none`: no rate. */
function rateList(name: string, fallback: number[]): number[] {
  const raw = process.env[name];
  if (raw === undefined || raw.trim() === '') return fallback;
  if (raw.trim() === 'none') return [];
  const rates = raw.split(',').map((part) => Number(part.trim()));
  if (rates.length === 0 || rates.some((rate) => !Number.isFinite(rate) || rate <= 0)) {
    throw new Error(`${name} must list positive turns/s, comma-separated, not ${JSON.stringify(raw)}`);
  }
  return rates;
}

/** The printed tables of (p), one per store (for run.ts's report). */
export function ordinaryReport(): string[] {
  return [...tables.values()].flatMap((lines) => ['', ...lines]);
}

// ---------------------------------------------------------------------------------------------------------------
// Open-loop load

/**
 * Waited turns sent at `rate` per second from `start()`: turn n at start + n/rate, over a keep-alive agent,
 * alternating between `urls`; a late timer sends what is due at once (the schedule does not slip).
 */
class OpenLoop {
  private readonly agent = new http.Agent({ keepAlive: true, maxSockets: 512, maxFreeSockets: 512 });
  private t0 = 0;
  private sent = 0;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  inFlight = 0;
  completed = 0;
  failed = 0;
  firstError: string | undefined;
  /** Latencies of the answers since the last `mark()`, ms. */
  private latencies: number[] = [];

  constructor(
    private readonly urls: string[],
    private readonly rate: number,
    private readonly body: (n: number) => Buffer,
    private readonly token: string,
  ) {}

  start(): void {
    this.t0 = performance.now();
    this.tick();
  }

  private readonly tick = (): void => {
    if (this.stopped) return;
    const due = Math.floor(((performance.now() - this.t0) * this.rate) / 1000) + 1;
    while (this.sent < due) this.fire(this.sent++);
    const next = this.t0 + (this.sent * 1000) / this.rate;
    this.timer = setTimeout(this.tick, Math.max(0, next - performance.now()));
  };

  private fire(n: number): void {
    this.inFlight++;
    const t0 = performance.now();
    const spec = {
      method: 'POST' as const,
      path: '/api/v1/message?wait=true&timeout_seconds=60',
      headers: { 'x-api-token': this.token },
      body: this.body(n),
    };
    send(this.agent, this.urls[n % this.urls.length]!, spec, 70_000).then(
      (answer) => {
        this.inFlight--;
        if (answer.status === 200 && /"status":"completed"/.test(answer.body)) {
          this.completed++;
          this.latencies.push(performance.now() - t0);
        } else this.fail(`HTTP ${answer.status}: ${answer.body.slice(0, 300)}`);
      },
      (err: Error) => {
        this.inFlight--;
        this.fail(err.message);
      },
    );
  }

  private fail(message: string): void {
    this.failed++;
    this.firstError ??= `POST /api/v1/message?wait=true → ${message}`;
  }

  /** Counts so far, and the latencies since the last mark (then forgotten). */
  mark(): { completed: number; failed: number; latencies: number[] } {
    const latencies = this.latencies;
    this.latencies = [];
    return { completed: this.completed, failed: this.failed, latencies };
  }

  /** Stops sending, then waits for the answers still due (at most 75 s). */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    const deadline = performance.now() + 75_000;
    while (this.inFlight > 0 && performance.now() < deadline) await sleep(20);
    this.agent.destroy();
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Readings: CPU from /proc, counts from /metrics

/** The counts of `/metrics` (Prometheus text) a turn's cost is broken down by. */
interface Counts {
  turns: number;
  commits: number;
  statements: number;
  bus: number;
  http: number;
}

/** The sum of every series of `name` (whose labels `keep` accepts) in Prometheus text. */
function metricSum(text: string, name: string, keep: (labels: string) => boolean = () => true): number {
  let sum = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(name)) continue;
    const rest = line.slice(name.length);
    if (rest[0] !== ' ' && rest[0] !== '{') continue;
    const labels = rest[0] === '{' ? rest.slice(1, rest.indexOf('}')) : '';
    if (keep(labels)) sum += Number(rest.slice(rest.lastIndexOf(' ') + 1));
  }
  return sum;
}

async function scrape(gateway: Gateway, token: string): Promise<Counts> {
  const response = await fetch(`${gateway.url}/metrics`, {
    headers: { 'x-api-token': token },
    signal: AbortSignal.timeout(10_000),
  });
  const text = await response.text();
  if (response.status !== 200) throw new Error(`GET /metrics → HTTP ${response.status}: ${text.slice(0, 300)}`);
  return {
    turns: metricSum(text, 'gatehouse_turn_duration_seconds_count', (labels) => labels.includes('"completed"')),
    commits: metricSum(text, 'gatehouse_store_commit_seconds_count'),
    statements: metricSum(text, 'gatehouse_store_statements_total'),
    bus: metricSum(text, 'gatehouse_bus_messages_total'),
    // The scrapes themselves are not the turns' requests.
    http: metricSum(text, 'gatehouse_http_requests_total', (labels) => !labels.includes('route="/metrics"')),
  };
}

async function scrapeAll(gateways: Gateway[], token: string): Promise<Counts> {
  const each = await Promise.all(gateways.map((gateway) => scrape(gateway, token)));
  return each.reduce((sum, counts) => ({
    turns: sum.turns + counts.turns,
    commits: sum.commits + counts.commits,
    statements: sum.statements + counts.statements,
    bus: sum.bus + counts.bus,
    http: sum.http + counts.http,
  }));
}

/** The servers a turn also costs CPU in (its database, its bus), by process name. */
const SERVER_NAMES = new Set(['postgres', 'redis-server', 'nats-server']);

/** The processes of the servers (`SERVER_NAMES`) running now: pid → name. */
function serverPids(): Map<number, string> {
  const pids = new Map<number, string>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const name = readFileSync(`/proc/${entry}/comm`, 'utf8').trim();
      if (SERVER_NAMES.has(name)) pids.set(Number(entry), name);
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

/** CPU of each thread of `pid` so far, ms, by thread id. */
function threadsMs(pid: number): Map<number, number> {
  const out = new Map<number, number>();
  let tids: string[] = [];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return out;
  }
  for (const tid of tids) out.set(Number(tid), threadCpuMs(pid, Number(tid)));
  return out;
}

/** A reading of CPU so far, ms. */
interface CpuReading {
  /** The gateways, every thread. */
  all: number;
  /** The gateways' main threads. */
  main: number;
  /** The first gateway's threads, by id. */
  threads: Map<number, number>;
  /** The database and bus servers (`SERVER_NAMES`; all of their processes on the machine), by pid. */
  servers: Map<number, number>;
  model: number;
  self: number;
  machine: number;
}

function cpuNow(gateways: Gateway[], model: Child, servers: Map<number, string>): CpuReading {
  const self = process.cpuUsage();
  return {
    all: gateways.reduce((sum, g) => sum + cpuMs(g.child.pid), 0),
    main: gateways.reduce((sum, g) => sum + threadCpuMs(g.child.pid, g.child.pid), 0),
    threads: threadsMs(gateways[0]!.child.pid),
    servers: new Map([...servers.keys()].map((pid) => [pid, cpuMs(pid)])),
    model: cpuMs(model.pid),
    self: (self.user + self.system) / 1000,
    machine: machineBusyMs(),
  };
}

/**
 * CPU the server processes used between two readings, ms, by server name; a process that ended in between (a
 * PostgreSQL backend of another client) is left out.
 */
function serversDelta(
  before: Map<number, number>,
  after: Map<number, number>,
  names: Map<number, string>,
): Map<string, number> {
  const byName = new Map<string, number>();
  for (const [pid, ms] of after) {
    const was = before.get(pid);
    const name = names.get(pid) ?? 'other';
    if (was !== undefined && Number.isFinite(was) && Number.isFinite(ms)) {
      byName.set(name, (byName.get(name) ?? 0) + ms - was);
    }
  }
  return byName;
}

/**
 * The first gateway's CPU per turn by thread, in the order the threads were made (Node 20 names them all
 * `node`: the main thread first, then V8's platform worker — concurrent GC, compilation — and later libuv's
 * pool — the SQLite WAL's fsync, among others).
 */
function threadLine(before: Map<number, number>, after: Map<number, number>, turns: number): string {
  const tids = [...after.keys()].sort((a, b) => a - b);
  return tids
    .map((tid) => ((after.get(tid) ?? 0) - (before.get(tid) ?? 0)) / turns)
    .map((ms) => ms.toFixed(2))
    .join(' ');
}

/** One window at the loop's rate: CPU over exactly the window, the /metrics counts around it. */
async function measureWindow(
  loop: OpenLoop,
  gateways: Gateway[],
  model: Child,
  seconds: number,
  token: string,
  during?: { start(): Promise<void>; stop(): Promise<void> },
) {
  const counts0 = await scrapeAll(gateways, token);
  await during?.start();
  const servers = serverPids();
  const cpu0 = cpuNow(gateways, model, servers);
  const mark0 = loop.mark();
  const wall0 = performance.now();
  await sleep(seconds * 1000);
  const mark1 = loop.mark();
  const cpu1 = cpuNow(gateways, model, servers);
  const wallMs = performance.now() - wall0;
  await during?.stop();
  const counts1 = await scrapeAll(gateways, token);
  const completed = mark1.completed - mark0.completed;
  const gatewaysMs = cpu1.all - cpu0.all;
  const byServer = serversDelta(cpu0.servers, cpu1.servers, servers);
  const serversMs = [...byServer.values()].reduce((sum, ms) => sum + ms, 0);
  const others = gatewaysMs + serversMs + (cpu1.model - cpu0.model) + (cpu1.self - cpu0.self);
  const turns = counts1.turns - counts0.turns;
  const perTurn = (key: keyof Counts): number => (turns > 0 ? (counts1[key] - counts0[key]) / turns : NaN);
  return {
    completed,
    failed: mark1.failed - mark0.failed,
    latencies: mark1.latencies,
    seconds: wallMs / 1000,
    cpuMsPerTurn: completed > 0 ? gatewaysMs / completed : NaN,
    mainMsPerTurn: completed > 0 ? (cpu1.main - cpu0.main) / completed : NaN,
    serversMsPerTurn: completed > 0 ? serversMs / completed : NaN,
    serverMsPerTurn: Object.fromEntries(
      [...byServer].map(([name, ms]) => [name, completed > 0 ? ms / completed : NaN]),
    ),
    threads: completed > 0 ? threadLine(cpu0.threads, cpu1.threads, completed) : '',
    otherLoadPct: Math.max(0, ((cpu1.machine - cpu0.machine - others) / wallMs) * 100),
    perTurn: {
      commits: perTurn('commits'),
      statements: perTurn('statements'),
      bus: perTurn('bus'),
      http: perTurn('http'),
    },
  };
}

// ---------------------------------------------------------------------------------------------------------------
// The CPU profile

/** A V8 CPU profile (the inspector's `Profiler.stop`). */
interface CpuProfile {
  nodes: Array<{
    id: number;
    callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number };
    children?: number[];
  }>;
  samples: number[];
  timeDeltas: number[];
}

/** The original source of a position in a bundled file (dist/bundle, linked source maps); else the URL itself. */
class SourceResolver {
  private readonly maps = new Map<string, SourceMap | null>();

  source(url: string, line: number, column: number): string {
    if (!url.startsWith('file://') || !url.includes('/dist/bundle/')) return url;
    let map = this.maps.get(url);
    if (map === undefined) {
      const path = `${fileURLToPath(url)}.map`;
      map = existsSync(path) ? new SourceMap(JSON.parse(readFileSync(path, 'utf8')) as never) : null;
      this.maps.set(url, map);
    }
    const entry: { originalSource?: string } | undefined = map?.findEntry(line, column);
    return entry?.originalSource ?? url;
  }
}

const STATEMENTS = [
  /node_modules\/(better-sqlite3|pg|pg-protocol|pg-pool|pg-types|pg-connection-string|kysely)\//,
  /(^|\/)src\/store\//,
  /\.(repo|queries)\.(ts|js)$/,
  // The turn path's statements (ADR 0026, 0032): builder statements one by one, or folded on PostgreSQL.
  /(^|\/)src\/turns\/(turn-path\.(general|folded|pg)|turn-writes)\.(ts|js)$/,
];
const BUS = [
  /node_modules\/(ioredis|@ioredis|redis-parser|redis-errors|denque|cluster-key-slot|@nats-io)\//,
  /(^|\/)src\/events\/(bus-|cluster-bus)/,
];
const MODEL = [/node_modules\/(openai|undici)\//, /(^|\/)src\/runtime\/providers\//, /^node:internal\/deps\/undici/];
/**
 * Sockets and streams: every client's I/O passes through them (PostgreSQL's, the model's, Redis's, the HTTP
 * server's), so they stand for HTTP only when no caller up the stack names the owner.
 */
const TRANSPORT = /^node:(net$|stream$|internal\/streams\/|internal\/stream_base_commons)/;
const HTTP = [
  /^node:(_http_|internal\/http)/,
  /node_modules\/(fastify|@fastify|find-my-way|fast-querystring|secure-json-parse|light-my-request)\//,
  /(^|\/)src\/http\//,
];

/** The category of one frame, or undefined to look at its caller. */
function frameCategory(
  frame: CpuProfile['nodes'][number]['callFrame'],
  resolver: SourceResolver,
): Category | 'idle' | 'transport' | undefined {
  const name = frame.functionName;
  if (name === '(garbage collector)') return 'gc';
  if (name === '(idle)') return 'idle';
  if (name === '(program)') return 'other';
  if ((name === 'listOnTimeout' || name === 'processTimers') && frame.url.includes('timers')) return 'timers';
  if (frame.url === '') return undefined;
  const source = resolver.source(frame.url, frame.lineNumber, frame.columnNumber);
  if (STATEMENTS.some((re) => re.test(source))) return 'statements';
  if (BUS.some((re) => re.test(source))) return 'bus';
  if (MODEL.some((re) => re.test(source))) return 'model';
  if (HTTP.some((re) => re.test(source))) return 'http';
  if (TRANSPORT.test(source)) return 'transport';
  return undefined;
}

/** The main thread's busy time by category, as shares summing to 1 (idle samples left out). */
function profileShares(profile: CpuProfile, resolver: SourceResolver): Record<Category, number> {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const parent = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
  // From a frame up to the root: the first category named (undefined: none), and whether a socket or stream
  // frame was passed (then, with no owner named, the sample is HTTP's).
  const memo = new Map<number, { category: Category | 'idle' | undefined; transport: boolean }>();
  const walk = (id: number): { category: Category | 'idle' | undefined; transport: boolean } => {
    const known = memo.get(id);
    if (known) return known;
    const node = byId.get(id);
    const own = node ? frameCategory(node.callFrame, resolver) : 'other';
    const up = parent.get(id);
    const above = up === undefined ? { category: undefined, transport: false } : walk(up);
    const result =
      own === 'transport'
        ? { category: above.category, transport: true }
        : own !== undefined
          ? { category: own, transport: false }
          : above;
    memo.set(id, result);
    return result;
  };
  const categoryOf = (id: number): Category | 'idle' => {
    const { category, transport } = walk(id);
    return category ?? (transport ? 'http' : 'other');
  };
  const time = Object.fromEntries(CATEGORIES.map((c) => [c, 0])) as Record<Category, number>;
  let busy = 0;
  profile.samples.forEach((id, i) => {
    const category = categoryOf(id);
    if (category === 'idle') return;
    // The time since the previous sample, as DevTools counts it (the sampling interval, give or take).
    const weight = profile.timeDeltas[i] ?? SAMPLING_INTERVAL_US;
    time[category] += weight;
    busy += weight;
  });
  for (const c of CATEGORIES) time[c] = busy > 0 ? time[c] / busy : NaN;
  return time;
}

/** The gateway's inspector (started with `--inspect=127.0.0.1:<port>`). */
async function inspectorAt(port: number): Promise<CdpSession> {
  const response = await fetch(`http://127.0.0.1:${port}/json/list`, { signal: AbortSignal.timeout(5_000) });
  const list = (await response.json()) as Array<{ webSocketDebuggerUrl?: string }>;
  const url = list[0]?.webSocketDebuggerUrl;
  if (!url) throw new Error(`no inspector target on 127.0.0.1:${port}`);
  return cdpSession(url);
}

/** Starts and stops the V8 profiler around a window; `profile` is the last one taken. */
function profiler(cdp: CdpSession): { start(): Promise<void>; stop(): Promise<void>; profile?: CpuProfile } {
  const session: { start(): Promise<void>; stop(): Promise<void>; profile?: CpuProfile } = {
    async start() {
      await cdp.send('Profiler.enable');
      await cdp.send('Profiler.setSamplingInterval', { interval: SAMPLING_INTERVAL_US });
      await cdp.send('Profiler.start');
    },
    async stop() {
      const result = (await cdp.send('Profiler.stop')) as { profile?: CpuProfile } | undefined;
      await cdp.send('Profiler.disable');
      if (!result?.profile) throw new Error('the inspector returned no CPU profile');
      session.profile = result.profile;
    },
  };
  return session;
}

// ---------------------------------------------------------------------------------------------------------------
// The scenario

function messageBody(chat: string): Buffer {
  return Buffer.from(JSON.stringify({ platform: 'bench', user_id: 'u', chat_id: chat, text: 'hi' }));
}

const figure = recordFigure;

function alive(child: Child): boolean {
  return child.process.exitCode === null && child.process.signalCode === null;
}

/** Closed-loop turns until V8 has optimized the turn path (as the single-user probes warm up), fresh and same. */
async function warmUp(ctx: OrdinaryContext, gateways: Gateway[], tag: string): Promise<void> {
  const load = await runLoad({
    url: gateways[0]!.url,
    alsoUrls: gateways.slice(1).map((g) => g.url),
    concurrency: 4,
    warmupMs: 0,
    durationMs: WARMUP_MAX_MS,
    maxRequests: ordinarySettings.warmupTurns,
    requestTimeoutMs: 70_000,
    expectStatus: 200,
    request: (n) => ({
      method: 'POST',
      path: '/api/v1/message?wait=true&timeout_seconds=60',
      headers: { 'x-api-token': ctx.apiToken },
      body: messageBody(n % 2 === 0 ? `pw-${tag}-${n}` : `pw-${tag}-s${n % 16}`),
    }),
    check: (body) => (/"status":"completed"/.test(body) ? undefined : 'turn did not complete'),
  });
  if (load.errors > load.issued * ERROR_BUDGET) {
    throw new Error(`(p) warm-up: ${load.errors} of ${load.issued} turns failed; first: ${load.firstError}`);
  }
}

/** One rate: a warm-up at the rate, the measured window, then (when profiling) the profiled window. */
async function measureRate(
  ctx: OrdinaryContext,
  gateways: Gateway[],
  model: Child,
  label: string,
  rate: number,
  body: (n: number) => Buffer,
  cdp?: CdpSession,
): Promise<RateResult> {
  const { seconds } = ordinarySettings;
  ctx.progress(
    `(p) ${label} at ${rate} turns/s [${ctx.backend}]: ${ctx.warmupSeconds} s warm-up + ${seconds} s` +
      `${cdp ? ` + ${seconds} s profiled` : ''}…`,
  );
  const loop = new OpenLoop(
    gateways.map((g) => g.url),
    rate,
    body,
    ctx.apiToken,
  );
  loop.start();
  let measured: Awaited<ReturnType<typeof measureWindow>>;
  let shares: Record<Category, number> | undefined;
  try {
    await sleep(ctx.warmupSeconds * 1000);
    measured = await measureWindow(loop, gateways, model, seconds, ctx.metricsToken);
    // Other work on the machine inflates CPU per turn (shared caches and cores): a busy window is measured again.
    for (let retry = 1; retry <= ordinarySettings.retries && measured.otherLoadPct > BUSY_PCT; retry++) {
      ctx.progress(`(p) ${label} r${rate}: the rest of the machine was ${fmt(measured.otherLoadPct, 0)}% busy; again…`);
      const again = await measureWindow(loop, gateways, model, seconds, ctx.metricsToken);
      if (again.otherLoadPct < measured.otherLoadPct) measured = again;
    }
    if (cdp) {
      const session = profiler(cdp);
      await measureWindow(loop, gateways, model, seconds, ctx.metricsToken, session);
      shares = profileShares(session.profile!, new SourceResolver());
    }
  } finally {
    await loop.stop();
  }
  for (const gateway of gateways) {
    if (!alive(gateway.child)) {
      throw new Error(`${gateway.child.name} exited during (p)\n--- its output ---\n${gateway.child.tail()}`);
    }
  }
  const sent = loop.completed + loop.failed;
  if (loop.failed > sent * ERROR_BUDGET || measured.completed === 0) {
    throw new Error(
      `(p) ${label} at ${rate} turns/s: ${loop.failed} of ${sent} turns failed (budget ${ERROR_BUDGET * 100}%); ` +
        `first: ${loop.firstError ?? 'none completed in the window'}`,
    );
  }
  const result: RateResult = {
    label,
    rate,
    turnsPerS: measured.completed / measured.seconds,
    completed: measured.completed,
    failed: loop.failed,
    p50Ms: percentile(measured.latencies, 50),
    p99Ms: percentile(measured.latencies, 99),
    cpuMsPerTurn: measured.cpuMsPerTurn,
    mainMsPerTurn: measured.mainMsPerTurn,
    serversMsPerTurn: measured.serversMsPerTurn,
    serverMsPerTurn: measured.serverMsPerTurn,
    threads: measured.threads,
    otherLoadPct: measured.otherLoadPct,
    perTurn: measured.perTurn,
  };
  if (shares) {
    const categories = Object.fromEntries(CATEGORIES.map((c) => [c, shares[c] * measured.mainMsPerTurn])) as Record<
      Category | 'offthread',
      number
    >;
    categories.offthread = measured.cpuMsPerTurn - measured.mainMsPerTurn;
    result.categories = categories;
  }
  ctx.progress(
    `(p) ${label} r${rate}: ${fmt(result.turnsPerS, 1)} turns/s, CPU ${fmt(result.cpuMsPerTurn, 3)} ms/turn ` +
      `(main thread ${fmt(result.mainMsPerTurn, 3)}), p50 ${fmt(result.p50Ms, 2)} ms, ${result.failed} failed, ` +
      `servers ${fmt(result.serversMsPerTurn, 3)} ms/turn, other load ${fmt(result.otherLoadPct, 0)}%; ` +
      `threads ${result.threads}`,
  );
  return result;
}

/** The figures of one measured rate, ids `ordinary.<key>.r<rate>.…`. */
function recordRate(backend: string, key: string, r: RateResult, target?: { op: TargetOp; value: number }): void {
  const id = `ordinary.${key}.r${r.rate}`;
  const what = `(p) ${r.label}, ${r.rate} turns/s`;
  figure(backend, `${id}.cpu_ms_per_turn`, `${what}, CPU per turn`, r.cpuMsPerTurn, 'ms', target);
  figure(backend, `${id}.main_thread_ms_per_turn`, `${what}, main thread CPU per turn`, r.mainMsPerTurn, 'ms');
  figure(backend, `${id}.turns_per_s`, `${what}, turns completed per second`, r.turnsPerS, 'turns/s');
  figure(backend, `${id}.failed`, `${what}, failed turns`, r.failed, 'turns');
  figure(backend, `${id}.p50_ms`, `${what}, p50`, r.p50Ms, 'ms');
  figure(backend, `${id}.p99_ms`, `${what}, p99`, r.p99Ms, 'ms');
  figure(backend, `${id}.commits_per_turn`, `${what}, commits per turn`, r.perTurn.commits, 'commits');
  figure(backend, `${id}.statements_per_turn`, `${what}, statements per turn`, r.perTurn.statements, 'statements');
  figure(backend, `${id}.bus_messages_per_turn`, `${what}, bus messages per turn`, r.perTurn.bus, 'messages');
  figure(backend, `${id}.http_requests_per_turn`, `${what}, HTTP requests per turn`, r.perTurn.http, 'requests');
  figure(
    backend,
    `${id}.servers_ms_per_turn`,
    `${what}, database and bus servers' CPU per turn`,
    r.serversMsPerTurn,
    'ms',
  );
  for (const [name, ms] of Object.entries(r.serverMsPerTurn)) {
    figure(backend, `${id}.server.${name}_ms_per_turn`, `${what}, ${name}'s CPU per turn`, ms, 'ms');
  }
  figure(backend, `${id}.other_load_pct`, `${what}, rest of the machine busy`, r.otherLoadPct, '% of a core');
  for (const [category, ms] of Object.entries(r.categories ?? {})) {
    figure(backend, `${id}.${category}_ms_per_turn`, `${what}, ${category} CPU per turn`, ms, 'ms');
  }
}

function tableLines(title: string, rows: RateResult[]): string[] {
  const head = [
    'variant'.padEnd(24),
    'rate',
    'turns/s',
    'failed',
    'p50 ms',
    'p99 ms',
    'CPU ms/turn',
    'main',
    ...CATEGORIES,
    'offthread',
    'servers',
    'commits',
    'stmts',
    'bus',
    'http',
    'load %',
  ];
  const widths = head.map((cell, i) => (i === 0 ? 24 : Math.max(6, cell.length)));
  const line = (cells: string[]): string =>
    cells.map((cell, i) => (i === 0 ? cell.padEnd(widths[0]!) : cell.padStart(widths[i]!))).join(' ');
  const body = rows.map((r) =>
    line([
      r.label,
      String(r.rate),
      fmt(r.turnsPerS, 1),
      String(r.failed),
      fmt(r.p50Ms, 2),
      fmt(r.p99Ms, 1),
      fmt(r.cpuMsPerTurn, 3),
      fmt(r.mainMsPerTurn, 3),
      ...CATEGORIES.map((c) => fmt(r.categories?.[c] ?? NaN, 3)),
      fmt(r.categories?.offthread ?? NaN, 3),
      fmt(r.serversMsPerTurn, 3),
      fmt(r.perTurn.commits, 2),
      fmt(r.perTurn.statements, 1),
      fmt(r.perTurn.bus, 2),
      fmt(r.perTurn.http, 2),
      fmt(r.otherLoadPct, 0),
    ]),
  );
  const threads = rows.map((r) => `  threads of ${r.label}, r${r.rate} (ms/turn, oldest first): ${r.threads}`);
  return [title, line(head), ...body, ...threads];
}

/** The gateway's CPU while nothing is sent, ms per second (from schedstat: a few ms are below utime's 10 ms ticks). */
async function idleCpu(gateway: Gateway): Promise<number> {
  const before = runMs(gateway.child.pid);
  const t0 = performance.now();
  await sleep(IDLE_SECONDS * 1000);
  return ((runMs(gateway.child.pid) - before) / (performance.now() - t0)) * 1000;
}

/** (p) on one store: fresh and same sessions at each rate, then (PostgreSQL) the cluster ratios. */
export async function ordinaryScenario(ctx: OrdinaryContext): Promise<void> {
  const model = await ctx.startModel();
  const provider = { type: 'openai', base_url: `${model.url}/v1`, model: 'bench-model' };
  const runTag = Date.now().toString(36);
  const rows: RateResult[] = [];
  const notes: string[] = [];
  try {
    const port = ordinarySettings.profile ? await freePort() : 0;
    const nodeArgs = ordinarySettings.profile ? [`--inspect=127.0.0.1:${port}`] : [];
    const gateway = await ctx.startGateway(
      join(ctx.dir, 'ordinary'),
      `gateway [${ctx.backend}, ordinary load]`,
      provider,
      {},
      nodeArgs,
    );
    let cdp: CdpSession | undefined;
    try {
      await warmUp(ctx, [gateway], runTag);
      await ctx.settle(gateway.child);
      const idle = await idleCpu(gateway);
      figure(ctx.backend, 'ordinary.idle.cpu_ms_per_s', '(p) gateway idle, CPU per second', idle, 'ms/s');
      notes.push(
        `idle gateway: ${fmt(idle, 2)} ms CPU per second (${fmt(idle / 10, 2)}% of a core; at 60 turns/s that is ` +
          `${fmt(idle / 60, 3)} ms of each turn's CPU)`,
      );
      if (ordinarySettings.profile) cdp = await inspectorAt(port);
      const bodies: Record<Variant, (n: number) => Buffer> = {
        fresh: (n) => messageBody(`pf-${runTag}-${n}-${Math.random().toString(36).slice(2, 8)}`),
        same: (n) => messageBody(`ps-${runTag}-${n % ordinarySettings.sessions}`),
      };
      for (const variant of ['fresh', 'same'] as const) {
        for (const rate of ordinarySettings.rates) {
          const label = variant === 'fresh' ? 'fresh sessions' : `${ordinarySettings.sessions} sessions reused`;
          const r = await measureRate(ctx, [gateway], model.child, label, rate, bodies[variant], cdp);
          rows.push(r);
          const target =
            variant === 'fresh' && rate === 60
              ? { op: '<=' as const, value: targets.freshR60CpuMs[ctx.backend]! }
              : undefined;
          recordRate(ctx.backend, variant, r, target);
        }
      }
    } finally {
      cdp?.close();
      await stopChild(gateway.child, 15_000);
    }
    if (ctx.backend === 'postgres' && ordinarySettings.clusterRates.length > 0)
      await clusterRatios(ctx, model.child, provider, runTag, rows, notes);
  } finally {
    await stopChild(model.child, 5_000);
    // Also after a failure: the rows measured until then are printed with it.
    const title =
      `(p) ordinary load [${ctx.backend}]: open loop, ${ordinarySettings.seconds} s windows; CPU per turn of every ` +
      `gateway thread; categories: main thread ms/turn by its profile's shares, offthread = the other threads`;
    tables.set(ctx.backend, [...tableLines(title, rows), ...notes.map((note) => `  ${note}`)]);
  }
}

/**
 * Two gateways against one, PostgreSQL, fresh sessions, per bus (Redis, NATS): the summed CPU per turn of two
 * gateways on the same database and bus (requests alternating) over one gateway's with that bus.
 */
async function clusterRatios(
  ctx: OrdinaryContext,
  model: Child,
  provider: Record<string, unknown>,
  runTag: string,
  rows: RateResult[],
  notes: string[],
): Promise<void> {
  const buses = [
    { name: 'redis', url: ctx.redisUrl },
    { name: 'nats', url: ordinarySettings.natsUrl },
  ];
  for (const bus of buses) {
    if (!(await ctx.reachable(bus.url))) {
      notes.push(`cluster over ${bus.name}: skipped, nothing answers at ${bus.url}`);
      ctx.progress(`(p) cluster over ${bus.name}: skipped (${bus.url} does not answer)`);
      continue;
    }
    const config = {
      bus: { driver: bus.name, url: bus.url, namespace: `bench_${runTag}_${bus.name}` },
    };
    const fresh = (n: number): Buffer =>
      messageBody(`pc-${bus.name}-${runTag}-${n}-${Math.random().toString(36).slice(2, 8)}`);
    const perRate = new Map<number, { one?: RateResult; two?: RateResult; half?: RateResult }>();
    for (const size of [1, 2] as const) {
      const gateways: Gateway[] = [];
      try {
        for (let i = 0; i < size; i++) {
          gateways.push(
            await ctx.startGateway(
              join(ctx.dir, `ordinary-${bus.name}-${size}${'ab'[i]}`),
              `gateway [${ctx.backend}, ${bus.name}, ${size === 1 ? 'alone' : `pair ${'ab'[i]}`}]`,
              provider,
              config,
              [],
            ),
          );
        }
        await warmUp(ctx, gateways, `${runTag}-${bus.name}-${size}`);
        for (const gateway of gateways) await ctx.settle(gateway.child);
        for (const rate of ordinarySettings.clusterRates) {
          const label = `${bus.name}: ${size === 1 ? '1 gateway' : '2 gateways'}, fresh`;
          const r = await measureRate(ctx, gateways, model, label, rate, fresh);
          rows.push(r);
          const entry = perRate.get(rate) ?? {};
          entry[size === 1 ? 'one' : 'two'] = r;
          perRate.set(rate, entry);
          recordRate(ctx.backend, `cluster.${bus.name}.${size === 1 ? 'one' : 'two'}`, r);
          if (size === 1) {
            // One gateway at half the rate: what each of the two runs at. Two ÷ this is what the second costs
            // beyond running each gateway at a lower rate (where a turn costs more, by itself).
            const half = await measureRate(ctx, gateways, model, `${label}, half rate`, rate / 2, fresh);
            rows.push(half);
            entry.half = half;
            recordRate(ctx.backend, `cluster.${bus.name}.one_half`, half);
          }
        }
      } finally {
        for (const gateway of gateways) await stopChild(gateway.child, 15_000);
      }
    }
    for (const [rate, { one, two, half }] of perRate) {
      const ratio = one && two ? two.cpuMsPerTurn / one.cpuMsPerTurn : NaN;
      const sameLoad = half && two ? two.cpuMsPerTurn / half.cpuMsPerTurn : NaN;
      figure(
        ctx.backend,
        `ordinary.cluster.${bus.name}.r${rate}.ratio_same_load`,
        `(p) ${bus.name}, ${rate} turns/s: CPU per turn, 2 gateways ÷ 1 gateway at ${rate / 2} turns/s`,
        sameLoad,
        'ratio',
      );
      figure(
        ctx.backend,
        `ordinary.cluster.${bus.name}.r${rate}.ratio`,
        `(p) ${bus.name}, ${rate} turns/s: CPU per turn, 2 gateways ÷ 1`,
        ratio,
        'ratio',
        { op: '<=', value: targets.clusterRatio },
      );
      notes.push(
        `cluster over ${bus.name} at ${rate} turns/s: 2 gateways ${fmt(two?.cpuMsPerTurn ?? NaN, 3)} ms/turn (both) ÷ ` +
          `1 gateway ${fmt(one?.cpuMsPerTurn ?? NaN, 3)} ms/turn = ${fmt(ratio, 2)}× (target ≤ ${targets.clusterRatio}); ` +
          `÷ 1 gateway at ${rate / 2} turns/s (${fmt(half?.cpuMsPerTurn ?? NaN, 3)} ms/turn, each one's load) = ` +
          `${fmt(sameLoad, 2)}×`,
      );
    }
  }
}
