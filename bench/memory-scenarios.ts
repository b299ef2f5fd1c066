import { join } from 'node:path';
import { envNumber } from './common.js';
import { record, recordFigure, type TargetOp } from './figures.js';
import {
  coldStart,
  Flood,
  floodLine,
  largeToolTurns,
  RssSampler,
  slowConsumers,
  startPressureGateway,
  timeToRecover,
  timeToTakeWork,
  totals,
  type FloodResult,
  waitedTurnCapacity,
  type PressureGateway,
} from './pressure.js';
import { percentile } from './probes.js';
import { cpuMs, threadCpuMs } from './proc-stats.js';
import { measureWebSocketClients, webSocketClientFigures } from './ws-clients.js';

/**
 * The memory scenarios of the bench (issue 30; bench/README.md):
 *
 * - (k) overload: a flood of 10× the measured capacity (waited turns, 202
 *   acceptances and WebSocket messages) for BENCH_SECONDS;
 * - (l) slow consumers: SSE and WebSocket clients that never read while long
 *   replies stream;
 * - (m) large payloads: turns whose tool returns 1 MB, all at once;
 * - (n) idle: cold start to a 200 from /health and idle RSS, fresh data dir;
 * - (o) 19,000 WebSocket clients: memory per idle subscribed client.
 *
 * Figures only; a target that is not met does not fail the run.
 */

/** The knobs of (k)–(o) (bench/README.md). */
export const memorySettings = {
  /** (k): how long the model takes per call, ms: the gateway's capacity is then its turn slots, not the CPU. */
  modelDelayMs: envNumber('BENCH_MODEL_DELAY_MS', 50, true),
  floodFactor: envNumber('BENCH_FLOOD_FACTOR', 10, false),
  floodMaxInFlight: envNumber('BENCH_FLOOD_MAX_IN_FLIGHT', 4000, true),
  slowSse: envNumber('BENCH_SLOW_SSE', 100, true),
  slowWs: envNumber('BENCH_SLOW_WS', 10, true),
  slowReplyBytes: envNumber('BENCH_SLOW_REPLY_BYTES', 6_000_000, true),
  largeTurns: envNumber('BENCH_LARGE_TURNS', 100, true),
  toolBytes: envNumber('BENCH_TOOL_BYTES', 1_000_000, true),
  coldStarts: envNumber('BENCH_COLD_STARTS', 5, true),
  idleSeconds: envNumber('BENCH_IDLE_SECONDS', 3, false),
  wsClients: envNumber('BENCH_WS_CLIENTS', 19_000, true),
  /** The RSS ceiling the peaks of (k), (l) and (m) are judged against, MiB (the default memory watermark is 300). */
  rssCeilingMiB: envNumber('BENCH_RSS_CEILING_MIB', 350, false),
};

/** The targets of issue 30. */
const targets = {
  p99Ratio: 2,
  recoverSeconds: 1,
  idleRssMiB: 80,
  coldStartMs: 500,
};

/** What the scenarios need from the bench. */
export interface MemoryContext {
  backend: string;
  /** A fresh directory of this backend's run. */
  dir: string;
  storage: Record<string, unknown>;
  seconds: number;
  warmupSeconds: number;
  scenarios: ReadonlySet<string>;
  progress(line: string): void;
  note(line: string): void;
}

const fmt = (value: number, digits = 1): string => (Number.isFinite(value) ? value.toFixed(digits) : '—');
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

function figure(
  ctx: MemoryContext,
  id: string,
  label: string,
  value: number,
  unit: string,
  target?: { op: TargetOp; value: number },
): void {
  recordFigure(ctx.backend, id, label, value, unit, target);
}

/** The RSS ceiling as a target. */
const ceiling = (): { op: TargetOp; value: number } => ({ op: '<=', value: memorySettings.rssCeilingMiB });

/** Throws with the gateway's output when it is no longer running. */
function assertAlive(gateway: PressureGateway, during: string): void {
  const proc = gateway.child.process;
  if (proc.exitCode !== null || proc.signalCode !== null) {
    throw new Error(`the gateway exited during ${during}\n--- its output ---\n${gateway.child.tail()}`);
  }
}

