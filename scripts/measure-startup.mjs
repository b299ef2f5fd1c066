// Start-up figures of the built gateway (ADR 0044), as a user meets them: each a whole `node` process with the
// flags of `npm start`, on a fresh data dir.
//
//   node scripts/measure-startup.mjs [--runs N] [--pg URL --redis URL] [--json]
//
// - cold start: spawn → the first 200 from GET /api/v1/health (polled every 5 ms), median of N runs;
// - idle RSS: the gateway's resident set 5 s and 15 s after that 200 (no request in between);
// - the client commands: `--version`, `--help`, `status`, `token show`, `logs` (against the running
//   gateway), spawn → exit, median of N runs;
// - import time of the server's modules alone (`dist/src/gateway.js`, tsc's output) against a bare `node`.
// With --pg ADMIN_URL (and --redis URL) the gateway runs on a fresh PostgreSQL database (with the Redis bus).
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const MAIN = join(root, 'dist', 'src', 'main.js');
const FLAGS = ['--max-semi-space-size=1', '--v8-pool-size=1'];
const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '5' },
    pg: { type: 'string' },
    redis: { type: 'string' },
    json: { type: 'boolean', default: false },
  },
});
const runs = Number(values.runs);
const env = { PATH: process.env.PATH, TZ: 'UTC' };

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const rssMb = (pid) => {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8').match(/^VmRSS:\s+(\d+) kB/m);
  return line ? Number(line[1]) / 1024 : NaN;
};
/** CPU time (user + system) a process has used so far: less disturbed than wall time on a busy machine. */
const cpuMs = (pid) => {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100; // utime, stime in clock ticks (USER_HZ 100)
};
/** Gateways still running: killed if the script fails half-way. */
const running = new Set();
/** PostgreSQL databases made for a run and not yet dropped. */
const databases = new Set();
process.on('exit', () => {
  for (const child of running) child.kill('SIGKILL');
  for (const database of databases) psql(`drop database if exists ${database} with (force)`);
});
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/** Starts a gateway on a fresh data dir; resolves once /health answered 200, with the time that took. */
async function startGateway(index) {
  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-startup-'));
  const port = await freePort();
  const config = { data_dir: join(dir, 'data'), gateway: { host: '127.0.0.1', port } };
  let database = null;
  if (values.pg) {
    database = `gatehouse_startup_${process.pid}_${index}`;
    psql(`create database ${database}`);
    databases.add(database);
    const url = new URL(values.pg);
    url.pathname = `/${database}`;
    config.storage = { driver: 'postgres', url: url.href };
  }
  if (values.redis) config.bus = { driver: 'redis', url: values.redis, namespace: `startup-${process.pid}-${index}` };
  writeFileSync(join(dir, 'gatehouse.yaml'), JSON.stringify(config));
  const started = performance.now();
  const child = spawn(process.execPath, [...FLAGS, MAIN, '--config', join(dir, 'gatehouse.yaml')], {
    cwd: dir,
    env,
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (chunk) => (stderr += chunk));
  running.add(child);
  child.once('exit', () => running.delete(child));
  const url = `http://127.0.0.1:${port}`;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`the gateway exited (${child.exitCode}):\n${stderr}`);
    try {
      const res = await fetch(`${url}/api/v1/health`);
      await res.arrayBuffer();
      if (res.status === 200) break;
    } catch {
      /* not listening yet */
    }
    if (performance.now() - started > 30_000) throw new Error(`no 200 from /health within 30 s:\n${stderr}`);
    await sleep(5);
  }
  const ms = performance.now() - started;
  return { child, dir, url, ms, cpuMs: cpuMs(child.pid), database };
}

/** Runs one statement on the PostgreSQL server of --pg (its admin URL). */
function psql(statement) {
  const run = spawnSync('psql', [values.pg, '-qc', statement], { encoding: 'utf8' });
  if (run.status !== 0) throw new Error(`psql: ${statement}: ${run.stderr}`);
}

async function stop(gateway) {
  const exited = new Promise((resolve) => gateway.child.once('exit', resolve));
  gateway.child.kill('SIGTERM');
  await exited;
  if (gateway.database) {
    psql(`drop database if exists ${gateway.database} with (force)`);
    databases.delete(gateway.database);
  }
  rmSync(gateway.dir, { recursive: true, force: true });
}

/** Runs `node <flags> <args>` to its end: wall and CPU milliseconds (CPU from GNU time's report). */
function timeNode(args, cwd = root) {
  const started = performance.now();
  const run = spawnSync('/usr/bin/time', ['-f', 'cpu %U %S', process.execPath, ...FLAGS, ...args], {
    cwd,
    env,
    encoding: 'utf8',
  });
  const ms = performance.now() - started;
  if (run.status !== 0) throw new Error(`node ${args.join(' ')} exited ${run.status}:\n${run.stderr}`);
  const [, user, sys] = run.stderr.match(/cpu ([\d.]+) ([\d.]+)\s*$/) ?? [];
  return { ms, cpuMs: (Number(user) + Number(sys)) * 1000 };
}

