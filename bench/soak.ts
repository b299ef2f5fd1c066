import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import WebSocket from 'ws';
import { spawnGateway, stopChild } from './processes.js';

/**
 * `npm run soak`: memory over long uptime. Runs waited turns (the offline
 * `echo` provider) at a steady rate across many sessions for
 * `SOAK_MINUTES`, and every `SOAK_REPORT_SECONDS` prints the gateway's RSS
 * and its V8 heap right after a full garbage collection (asked for through
 * the inspector protocol, so the product carries no hook for it). A report,
 * not a test: the last lines compare the heap after the warm-up with the end.
 *
 * SOAK_MINUTES (30), SOAK_RATE turns/s (50), SOAK_SESSIONS (200), SOAK_REPORT_SECONDS (30),
 * SOAK_WARMUP_SECONDS (60).
 */

const TOKEN = 'soak-token';

function envNumber(name: string, fallback: number): number {
  const raw = process.env[name];
  const value = raw === undefined || raw.trim() === '' ? fallback : Number(raw);
  if (!Number.isFinite(value) || value <= 0) throw new Error(`${name} must be a positive number`);
  return value;
}

const minutes = envNumber('SOAK_MINUTES', 30);
const rate = envNumber('SOAK_RATE', 50);
const sessions = Math.floor(envNumber('SOAK_SESSIONS', 200));
const reportSeconds = envNumber('SOAK_REPORT_SECONDS', 30);
const warmupSeconds = envNumber('SOAK_WARMUP_SECONDS', 60);

/** A minimal Chrome DevTools Protocol client over the inspector's WebSocket. */
async function inspector(url: string) {
  const socket = new WebSocket(url);
  await new Promise<void>((resolve, reject) => {
    socket.once('open', () => resolve());
    socket.once('error', reject);
  });
  let id = 0;
  const pending = new Map<number, (result: unknown) => void>();
  socket.on('message', (data: Buffer) => {
    const message = JSON.parse(data.toString('utf8')) as { id?: number; result?: unknown };
    if (message.id !== undefined) pending.get(message.id)?.(message.result);
  });
  const send = (method: string): Promise<unknown> =>
    new Promise((resolve) => {
      const n = ++id;
      pending.set(n, (result) => {
        pending.delete(n);
        resolve(result);
      });
      socket.send(JSON.stringify({ id: n, method }));
    });
  return {
    /** Used V8 heap in bytes right after a full collection. */
    async heapAfterGc(): Promise<number> {
      await send('HeapProfiler.collectGarbage');
      const usage = (await send('Runtime.getHeapUsage')) as { usedSize: number };
      return usage.usedSize;
    },
    close: () => socket.close(),
  };
}

function rssMiB(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8')
    .split('\n')
    .find((l) => l.startsWith('VmRSS:'));
  return Number(line?.replace(/\D+/g, '') ?? 0) / 1024;
}

const mib = (bytes: number) => (bytes / 1024 / 1024).toFixed(1);

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-soak-'));
  const configPath = join(dir, 'gatehouse.yaml');
  writeFileSync(
    configPath,
    JSON.stringify({
      data_dir: join(dir, 'data'),
      gateway: { port: 0, auth: { api_tokens: [TOKEN], admin_tokens: ['soak-admin'] } },
      security: { rate_limits: { read: 1_000_000, write: 1_000_000 } },
      logs: { level: 'warning' },
    }),
  );
  const gateway = spawnGateway(['--config', configPath], {
    name: 'gateway',
    nodeArgs: ['--inspect=127.0.0.1:0'],
    startTimeoutMs: 15_000,
  });
  const url = await gateway.ready;
  const debuggerLine = await gateway.line('stderr', /Debugger listening on (ws:\/\/\S+)/);
  const cdp = await inspector(/Debugger listening on (ws:\/\/\S+)/.exec(debuggerLine)![1]!);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });
  const target = new URL(url);

  let sent = 0;
  let done = 0;
  let failed = 0;
  let inFlight = 0;
  const send = (n: number): void => {
    const body = JSON.stringify({
      platform: 'soak',
      user_id: 'u',
      chat_id: `c${n % sessions}`,
      text: `soak ${n}`,
      wait: true,
    });
    inFlight++;
    const req = http.request(
      {
        host: target.hostname,
        port: target.port,
        path: '/api/v1/message',
        method: 'POST',
        agent,
        headers: {
          'content-type': 'application/json',
          'x-api-token': TOKEN,
          'content-length': Buffer.byteLength(body),
        },
      },
      (res) => {
        res.resume();
        res.on('end', () => {
          inFlight--;
          if (res.statusCode === 200) done++;
          else failed++;
        });
      },
    );
    req.on('error', () => {
      inFlight--;
      failed++;
    });
    req.end(body);
  };

  const start = performance.now();
  const endAt = start + minutes * 60_000;
  const pacer = setInterval(() => {
    const due = Math.floor(((performance.now() - start) / 1000) * rate);
    while (sent < due && inFlight < 1_000) send(sent++);
  }, 10);

  const samples: Array<{ seconds: number; heap: number; rss: number }> = [];
  process.stdout.write(
    `soak: ${minutes} min at ${rate} waited turns/s over ${sessions} sessions (pid ${gateway.pid})\n`,
  );
  process.stdout.write('   time   turns   failed   rss MiB   heap after GC MiB\n');
  for (;;) {
    const next = Math.min(endAt, performance.now() + reportSeconds * 1000);
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, next - performance.now())));
    const heap = await cdp.heapAfterGc();
    const rss = rssMiB(gateway.pid);
    const seconds = Math.round((performance.now() - start) / 1000);
    samples.push({ seconds, heap, rss });
    process.stdout.write(
      `${String(seconds).padStart(6)} s ${String(done).padStart(7)} ${String(failed).padStart(8)} ${rss.toFixed(1).padStart(9)} ${mib(heap).padStart(19)}\n`,
    );
    if (performance.now() >= endAt) break;
  }
  clearInterval(pacer);
  const base = samples.find((s) => s.seconds >= warmupSeconds) ?? samples[0]!;
  const last = samples.at(-1)!;
  process.stdout.write(
    `\nheap after full GC: ${mib(base.heap)} MiB at ${base.seconds} s → ${mib(last.heap)} MiB at ${last.seconds} s ` +
      `(${last.heap >= base.heap ? '+' : ''}${mib(last.heap - base.heap)} MiB); RSS ${base.rss.toFixed(1)} → ${last.rss.toFixed(1)} MiB; ` +
      `${done} turns, ${failed} failed, ${(done / (last.seconds || 1)).toFixed(1)} turns/s\n`,
  );
  cdp.close();
  agent.destroy();
  await stopChild(gateway, 30_000, 'SIGTERM');
  rmSync(dir, { recursive: true, force: true });
}

main().catch((err: unknown) => {
  process.stderr.write(`soak: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