/** A pressure gateway of its own for one scenario: under `ctx.dir/<dir>`, named after the backend and `label`. */
function scenarioGateway(
  ctx: MemoryContext,
  dir: string,
  label: string,
  extra?: Record<string, unknown>,
): Promise<PressureGateway> {
  return startPressureGateway({
    dir: join(ctx.dir, dir),
    name: `gateway [${ctx.backend}, ${label}]`,
    storage: ctx.storage,
    ...(extra ? { extra } : {}),
  });
}

/** (k): capacity, the unloaded p99, then the flood and the recovery after it. */
async function overload(ctx: MemoryContext): Promise<void> {
  const loopDelayMs = process.env.BENCH_MAX_EVENT_LOOP_DELAY_MS;
  const gateway = await scenarioGateway(
    ctx,
    'overload',
    'overload',
    loopDelayMs ? { limits: { overload: { max_event_loop_delay_ms: Number(loopDelayMs) } } } : undefined,
  );
  const text = `delay=${memorySettings.modelDelayMs}`;
  try {
    ctx.progress(
      `(k) overload [${ctx.backend}]: capacity (waited turns answered 200, 32 in flight, ${ctx.seconds} s)…`,
    );
    const rate = await waitedTurnCapacity(gateway.url, text, ctx.warmupSeconds * 1000, ctx.seconds * 1000);
    figure(ctx, 'overload.capacity.turns_per_s', `(k) capacity, waited turns (model ${text} ms)`, rate, 'turns/s');

    ctx.progress(`(k): ${fmt(rate, 0)} turns/s; unloaded: ${fmt(rate / 4, 0)}/s mixed for ${ctx.seconds} s…`);
    const calm = new Flood({
      url: gateway.url,
      rate: rate / 4,
      seconds: ctx.seconds,
      maxInFlight: memorySettings.floodMaxInFlight,
      wsConnections: 16,
      sessions: 2000,
      text,
      prefix: 'calm',
    });
    await calm.run();
    const unloaded = await calm.finish(60_000);
    ctx.progress(`(k) unloaded: ${floodLine(unloaded)}`);
    await sleep(1_000);

    const offered = rate * memorySettings.floodFactor;
    ctx.progress(`(k): flood at ${fmt(offered, 0)}/s (${memorySettings.floodFactor}× capacity) for ${ctx.seconds} s…`);
    const sampler = new RssSampler(gateway.child.pid).start();
    const pid = gateway.child.pid;
    const cpuBefore = {
      gateway: cpuMs(pid),
      loop: threadCpuMs(pid, pid),
      bench: cpuMs(process.pid),
      at: performance.now(),
    };
    const flood = new Flood({
      url: gateway.url,
      rate: offered,
      seconds: ctx.seconds,
      maxInFlight: memorySettings.floodMaxInFlight,
      wsConnections: 64,
      sessions: 2000,
      text,
      prefix: 'flood',
    });
    await flood.run();
    const floodMs = performance.now() - cpuBefore.at;
    const busy = {
      gateway: (cpuMs(pid) - cpuBefore.gateway) / floodMs,
      loop: (threadCpuMs(pid, pid) - cpuBefore.loop) / floodMs,
      bench: (cpuMs(process.pid) - cpuBefore.bench) / floodMs,
    };
    // Taking work again once the flood ends, then the backlog it left (acknowledged turns run to their end).
    const takes = await timeToTakeWork(gateway.url, 30_000, 'recover');
    const unloadedP99 = percentile(unloaded.waited.latencies, 99);
    const threshold = Math.max(2 * unloadedP99, memorySettings.modelDelayMs + 20);
    const drained = await timeToRecover(gateway.url, text, threshold, 60_000, 'drained');
    const result = await flood.finish(60_000);
    const peak = sampler.stop();
    assertAlive(gateway, '(k)');
    ctx.progress(
      `(k) flood: ${floodLine(result)}; peak RSS ${fmt(peak)} MiB; taking work ${fmt(takes, 2)} s after it, ` +
        `waited turns fast again after ${fmt(takes + drained, 2)} s`,
    );
    floodFigures(ctx, unloaded, result, peak, { takes, drained }, threshold);
    figure(
      ctx,
      'overload.flood.gateway_cpu',
      "(k) flood: the gateway's CPU (all its threads), share of one core",
      busy.gateway,
      'cores',
    );
    figure(
      ctx,
      'overload.flood.gateway_loop_cpu',
      "(k) flood: the gateway's main thread (its event loop), share of one core",
      busy.loop,
      'cores',
    );
    figure(
      ctx,
      'overload.flood.client_cpu',
      "(k) flood: the load generator's CPU (the bench's process), share of one core",
      busy.bench,
      'cores',
    );
  } finally {
    await gateway.stop();
  }
}

