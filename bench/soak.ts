import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import WebSocket from 'ws';
import {
  Flood,
  floodLine,
  inspector,
  largeToolTurns,
  PRESSURE_TOKEN,
  RssSampler,
  slowConsumers,
  startPressureGateway,
  totals,
  waitedTurnCapacity,
  type PressureGateway,
} from './pressure.js';
import { memoryMiB } from './proc-stats.js';
import { killAllNow, ROOT } from './processes.js';
import {
  memoryChartSvg,
  samplesCsv,
  summarize,
  summaryLines,
  type FloodWindow,
  type SoakSample,
} from './soak-report.js';

/**
 * `npm run soak`: memory over long uptime under a mixed profile (bench/README.md):
 *
 * - waited turns at a steady rate over many sessions;
 * - WebSocket clients following streamed replies, one after another;
 * - every so often, slow consumers: SSE and WebSocket clients that never read
 *   while long replies stream (the gateway should close them);
 * - turns whose tool returns 1 MB (an MCP stdio server of the bench);
 * - a flood every few minutes: 10× the measured capacity for half a minute
 *   (the gateway should refuse what it cannot take, with Retry-After).
 *
 * Every SOAK_REPORT_SECONDS it reads the gateway's RSS and its V8 heap right
 * after a full garbage collection (asked for through the inspector protocol,
 * so the product carries no hook for it). At the end it writes them as CSV
 * and as an SVG chart (flood windows shaded) into SOAK_OUT_DIR and prints a
 * summary: start, end and peak of each, the heap's slope (least squares, MiB
 * per hour), refusals and slow clients closed. A report, not a test.
 */

function envNumber(name: string, fallback: number): number {
  const raw = process.env[name];
  const value = raw === undefined || raw.trim() === '' ? fallback : Number(raw);
  if (!Number.isFinite(value) || value < 0) throw new Error(`${name} must be a number ≥ 0`);
  return value;
}

const minutes = envNumber('SOAK_MINUTES', 30);
const settings = {
  minutes,
  rate: envNumber('SOAK_RATE', 20),
  sessions: Math.max(1, Math.floor(envNumber('SOAK_SESSIONS', 200))),
  reportSeconds: envNumber('SOAK_REPORT_SECONDS', minutes <= 10 ? 10 : 30) || 30,
  warmupSeconds: envNumber('SOAK_WARMUP_SECONDS', 60),
  wsClients: Math.floor(envNumber('SOAK_WS_CLIENTS', 8)),
  wsReplyBytes: Math.floor(envNumber('SOAK_WS_REPLY_BYTES', 20_000)),
  slowEverySeconds: envNumber('SOAK_SLOW_EVERY_SECONDS', 120),
  slowFirstSeconds: envNumber('SOAK_SLOW_FIRST_SECONDS', 30),
  slowSse: Math.floor(envNumber('SOAK_SLOW_SSE', 8)),
  slowWs: Math.floor(envNumber('SOAK_SLOW_WS', 2)),
  slowReplyBytes: Math.floor(envNumber('SOAK_SLOW_REPLY_BYTES', 6_000_000)),
  toolEverySeconds: envNumber('SOAK_TOOL_EVERY_SECONDS', 10),
  toolBytes: Math.floor(envNumber('SOAK_TOOL_BYTES', 1_000_000)),
  floodEveryMinutes: envNumber('SOAK_FLOOD_EVERY_MINUTES', 5),
  floodFirstSeconds: envNumber('SOAK_FLOOD_FIRST_SECONDS', 60),
  floodSeconds: envNumber('SOAK_FLOOD_SECONDS', 30),
  floodFactor: envNumber('SOAK_FLOOD_FACTOR', 10),
  modelDelayMs: Math.floor(envNumber('SOAK_MODEL_DELAY_MS', 50)),
  capacity: envNumber('SOAK_CAPACITY', 0),
  outDir: resolve(
    process.env.INIT_CWD ?? process.cwd(),
    process.env.SOAK_OUT_DIR?.trim() || join(ROOT, 'docs', 'soak'),
  ),
};

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const log = (line: string): void => {
  process.stdout.write(`${line}\n`);
};