const timeCommand = (args, cwd) => timeNode([MAIN, ...args], cwd);

/** Median wall and CPU milliseconds of `runs` runs. */
function medians(samples) {
  return { ms: Math.round(median(samples.map((s) => s.ms))), cpu_ms: Math.round(median(samples.map((s) => s.cpuMs))) };
}

const figures = { runs, store: values.pg ? 'postgres' : 'sqlite', bus: values.redis ? 'redis' : 'local' };

// Cold start and idle RSS.
const starts = [];
const startCpu = [];
const rss5 = [];
const rss15 = [];
let kept = null;
for (let i = 0; i < runs; i++) {
  const gateway = await startGateway(i);
  starts.push(gateway.ms);
  startCpu.push(gateway.cpuMs);
  if (i < 2) {
    await sleep(5_000);
    rss5.push(rssMb(gateway.child.pid));
    await sleep(10_000);
    rss15.push(rssMb(gateway.child.pid));
  }
  if (i === runs - 1) kept = gateway;
  else await stop(gateway);
}
figures.cold_start_ms = {
  median: Math.round(median(starts)),
  all: starts.map(Math.round),
  cpu_median: median(startCpu),
};
figures.idle_rss_mb = { after_5s: rss5.map((x) => +x.toFixed(1)), after_15s: rss15.map((x) => +x.toFixed(1)) };

// The client commands, against the last gateway (its data dir holds the admin token they read).
const config = join(kept.dir, 'gatehouse.yaml');
const commands = {
  '--version': ['--version'],
  '--help': ['--help'],
  status: ['status', '--config', config],
  'token show': ['token', 'show', '--config', config],
  logs: ['logs', '--config', config, '--limit', '5'],
};
figures.cli_ms = {};
for (const [name, args] of Object.entries(commands)) {
  const times = [];
  for (let i = 0; i < runs; i++) times.push(timeCommand(args, kept.dir));
  figures.cli_ms[name] = medians(times);
}
await stop(kept);

// Module loading alone.
const bare = [];
const gatewayImport = [];
const gatewayUrl = pathToFileURL(join(root, 'dist', 'src', 'gateway.js')).href;
for (let i = 0; i < runs; i++) {
  bare.push(timeNode(['-e', '0']));
  gatewayImport.push(timeNode(['--input-type=module', '-e', `await import(${JSON.stringify(gatewayUrl)})`]));
}
figures.node_bare_ms = medians(bare);
// The bundled server (ADR 0044): the chunk `gatehouse serve` loads, with everything it imports.
const metaFile = join(root, 'dist', 'bundle', 'meta.json');
if (existsSync(metaFile)) {
  const outputs = Object.keys(JSON.parse(readFileSync(metaFile, 'utf8')).outputs);
  const serveChunk = outputs.find((file) => /\/serve\.run-[^/]*\.js$/.test(file));
  if (serveChunk) {
    const chunkUrl = pathToFileURL(join(root, serveChunk)).href;
    const bundled = [];
    for (let i = 0; i < runs; i++) {
      bundled.push(timeNode(['--input-type=module', '-e', `await import(${JSON.stringify(chunkUrl)})`]));
    }
    figures.import_bundled_server_ms = medians(bundled);
  }
}
figures.import_gateway_tsc_ms = medians(gatewayImport);

if (values.json) process.stdout.write(`${JSON.stringify(figures)}\n`);
else {
  const f = figures;
  process.stdout.write(
    `store ${f.store}, bus ${f.bus}, ${runs} runs (medians)\n` +
      `  cold start to 200 /health  ${f.cold_start_ms.median} ms  (${f.cold_start_ms.all.join(', ')}), CPU ${f.cold_start_ms.cpu_median} ms\n` +
      `  idle RSS after 5 s         ${f.idle_rss_mb.after_5s.join(', ')} MB\n` +
      `  idle RSS after 15 s        ${f.idle_rss_mb.after_15s.join(', ')} MB\n` +
      Object.entries(f.cli_ms)
        .map(([name, t]) => `  gatehouse ${name.padEnd(16)} ${t.ms} ms (CPU ${t.cpu_ms} ms)\n`)
        .join('') +
      `  node -e 0                  ${f.node_bare_ms.ms} ms (CPU ${f.node_bare_ms.cpu_ms} ms)\n` +
      `  import dist/src/gateway.js ${f.import_gateway_tsc_ms.ms} ms (CPU ${f.import_gateway_tsc_ms.cpu_ms} ms)\n` +
      (f.import_bundled_server_ms
        ? `  import the bundled server  ${f.import_bundled_server_ms.ms} ms (CPU ${f.import_bundled_server_ms.cpu_ms} ms)\n`
        : ''),
  );
}