function floodFigures(
  ctx: MemoryContext,
  unloaded: FloodResult,
  result: FloodResult,
  peakRss: number,
  recover: { takes: number; drained: number },
  threshold: number,
): void {
  const all = totals(result);
  const p99 = (latencies: number[]): number => percentile(latencies, 99);
  figure(ctx, 'overload.unloaded.waited_p99_ms', '(k) unloaded waited turn p99', p99(unloaded.waited.latencies), 'ms');
  figure(ctx, 'overload.unloaded.ack_p99_ms', '(k) unloaded 202 acceptance p99', p99(unloaded.ack.latencies), 'ms');
  figure(ctx, 'overload.unloaded.ws_p99_ms', '(k) unloaded WebSocket turn p99', p99(unloaded.ws.latencies), 'ms');
  figure(
    ctx,
    'overload.flood.offered_per_s',
    '(k) flood offered',
    result.offered / Math.max(0.001, result.seconds),
    'req/s',
  );
  figure(
    ctx,
    'overload.flood.not_sent',
    '(k) flood offers the client could not send (its cap)',
    result.notSent,
    'offers',
  );
  const ratio = (kind: 'waited' | 'ack' | 'ws'): number => p99(result[kind].latencies) / p99(unloaded[kind].latencies);
  figure(
    ctx,
    'overload.flood.waited_p99_ratio',
    '(k) flood: accepted waited turn p99 ÷ unloaded',
    ratio('waited'),
    'ratio',
    {
      op: '<=',
      value: targets.p99Ratio,
    },
  );
  figure(ctx, 'overload.flood.ack_p99_ratio', '(k) flood: 202 acceptance p99 ÷ unloaded', ratio('ack'), 'ratio', {
    op: '<=',
    value: targets.p99Ratio,
  });
  figure(ctx, 'overload.flood.ws_p99_ratio', '(k) flood: WebSocket turn p99 ÷ unloaded', ratio('ws'), 'ratio', {
    op: '<=',
    value: targets.p99Ratio,
  });
  figure(
    ctx,
    'overload.flood.waited_p99_ms',
    '(k) flood: accepted waited turn p99',
    p99(result.waited.latencies),
    'ms',
  );
  figure(
    ctx,
    'overload.flood.waited_after_connect_p99_ratio',
    '(k) flood: accepted waited turn p99 from an open connection ÷ unloaded',
    p99(result.waited.afterConnect) / p99(unloaded.waited.afterConnect),
    'ratio',
  );
  for (const kind of ['waited', 'ack'] as const) {
    figure(
      ctx,
      `overload.flood.${kind}_server_p99_ratio`,
      `(k) flood: accepted ${kind === 'waited' ? 'waited turn' : '202 acceptance'} p99 on the gateway's clock (Server-Timing) ÷ unloaded`,
      p99(result[kind].server) / p99(unloaded[kind].server),
      'ratio',
    );
  }
  figure(
    ctx,
    'overload.flood.connect_p99_ms',
    '(k) flood: time to open a new connection, p99',
    p99([...result.waited.connects, ...result.ack.connects]),
    'ms',
  );
  const sent = Math.max(1, all.sent);
  figure(ctx, 'overload.flood.accepted_share', '(k) flood: share accepted', all.accepted / sent, 'ratio');
  figure(
    ctx,
    'overload.flood.refused_share',
    '(k) flood: share refused (503/429, error frames)',
    all.refused / sent,
    'ratio',
  );
  figure(ctx, 'overload.flood.failed_share', '(k) flood: share failed otherwise', all.failed / sent, 'ratio');
  figure(
    ctx,
    'overload.flood.refused_without_retry_after',
    '(k) flood: HTTP refusals without Retry-After',
    all.refusedWithoutRetryAfter,
    'responses',
    { op: '<=', value: 0 },
  );
  figure(ctx, 'overload.flood.peak_rss_mib', '(k) flood: gateway peak RSS', peakRss, 'MiB', ceiling());
  figure(
    ctx,
    'overload.recover_seconds',
    '(k) after the flood: until new work is taken (a 202, health not degraded by memory)',
    recover.takes,
    's',
    {
      op: '<=',
      value: targets.recoverSeconds,
    },
  );
  figure(
    ctx,
    'overload.drain_seconds',
    '(k) then: until 3 waited turns in a row are back within 2× p99 (what the flood acknowledged runs first)',
    recover.drained,
    's',
  );

  if (result.firstError) ctx.note(`(k) [${ctx.backend}] first failure in the flood: ${result.firstError}`);
  const phases = (stats: FloodResult['waited']): string =>
    Object.entries(stats.phases)
      .map(([name, values]) => `${name} ${fmt(p99(values))}`)
      .join(', ');
  ctx.note(
    `(k) [${ctx.backend}] Server-Timing p99 by phase, ms: waited unloaded ${phases(unloaded.waited)}; flood ` +
      `${phases(result.waited)}; 202 unloaded ${phases(unloaded.ack)}; flood ${phases(result.ack)}.`,
  );
  ctx.note(
    `(k) [${ctx.backend}] recovery: waited turns one at a time after the flood, back when 3 in a row answer 200 ` +
      `within ${fmt(threshold, 0)} ms; flood statuses: waited ${JSON.stringify(result.waited.statuses)}, ` +
      `202 ${JSON.stringify(result.ack.statuses)}, ws ${JSON.stringify(result.ws.statuses)}.`,
  );
}