/** What the soak counts as it goes. */
const counts = { turns: 0, failed: 0, shed: 0, slowClosed: 0, slowClients: 0, wsTurns: 0, toolTurns: 0, toolFailed: 0 };
let firstFailure: string | undefined;

/** Waited turns at `settings.rate` across the sessions, until `stopped()`. */
function steadyTurns(gateway: PressureGateway, stopped: () => boolean): Promise<void> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });
  const target = new URL(gateway.url);
  let sent = 0;
  let inFlight = 0;
  const send = (n: number): void => {
    const body = JSON.stringify({
      platform: 'soak',
      user_id: 'u',
      chat_id: `c${n % settings.sessions}`,
      text: `soak ${n}`,
    });
    inFlight++;
    const req = http.request(
      {
        host: target.hostname,
        port: target.port,
        path: '/api/v1/message?wait=true&timeout_seconds=60',
        method: 'POST',
        agent,
        headers: {
          'content-type': 'application/json',
          'x-api-token': PRESSURE_TOKEN,
          'content-length': Buffer.byteLength(body),
        },
      },
      (res) => {
        res.resume();
        res.on('end', () => {
          inFlight--;
          if (res.statusCode === 200) counts.turns++;
          else if (res.statusCode === 503 || res.statusCode === 429) counts.shed++;
          else {
            counts.failed++;
            firstFailure ??= `steady turn → HTTP ${res.statusCode}`;
          }
        });
      },
    );
    req.on('error', (err) => {
      inFlight--;
      counts.failed++;
      firstFailure ??= `steady turn → ${err.message}`;
    });
    req.end(body);
  };
  const start = performance.now();
  return new Promise((done) => {
    const pacer = setInterval(() => {
      if (stopped()) {
        clearInterval(pacer);
        const wait = setInterval(() => {
          if (inFlight === 0) {
            clearInterval(wait);
            agent.destroy();
            done();
          }
        }, 50);
        return;
      }
      const due = Math.floor(((performance.now() - start) / 1000) * settings.rate);
      while (sent < due && inFlight < 1_000) send(sent++);
      // Offers the in-flight cap held back are dropped, not sent in a burst later.
      sent = Math.max(sent, due - Math.ceil(settings.rate));
    }, 10);
  });
}

/** One WebSocket client following streamed replies, one turn after another, until `stopped()`. */
async function streamingClient(gateway: PressureGateway, i: number, stopped: () => boolean): Promise<void> {
  const text = `reply=long bytes=${settings.wsReplyBytes} chunk=1000 interval=5`;
  while (!stopped()) {
    const socket = new WebSocket(
      `${gateway.url.replace(/^http/, 'ws')}/api/v1/ws?token=${PRESSURE_TOKEN}&platform=soak&user_id=u&chat_id=stream${i}`,
    );
    socket.on('error', () => undefined);
    await new Promise<void>((done) => {
      let n = 0;
      const next = (): void => {
        if (stopped()) socket.close();
        else socket.send(JSON.stringify({ type: 'message', text, ref: `s${n++}` }));
      };
      socket.on('message', (data: Buffer) => {
        const frame = JSON.parse(data.toString('utf8')) as { type?: string; error?: { code?: string } };
        if (frame.type === 'auth_ok') next();
        else if (frame.type === 'final') {
          counts.wsTurns++;
          next();
        } else if (frame.type === 'error') {
          const code = frame.error?.code ?? '';
          if (code === 'UNAVAILABLE' || code === 'RATE_LIMITED') counts.shed++;
          else {
            counts.failed++;
            firstFailure ??= `streaming client: error frame ${code}`;
          }
          setTimeout(next, 1_000);
        }
      });
      socket.once('close', () => done());
    });
    if (!stopped()) await sleep(1_000);
  }
}

/**
 * Repeats `task` every `everySeconds` (from `firstSeconds`), one at a time, until `stopped()`. A task that
 * throws is counted as a failure and the next one runs on time.
 */
