import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { runLoad, type LoadOptions, type LoadRequest, type LoadResult } from './load.js';
import { cpuMs, machineBusyMs, memoryMiB, ticksPerSecond } from './proc-stats.js';
import {
  announcedUrl,
  killAllNow,
  ROOT,
  spawnGateway,
  spawnNode,
  stopAll,
  stopChild,
  waitForHealth,
  type Child,
} from './processes.js';

/**
 * `npm run bench`: throughput and latency of the gateway's message path as
 * ratios against a bare node:http server measured in the same run, plus the
 * gateway's CPU per full turn and its memory. A report: targets that are not
 * met do not fail the run; a broken run (a server that does not start, more
 * than 1% failed requests) does.
 */

const HERE = import.meta.dirname;

const TOKEN = 'bench-token';
/** Admin token, used only to read the turn ledger while draining (so the measured token is an api token). */
const ADMIN_TOKEN = 'bench-admin-token';
const HIGH_LIMIT = 100_000_000;
const ERROR_BUDGET = 0.01;

function envNumber(name: string, fallback: number, integer: boolean): number {
  const raw = process.env[name];
  if (raw === undefined || raw.trim() === '') return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value <= 0 || (integer && !Number.isInteger(value))) {
    throw new Error(`${name} must be a positive ${integer ? 'integer' : 'number'}, not ${JSON.stringify(raw)}`);
  }
  return value;
}

const settings = {
  seconds: envNumber('BENCH_SECONDS', 5, false),
  warmupSeconds: envNumber('BENCH_WARMUP_SECONDS', 1, false),
  concurrency: envNumber('BENCH_CONCURRENCY', 32, true),
  sessions: envNumber('BENCH_SESSIONS', 64, true),
  replayPool: envNumber('BENCH_REPLAY_POOL', 256, true),
  maxRequests: envNumber('BENCH_MAX_REQUESTS', 1_000_000, true),
  cpuProfDir: process.env.BENCH_CPU_PROF_DIR?.trim() || undefined,
  scenarios: scenarioSet(process.env.BENCH_SCENARIOS),
};

/** `BENCH_SCENARIOS=a,d` runs a subset (default: all four). */
function scenarioSet(raw: string | undefined): Set<string> {
  const all = ['a', 'b', 'c', 'd'];
  if (raw === undefined || raw.trim() === '') return new Set(all);
  const picked = raw.split(',').map((part) => part.trim().toLowerCase().replace(/[()]/g, ''));
  const unknown = picked.filter((part) => !all.includes(part));
  if (unknown.length > 0 || picked.length === 0) {
    throw new Error(`BENCH_SCENARIOS must list some of a,b,c,d, not ${JSON.stringify(raw)}`);
  }
  return new Set(picked);
}

const targets = { keyedRatio: 0.25, replayRatio: 0.5, cpuPerTurnMs: 2 };