/** (l): non-reading SSE and WebSocket clients while long replies stream. */
async function slow(ctx: MemoryContext): Promise<void> {
  // A client that never reads passes its bound only once the kernel's socket buffers are full (a few MB on
  // loopback), so the replies here are longer than limits.payloads.max_reply_bytes allows by default (1 MiB):
  // this gateway is configured for them.
  const gateway = await scenarioGateway(ctx, 'slow', 'slow consumers', {
    limits: { payloads: { max_reply_bytes: memorySettings.slowReplyBytes } },
  });
  try {
    const { slowSse, slowWs, slowReplyBytes } = memorySettings;
    ctx.progress(
      `(l) slow consumers [${ctx.backend}]: ${slowSse} SSE + ${slowWs} WebSocket clients that never read, ` +
        `${slowWs || 1} replies of ${fmt(slowReplyBytes / 1e6)} MB…`,
    );
    const sampler = new RssSampler(gateway.child.pid).start();
    const result = await slowConsumers({
      url: gateway.url,
      sse: slowSse,
      ws: slowWs,
      replyBytes: slowReplyBytes,
      chunkBytes: 65_536,
      intervalMs: 0,
      prefix: 'slow',
      timeoutMs: 300_000,
    });
    const peak = sampler.stop();
    assertAlive(gateway, '(l)');
    ctx.progress(`(l): ${JSON.stringify(result)}, peak RSS ${fmt(peak)} MiB`);
    for (const [kind, label] of [
      ['sse', 'SSE'],
      ['ws', 'WebSocket'],
    ] as const) {
      const taken = result[kind].clients - result[kind].refused;
      figure(
        ctx,
        `slow.${kind}.closed`,
        `(l) non-reading ${label} clients closed (of ${taken} taken)`,
        result[kind].closed,
        'clients',
        {
          op: '>=',
          value: taken,
        },
      );
    }
    figure(ctx, 'slow.ws.closed_1013', '(l) of those, closed with 1013', result.ws.closeCodes['1013'] ?? 0, 'clients');
    figure(
      ctx,
      'slow.refused',
      '(l) non-reading clients refused at the start (503, error frames)',
      result.sse.refused + result.ws.refused,
      'clients',
    );
    figure(ctx, 'slow.peak_rss_mib', '(l) slow consumers: gateway peak RSS', peak, 'MiB', ceiling());
    if (result.turnsNotEnded > 0)
      ctx.note(`(l) [${ctx.backend}] ${result.turnsNotEnded} streamed turns had not ended in 300 s`);
  } finally {
    await gateway.stop();
  }
}