async function every(
  everySeconds: number,
  firstSeconds: number,
  start: number,
  stopped: () => boolean,
  task: () => Promise<void>,
): Promise<void> {
  if (everySeconds <= 0) return;
  let next = start + firstSeconds * 1000;
  for (;;) {
    while (performance.now() < next) {
      if (stopped()) return;
      await sleep(Math.min(250, next - performance.now()));
    }
    if (stopped()) return;
    await task().catch((err: Error) => {
      counts.failed++;
      firstFailure ??= err.message;
      log(`  failed: ${err.message}`);
    });
    next += everySeconds * 1000;
  }
}

/** The gateway's capacity of waited turns on the slow model (turns/s answered 200), over 5 s at 32 in flight. */
async function measureCapacity(gateway: PressureGateway): Promise<number> {
  return waitedTurnCapacity(gateway.url, `delay=${settings.modelDelayMs}`, 1_000, 5_000);
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-soak-'));
  process.once('exit', killAllNow);
  const gateway = await startPressureGateway({
    dir,
    name: 'gateway',
    storage: { driver: 'sqlite' },
    nodeArgs: ['--inspect=127.0.0.1:0'],
  });
  const debuggerLine = await gateway.child.line('stderr', /Debugger listening on (ws:\/\/\S+)/);
  const cdp = await inspector(/Debugger listening on (ws:\/\/\S+)/.exec(debuggerLine)![1]!);
  const sampler = new RssSampler(gateway.child.pid, 1_000).start();
  const floods: FloodWindow[] = [];
  const samples: SoakSample[] = [];
  try {
    const capacity = settings.capacity > 0 ? settings.capacity : await measureCapacity(gateway);
    log(
      `soak: ${settings.minutes} min, pid ${gateway.child.pid}; ${settings.rate} waited turns/s over ${settings.sessions} sessions, ` +
        `${settings.wsClients} WebSocket clients following ${settings.wsReplyBytes}-byte streamed replies, ` +
        `every ${settings.slowEverySeconds} s from ${settings.slowFirstSeconds} s ${settings.slowSse} SSE + ${settings.slowWs} WebSocket clients that never read ` +
        `(${(settings.slowReplyBytes / 1e6).toFixed(1)} MB replies), every ${settings.toolEverySeconds} s a turn with a ` +
        `${(settings.toolBytes / 1e6).toFixed(1)} MB tool result, a ${settings.floodSeconds} s flood of ` +
        `${settings.floodFactor}× capacity (${capacity.toFixed(0)} turns/s) every ${settings.floodEveryMinutes} min from ` +
        `${settings.floodFirstSeconds} s`,
    );
    log('   time   turns  ws turns  shed  slow closed   rss MiB   heap after GC MiB   rss peak MiB');

    const start = performance.now();
    const endAt = start + settings.minutes * 60_000;
    const stopped = (): boolean => performance.now() >= endAt || gatewayGone(gateway);
    let flooding = false;
    const tasks: Array<Promise<void>> = [
      steadyTurns(gateway, stopped),
      ...Array.from({ length: settings.wsClients }, (_, i) => streamingClient(gateway, i, stopped)),
      every(settings.slowEverySeconds, settings.slowFirstSeconds, start, stopped, async () => {
        const wave = samples.length;
        const result = await slowConsumers({
          url: gateway.url,
          sse: settings.slowSse,
          ws: settings.slowWs,
          replyBytes: settings.slowReplyBytes,
          chunkBytes: 65_536,
          intervalMs: 0,
          prefix: `slow${wave}-${Math.round(performance.now())}`,
          timeoutMs: 120_000,
        }).catch((err: Error) => {
          counts.failed++;
          firstFailure ??= `slow consumers: ${err.message}`;
          return undefined;
        });
        if (result) {
          counts.slowClients += result.sse.clients + result.ws.clients - result.sse.refused - result.ws.refused;
          counts.slowClosed += result.sse.closed + result.ws.closed;
        }
      }),
      every(settings.toolEverySeconds, settings.toolEverySeconds, start, stopped, async () => {
        const result = await largeToolTurns(gateway.url, 1, settings.toolBytes, `tool${Math.round(performance.now())}`);
        counts.toolTurns += result.completed;
        counts.toolFailed += result.failed;
        counts.shed += result.refused;
        if (result.firstError) firstFailure ??= `tool turn: ${result.firstError}`;
      }),
      every(settings.floodEveryMinutes * 60, settings.floodFirstSeconds, start, stopped, async () => {
        const seconds = Math.min(settings.floodSeconds, (endAt - performance.now()) / 1000);
        if (seconds <= 1) return;
        const window: FloodWindow = { start: (performance.now() - start) / 1000, end: NaN };
        flooding = true;
        const flood = new Flood({
          url: gateway.url,
          rate: capacity * settings.floodFactor,
          seconds,
          maxInFlight: 4000,
          wsConnections: 64,
          sessions: 2000,
          text: `delay=${settings.modelDelayMs}`,
          prefix: `flood${floods.length}`,
        });
        floods.push(window);
        try {
          await flood.run();
        } finally {
          window.end = (performance.now() - start) / 1000;
          flooding = false;
        }
        const result = await flood.finish(60_000);
        counts.shed += totals(result).refused;
        log(`  flood ${floods.length} (${window.start.toFixed(0)}–${window.end.toFixed(0)} s): ${floodLine(result)}`);
      }),
    ];

    for (;;) {
      const next = Math.min(endAt, performance.now() + settings.reportSeconds * 1000);
      while (performance.now() < next && !gatewayGone(gateway)) await sleep(Math.min(250, next - performance.now()));
      if (gatewayGone(gateway)) throw new Error(`the gateway exited\n--- its output ---\n${gateway.child.tail()}`);
      const rssPeakMiB = sampler.takeIntervalPeak();
      const heapMiB = await cdp.heapAfterGcMiB();
      const rssMiB = memoryMiB(gateway.child.pid, 'VmRSS');
      const seconds = (performance.now() - start) / 1000;
      samples.push({
        seconds,
        rssMiB,
        heapMiB,
        rssPeakMiB,
        flood: flooding,
        turns: counts.turns,
        shed: counts.shed,
        slowClosed: counts.slowClosed,
      });
      log(
        `${seconds.toFixed(0).padStart(6)} s ${String(counts.turns).padStart(7)} ${String(counts.wsTurns).padStart(9)} ` +
          `${String(counts.shed).padStart(5)} ${String(counts.slowClosed).padStart(12)} ${rssMiB.toFixed(1).padStart(9)} ` +
          `${heapMiB.toFixed(1).padStart(19)} ${rssPeakMiB.toFixed(1).padStart(14)}${flooding ? '  (flood)' : ''}`,
      );
      if (performance.now() >= endAt) break;
    }
    log('soak: window over; waiting for the work still in flight…');
    await Promise.race([Promise.all(tasks), sleep(180_000)]);
    for (const window of floods) if (!Number.isFinite(window.end)) window.end = samples.at(-1)!.seconds;

    const summary = summarize(
      samples,
      settings.warmupSeconds,
      Math.max(sampler.stop(), memoryMiB(gateway.child.pid, 'VmHWM')),
    );
    mkdirSync(settings.outDir, { recursive: true });
    writeFileSync(join(settings.outDir, 'soak.csv'), samplesCsv(samples));
    writeFileSync(
      join(settings.outDir, 'soak.svg'),
      memoryChartSvg(samples, floods, {
        title: `Gatehouse soak: RSS and heap after full GC, ${settings.minutes} min mixed load (floods shaded)`,
      }),
    );
    log('');
    for (const line of summaryLines(summary)) log(line);
    log(
      `  WebSocket streamed turns ${counts.wsTurns}; tool turns ${counts.toolTurns} completed, ${counts.toolFailed} failed; ` +
        `slow clients ${counts.slowClosed} closed of ${counts.slowClients}; other failures ${counts.failed}` +
        `${firstFailure ? ` (first: ${firstFailure})` : ''}`,
    );
    log(`  written: ${join(settings.outDir, 'soak.csv')}, ${join(settings.outDir, 'soak.svg')}`);
  } finally {
    cdp.close();
    sampler.stop();
    await gateway.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

function gatewayGone(gateway: PressureGateway): boolean {
  return gateway.child.process.exitCode !== null || gateway.child.process.signalCode !== null;
}

main().catch((err: unknown) => {
  process.stderr.write(`soak: ${(err as Error).stack ?? String(err)}\n`);
  killAllNow();
  process.exit(1);
});