interface ScenarioResult {
  id: string;
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

const results: ScenarioResult[] = [];
const log = (line = ''): void => console.log(line);
const progress = (line: string): void => console.error(`bench: ${line}`);

function messageBody(chat: string, extra: Record<string, unknown> = {}): Buffer {
  return Buffer.from(JSON.stringify({ platform: 'bench', user_id: 'u', chat_id: chat, text: 'hi', ...extra }));
}

const authHeaders = { 'x-api-token': TOKEN };

/**
 * Runs one load scenario against `server`, measuring its CPU (and the model
 * server's, when given) over exactly the measured window.
 */
async function scenario(
  id: string,
  label: string,
  server: Child,
  options: Omit<
    LoadOptions,
    'concurrency' | 'warmupMs' | 'durationMs' | 'maxRequests' | 'onWindowStart' | 'onWindowEnd'
  >,
  extra: { model?: Child; notes?: string[] } = {},
): Promise<ScenarioResult> {
  progress(`${id} ${label}: ${settings.warmupSeconds} s warm-up + ${settings.seconds} s…`);
  let serverCpu0 = 0;
  let serverCpu1 = 0;
  let modelCpu0 = 0;
  let modelCpu1 = 0;
  let self0 = process.cpuUsage();
  let self1 = process.cpuUsage(self0);
  let wall0 = 0;
  let wall1 = 0;
  let machine0 = 0;
  let machine1 = 0;
  const alive = (child: Child): boolean => child.process.exitCode === null && child.process.signalCode === null;
  const load = await runLoad({
    ...options,
    stop: () => !alive(server) || (extra.model !== undefined && !alive(extra.model)),
    concurrency: settings.concurrency,
    warmupMs: settings.warmupSeconds * 1000,
    durationMs: settings.seconds * 1000,
    maxRequests: settings.maxRequests,
    onWindowStart: () => {
      wall0 = performance.now();
      serverCpu0 = cpuMs(server.pid);
      if (extra.model) modelCpu0 = cpuMs(extra.model.pid);
      self0 = process.cpuUsage();
      machine0 = machineBusyMs();
    },
    onWindowEnd: () => {
      wall1 = performance.now();
      serverCpu1 = cpuMs(server.pid);
      if (extra.model) modelCpu1 = cpuMs(extra.model.pid);
      self1 = process.cpuUsage(self0);
      machine1 = machineBusyMs();
    },
  });
  if (!alive(server)) throw new Error(`${server.name} exited during ${id}\n--- its output ---\n${server.tail()}`);
  if (extra.model && !alive(extra.model)) throw new Error(`${extra.model.name} exited during ${id}`);
  const wallMs = Math.max(1, wall1 - wall0);
  const ours = serverCpu1 - serverCpu0 + (modelCpu1 - modelCpu0) + (self1.user + self1.system) / 1000;
  const result: ScenarioResult = {
    id,
    label,
    load,
    serverCpuPerReqMs: load.completed > 0 ? (serverCpu1 - serverCpu0) / load.completed : NaN,
    serverCpuPct: ((serverCpu1 - serverCpu0) / wallMs) * 100,
    loadgenCpuPct: ((self1.user + self1.system) / 1000 / wallMs) * 100,
    otherCpuPct: Math.max(0, ((machine1 - machine0 - ours) / wallMs) * 100),
    ...(extra.model ? { modelCpuPct: ((modelCpu1 - modelCpu0) / wallMs) * 100 } : {}),
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

async function startGateway(tmp: string, modelUrl: string): Promise<Gateway> {
  const config = {
    data_dir: join(tmp, 'data'),
    gateway: { host: '127.0.0.1', port: 0, auth: { api_tokens: [TOKEN], admin_tokens: [ADMIN_TOKEN] } },
    security: {
      rate_limits: { read: HIGH_LIMIT, write: HIGH_LIMIT, analytics: HIGH_LIMIT, lifecycle: HIGH_LIMIT },
    },
    storage: { driver: 'sqlite' },
    provider: { type: 'openai', base_url: `${modelUrl}/v1`, model: 'bench-model' },
    logs: { level: 'warning' },
  };
  const configPath = join(tmp, 'gatehouse.yaml');
  // JSON is YAML.
  writeFileSync(configPath, JSON.stringify(config, null, 2));
  const child = spawnGateway(['--config', configPath], {
    cwd: tmp,
    nodeArgs: settings.cpuProfDir ? ['--cpu-prof', `--cpu-prof-dir=${settings.cpuProfDir}`] : [],
    startTimeoutMs: 30_000,
    // stdin stays open like the other children's; the output is kept only as a tail for error reports.
    stdin: 'pipe',
    keepLines: 0,
  });
  const url = await child.ready.catch((err: Error) => {
    throw new Error(`${err.message}\n--- gateway output ---\n${child.tail()}`);
  });
  return { child, url };
}

async function startBenchServer(name: string, file: string): Promise<{ child: Child; url: string }> {
  const child = spawnNode({
    name,
    args: [join(HERE, file)],
    cwd: ROOT,
    env: { PATH: process.env.PATH },
    findUrl: announcedUrl,
    startTimeoutMs: 10_000,
    // stdin stays open: our own small servers exit when it closes.
    stdin: 'pipe',
    keepLines: 0,
  });
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
  const deadline = t0 + 180_000;
  const pending = new Set(lastPerSession);
  let failed = 0;
  while (pending.size > 0) {
    if (performance.now() > deadline) throw new Error(`backlog did not drain in 180 s (${pending.size} sessions busy)`);
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
  // Then idle: under 5% of a core over 300 ms (at most 10 s more).
  const idleDeadline = performance.now() + 10_000;
  for (;;) {
    const before = cpuMs(gateway.child.pid);
    await sleep(300);
    if (cpuMs(gateway.child.pid) - before <= 15 || performance.now() > idleDeadline) break;
  }
  return { seconds: (performance.now() - t0) / 1000, failed };
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

function printReport(memory: { idle: number; after: number; peak: number } | undefined): boolean {
  const baseline = results.find((r) => r.id === '(a)');
  const columns = [
    ['scenario', 32, 'left'],
    ['req/s', 8, 'right'],
    ['p50 ms', 8, 'right'],
    ['p99 ms', 8, 'right'],
    ['non-2xx', 8, 'right'],
    ['CPU/req ms', 11, 'right'],
    ['ratio vs baseline', 19, 'right'],
    ['target', 0, 'left'],
  ] as const;
  const row = (cells: string[]): string =>
    cells
      .map((cell, i) => {
        const [, width, align] = columns[i]!;
        return align === 'left' ? cell.padEnd(width) : cell.padStart(width);
      })
      .join('   ')
      .trimEnd();
  log();
  log(
    `Gatehouse bench — ${settings.concurrency} in flight, ${settings.warmupSeconds} s warm-up + ${settings.seconds} s ` +
      `measured per scenario, ${availableParallelism()} CPUs, Node ${process.version}, CLK_TCK ${ticksPerSecond()}`,
  );
  log();
  log(row(columns.map(([name]) => name)));
  const verdicts: string[] = [];
  for (const r of results) {
    const ratio = baseline && r.id !== '(d)' ? r.load.rps / baseline.load.rps : NaN;
    let target = '';
    if (r.id === '(b)' || r.id === '(c)') {
      const min = r.id === '(b)' ? targets.keyedRatio : targets.replayRatio;
      target = `≥ ${min.toFixed(2)}`;
      verdicts.push(
        `target ${r.id} ${r.label}: ratio ≥ ${min.toFixed(2)} — ` +
          (baseline
            ? `${ratio >= min ? 'met' : 'NOT MET'} (${fmt(ratio, 2)})`
            : 'not judged (no baseline: run (a) too)'),
      );
    } else if (r.id === '(d)') {
      target = `CPU/turn ≤ ${targets.cpuPerTurnMs} ms: ${fmt(r.serverCpuPerReqMs, 2)} ms`;
      verdicts.push(
        `target ${r.id} ${r.label}: gateway CPU/turn ≤ ${targets.cpuPerTurnMs} ms — ` +
          `${r.serverCpuPerReqMs <= targets.cpuPerTurnMs ? 'met' : 'NOT MET'} (${fmt(r.serverCpuPerReqMs, 2)} ms)`,
      );
    }
    log(
      row([
        `${r.id} ${r.label}`,
        fmt(r.load.rps, 0),
        fmt(r.load.p50Ms, 2),
        fmt(r.load.p99Ms, 2),
        String(r.load.non2xx),
        fmt(r.serverCpuPerReqMs, 3),
        r.id === '(d)' ? '—' : fmt(ratio, 2),
        target,
      ]),
    );
  }
  log();
  for (const line of verdicts) log(line);
  log();
  log(`CPU over each measured window (% of one core; ${availableParallelism() * 100}% = every core):`);
  for (const r of results) {
    const model = r.modelCpuPct !== undefined ? `, fake model ${fmt(r.modelCpuPct, 0)}%` : '';
    log(
      `  ${`${r.id} ${r.label}`.padEnd(32)} server ${fmt(r.serverCpuPct, 0).padStart(3)}%, ` +
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
  if (memory) {
    log();
    log(
      `gateway RSS: idle after start ${fmt(memory.idle, 1)} MiB, after the run ${fmt(memory.after, 1)} MiB ` +
        `(peak ${fmt(memory.peak, 1)} MiB)`,
    );
  }
  const notes = results.flatMap((r) => r.notes.map((note) => `${r.id} ${note}`));
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
      `${r.id}: ${r.load.issued} requests issued, ${r.load.completed} in the window; statuses ${statuses || 'none'}; ` +
        `${r.load.non2xx} non-2xx, ${r.load.errors} errors`,
    );
    if (r.load.firstError) log(`    first error: ${r.load.firstError}`);
    if (share > ERROR_BUDGET || r.load.completed === 0) {
      broken = true;
      log(`    BROKEN: ${(share * 100).toFixed(2)}% of requests failed (budget ${ERROR_BUDGET * 100}%)`);
    }
  }
  return !broken;
}

async function main(): Promise<number> {
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

  let memory: { idle: number; after: number; peak: number } | undefined;
  try {
    // (a) the baseline, alone on the machine.
    if (settings.scenarios.has('a')) {
      const hello = await startBenchServer('baseline server', 'hello-server.js');
      const baselineBodies = Array.from({ length: settings.sessions }, (_, i) => messageBody(`c${i}`));
      await scenario('(a)', 'node:http baseline', hello.child, {
        url: hello.url,
        requestTimeoutMs: 30_000,
        expectStatus: 200,
        request: (n): LoadRequest => ({
          method: 'POST',
          path: '/api/v1/message',
          headers: { ...authHeaders, 'idempotency-key': `a-${n}` },
          body: baselineBodies[n % settings.sessions]!,
        }),
      });
      await stopChild(hello.child, 5_000);
    }
    if (!['b', 'c', 'd'].some((id) => settings.scenarios.has(id))) return printReport(memory) ? 0 : 1;

    const model = await startBenchServer('fake OpenAI server', 'fake-openai.js');
    progress(`fake OpenAI server on ${model.url}`);
    const gateway = await startGateway(tmp, model.url);
    progress(`gateway on ${gateway.url} (pid ${gateway.child.pid})`);
    await waitForHealth(gateway.url);
    await sleep(500);
    const idleRss = memoryMiB(gateway.child.pid, 'VmRSS');

    // (b) keyed acceptance: a new key every request; each accepted message queues a turn.
    const runId = Date.now().toString(36);
    const bodies = Array.from({ length: settings.sessions }, (_, i) => messageBody(`c${i}`));
    const lastPerSession = new Map<number, string>();
    if (settings.scenarios.has('b')) {
      const keyed = await scenario(
        '(b)',
        'keyed POST /message 202',
        gateway.child,
        {
          url: gateway.url,
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
      progress('draining the turns (b) queued…');
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
      for (let i = 0; i < pool.length; i += settings.concurrency) {
        await Promise.all(
          pool.slice(i, i + settings.concurrency).map(async (entry, j) => {
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
      await scenario(
        '(c)',
        'keyed replay',
        gateway.child,
        {
          url: gateway.url,
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
    }

    // (d) full turns: wait=true, no key, distinct sessions; the fake model answers at once.
    if (settings.scenarios.has('d')) {
      const turnBodies = Array.from({ length: settings.sessions }, (_, i) => messageBody(`d${i}`));
      await scenario(
        '(d)',
        'full turns (wait=true)',
        gateway.child,
        {
          url: gateway.url,
          requestTimeoutMs: 70_000,
          expectStatus: 200,
          request: (n): LoadRequest => ({
            method: 'POST',
            path: '/api/v1/message?wait=true&timeout_seconds=60',
            headers: authHeaders,
            body: turnBodies[n % settings.sessions]!,
          }),
          check: (body) => (/"status":"completed"/.test(body) ? undefined : 'turn did not complete'),
        },
        {
          model: model.child,
          notes: [
            `req/s is turns/s; CPU/req is gateway CPU per turn (/proc/<pid>/stat utime+stime over the window ÷ turns), ` +
              `${settings.sessions} sessions, history grows over the run.`,
          ],
        },
      );
    }

    memory = {
      idle: idleRss,
      after: memoryMiB(gateway.child.pid, 'VmRSS'),
      peak: memoryMiB(gateway.child.pid, 'VmHWM'),
    };
    // Graceful, so a --cpu-prof profile gets written.
    await stopChild(gateway.child, 15_000);
  } catch (err) {
    printReport(memory);
    console.error(`\nbench failed: ${(err as Error).stack ?? String(err)}`);
    return 1;
  } finally {
    await stopAll(5_000);
    rmSync(tmp, { recursive: true, force: true });
  }
  return printReport(memory) ? 0 : 1;
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