/** (m): turns with a 1 MB tool result, all at once. */
async function large(ctx: MemoryContext): Promise<void> {
  const gateway = await scenarioGateway(ctx, 'large', 'large payloads');
  try {
    const { largeTurns, toolBytes } = memorySettings;
    ctx.progress(
      `(m) large payloads [${ctx.backend}]: ${largeTurns} turns at once, each with a ${fmt(toolBytes / 1e6)} MB tool result…`,
    );
    const sampler = new RssSampler(gateway.child.pid).start();
    const result = await largeToolTurns(gateway.url, largeTurns, toolBytes, 'large');
    const peak = sampler.stop();
    assertAlive(gateway, '(m)');
    ctx.progress(
      `(m): ${result.completed} of ${result.turns} completed, ${result.refused} refused, model saw ≤ ${result.modelSawBytes} bytes, peak RSS ${fmt(peak)} MiB`,
    );
    figure(
      ctx,
      'payloads.tool.completed',
      `(m) turns with a large tool result completed (of ${result.turns})`,
      result.completed,
      'turns',
    );
    figure(ctx, 'payloads.tool.refused', '(m) of those turns, refused at the door (503/429)', result.refused, 'turns');
    figure(
      ctx,
      'payloads.tool.model_saw_bytes',
      '(m) largest tool result in the model context',
      result.modelSawBytes,
      'bytes',
    );
    figure(ctx, 'payloads.tool.peak_rss_mib', '(m) large tool results: gateway peak RSS', peak, 'MiB', ceiling());
    if (result.firstError) ctx.note(`(m) [${ctx.backend}] first failure: ${result.firstError}`);
  } finally {
    await gateway.stop();
  }
}

/** (n): cold start to a 200 from /health and idle RSS, each the median of fresh starts. */
async function idle(ctx: MemoryContext): Promise<void> {
  const runs = memorySettings.coldStarts;
  ctx.progress(
    `(n) idle [${ctx.backend}]: ${runs} cold starts on fresh data dirs, RSS after ${memorySettings.idleSeconds} s idle…`,
  );
  const starts: number[] = [];
  const rss: number[] = [];
  for (let i = 0; i < runs; i++) {
    const one = await coldStart(join(ctx.dir, `idle-${i}`), ctx.storage, memorySettings.idleSeconds);
    starts.push(one.toHealthMs);
    rss.push(one.idleRssMiB);
  }
  const median = (values: number[]): number => percentile(values, 50);
  ctx.progress(
    `(n): cold start ${starts.map((v) => fmt(v, 0)).join(', ')} ms; idle RSS ${rss.map((v) => fmt(v)).join(', ')} MiB`,
  );
  figure(ctx, 'idle.cold_start_ms', `(n) cold start to a 200 from /health, median of ${runs}`, median(starts), 'ms', {
    op: '<=',
    value: targets.coldStartMs,
  });
  figure(ctx, 'idle.rss_mib', `(n) idle RSS after start, median of ${runs}`, median(rss), 'MiB', {
    op: '<=',
    value: targets.idleRssMiB,
  });
}

/** (k)–(n) on one store, those of `ctx.scenarios`. */
export async function memoryScenarios(ctx: MemoryContext): Promise<void> {
  if (ctx.scenarios.has('n')) await idle(ctx);
  if (ctx.scenarios.has('k')) await overload(ctx);
  if (ctx.scenarios.has('l')) await slow(ctx);
  if (ctx.scenarios.has('m')) await large(ctx);
}

/**
 * (o): memory per idle, authenticated, subscribed WebSocket client (its own gateway on SQLite). A run that
 * cannot finish (e.g. the gateway refusing the broadcast under load) is noted, and the other figures stand.
 */
export async function webSocketClientsScenario(
  progress: (line: string) => void,
  note: (line: string) => void,
): Promise<void> {
  const clients = memorySettings.wsClients;
  progress(`(o) ${clients} WebSocket clients…`);
  try {
    const result = await measureWebSocketClients({ clients, log: (line) => progress(`(o) ${line}`) });
    for (const f of webSocketClientFigures(result, 'sqlite')) record(f);
  } catch (err) {
    note(`(o) ${clients} WebSocket clients: not measured: ${(err as Error).message.split('\n')[0]}`);
    progress(`(o) failed: ${(err as Error).message}`);
  }
}
