import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { adminTokenPath } from '../src/security/admin-token.js';

/**
 * Child processes of the bench and of the end-to-end tests: `node` children
 * whose output is kept line by line, that announce a URL when they are
 * ready, start within a bound, and stop by signal with a SIGKILL fallback.
 * The built gateway (`node dist/src/main.js`) is one such child
 * (`spawnGateway`). Every child is tracked until it exits, so a failure can
 * kill them all (`stopAll`, `killAllNow`).
 */

/** The repository root: the nearest folder above this file holding package.json (from bench/ and dist/bench/). */
export const ROOT = findRoot(import.meta.dirname);
/** The built gateway's entry point. */
export const GATEWAY_MAIN = join(ROOT, 'dist', 'src', 'main.js');

function findRoot(from: string): string {
  for (let dir = from; ; dir = dirname(dir)) {
    if (existsSync(join(dir, 'package.json'))) return dir;
    if (dirname(dir) === dir) throw new Error(`no package.json above ${from}`);
  }
}

/** A running (or exited) child process. */
export interface Child {
  name: string;
  process: ChildProcess;
  pid: number;
  /** Lines written to stdout so far (the last `keepLines` of them). */
  stdout: string[];
  /** Lines written to stderr so far (the last `keepLines` of them). */
  stderr: string[];
  /** Resolves with the URL the child announced; rejects if it exits first or takes longer than `startTimeoutMs`. */
  ready: Promise<string>;
  /** Resolves with the exit code, or the signal name when a signal ended it. */
  exited: Promise<number | string>;
  /** Resolves with the first line of `stream` (already seen or still to come) that matches `pattern`. */
  line(stream: 'stdout' | 'stderr', pattern: RegExp): Promise<string>;
  /** The last output lines of both streams, interleaved, for error reports. */
  tail(): string;
  /**
   * Sends `signal` to the child's whole process group (spawned with `group`), as a supervisor stopping a
   * service does; without a group of its own, to the child alone. Returns at once: nothing waits for the reaping.
   */
  killGroup(signal: NodeJS.Signals): void;
}

/** How to spawn one `node` child. */
export interface SpawnOptions {
  name: string;
  /** Arguments of `node` (script first, or node flags then the script). */
  args: string[];
  cwd: string;
  env: NodeJS.ProcessEnv;
  /** Recognises the line announcing the child's URL (stdout or stderr). */
  findUrl: (line: string) => string | undefined;
  /** Bound on the start: `ready` rejects after it (default: unbounded). */
  startTimeoutMs?: number;
  /** `pipe` keeps stdin open (the bench's own servers exit when it closes); default `ignore`. */
  stdin?: 'pipe' | 'ignore';
  /** Lines kept per stream (default: all). */
  keepLines?: number;
  /** Runs the child as the leader of a process group of its own, so `killGroup` reaches all it started. */
  group?: boolean;
}

const children = new Set<Child>();
const TAIL_LINES = 40;

/** Spawns `node <args>`; every child is tracked until it exits. */
export function spawnNode(options: SpawnOptions): Child {
  const proc = spawn(process.execPath, options.args, {
    cwd: options.cwd,
    env: options.env,
    stdio: [options.stdin ?? 'ignore', 'pipe', 'pipe'],
    detached: options.group === true,
  });
  if (proc.pid === undefined) throw new Error(`${options.name}: spawn failed`);
  const keep = options.keepLines ?? Infinity;
  const stdout: string[] = [];
  const stderr: string[] = [];
  const recent: string[] = [];
  const waiters: Array<{ stream: 'stdout' | 'stderr'; pattern: RegExp; resolve: (line: string) => void }> = [];
  let resolveReady!: (url: string) => void;
  let rejectReady!: (err: Error) => void;
  const ready = new Promise<string>((res, rej) => {
    resolveReady = res;
    rejectReady = rej;
  });
  // Callers that only await `exited` must not see an unhandled rejection.
  ready.catch(() => undefined);
  const timer =
    options.startTimeoutMs === undefined
      ? undefined
      : setTimeout(
          () => rejectReady(new Error(`${options.name} did not start within ${options.startTimeoutMs} ms:\n${tail()}`)),
          options.startTimeoutMs,
        );
  const exited = new Promise<number | string>((res) => {
    proc.once('exit', (code, signal) => {
      clearTimeout(timer);
      const how = code ?? signal ?? -1;
      rejectReady(new Error(`${options.name} exited (${how}) before it was ready:\n${tail()}`));
      res(how);
    });
  });
  proc.once('error', (err) => rejectReady(new Error(`${options.name}: ${err.message}`)));
  proc.stdin?.on('error', () => undefined);

  function tail(): string {
    return recent.join('\n');
  }
  const onData = (stream: 'stdout' | 'stderr', sink: string[]) => {
    let buffer = '';
    return (chunk: Buffer) => {
      buffer += chunk.toString('utf8');
      let nl: number;
      while ((nl = buffer.indexOf('\n')) !== -1) {
        const line = buffer.slice(0, nl);
        buffer = buffer.slice(nl + 1);
        sink.push(line);
        if (sink.length > keep) sink.shift();
        recent.push(line);
        if (recent.length > TAIL_LINES) recent.shift();
        const url = options.findUrl(line);
        if (url !== undefined) {
          clearTimeout(timer);
          resolveReady(url);
        }
        for (const waiter of [...waiters]) {
          if (waiter.stream === stream && waiter.pattern.test(line)) {
            waiters.splice(waiters.indexOf(waiter), 1);
            waiter.resolve(line);
          }
        }
      }
    };
  };
  proc.stdout?.on('data', onData('stdout', stdout));
  proc.stderr?.on('data', onData('stderr', stderr));

  const child: Child = {
    name: options.name,
    process: proc,
    pid: proc.pid,
    stdout,
    stderr,
    ready,
    exited,
    line(stream, pattern) {
      const seen = (stream === 'stdout' ? stdout : stderr).find((line) => pattern.test(line));
      if (seen !== undefined) return Promise.resolve(seen);
      return new Promise((resolve) => waiters.push({ stream, pattern, resolve }));
    },
    tail,
    killGroup(signal) {
      try {
        if (options.group) process.kill(-proc.pid!, signal);
        else proc.kill(signal);
      } catch {
        // already gone
      }
    },
  };
  children.add(child);
  void exited.then(() => children.delete(child));
  return child;
}

/** The `{"url": …}` line the bench's own servers print. */
export function announcedUrl(line: string): string | undefined {
  try {
    const entry = JSON.parse(line) as { url?: unknown };
    return typeof entry.url === 'string' ? entry.url : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The gateway's URL: from its JSON "listening" log line on stdout (logged at
 * info), or from the "Gatehouse listening on …" line it always writes to
 * stderr (whatever `logs.level` is).
 */
export function gatewayUrl(line: string): string | undefined {
  try {
    const entry = JSON.parse(line) as { url?: unknown; message?: unknown };
    if (typeof entry.url === 'string' && typeof entry.message === 'string' && entry.message.startsWith('listening')) {
      return entry.url;
    }
  } catch {
    /* not JSON */
  }
  return /^Gatehouse listening on (http:\/\/\S+)/.exec(line)?.[1];
}

/** How to spawn the built gateway; the defaults suit a test. */
export interface GatewaySpawnOptions {
  name?: string;
  /** Working directory (default: the repository root). */
  cwd?: string;
  /** Added to a clean environment of PATH and TZ=UTC (nothing else leaks in, such as OPENAI_API_KEY). */
  env?: NodeJS.ProcessEnv;
  /** Flags of `node` itself, before the script (e.g. `--cpu-prof`). */
  nodeArgs?: string[];
  startTimeoutMs?: number;
  stdin?: 'pipe' | 'ignore';
  keepLines?: number;
  /** A process group of its own (see `SpawnOptions.group`). */
  group?: boolean;
}

/**
 * The flags of `node` the gateway runs with, as `npm start` and the `gatehouse` command start it (package.json's
 * start script and the shebang of src/main.ts; test/lint/node-flags.test.ts keeps the three equal): young
 * generation capped at 1 MiB per semi-space and one V8 worker thread, so idle RSS stays under 90 MB from the
 * start (ADR 0019).
 */
export const GATEWAY_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=1', '--v8-pool-size=1'];

/** Spawns `node <GATEWAY_NODE_FLAGS> dist/src/main.js <args>`; `ready` resolves with its base URL once it listens. */
export function spawnGateway(args: string[], options: GatewaySpawnOptions = {}): Child {
  return spawnNode({
    name: options.name ?? 'gateway',
    args: [...GATEWAY_NODE_FLAGS, ...(options.nodeArgs ?? []), GATEWAY_MAIN, ...args],
    cwd: options.cwd ?? ROOT,
    env: { PATH: process.env.PATH, TZ: 'UTC', ...options.env },
    findUrl: gatewayUrl,
    ...(options.startTimeoutMs !== undefined ? { startTimeoutMs: options.startTimeoutMs } : {}),
    ...(options.stdin !== undefined ? { stdin: options.stdin } : {}),
    ...(options.keepLines !== undefined ? { keepLines: options.keepLines } : {}),
    ...(options.group !== undefined ? { group: options.group } : {}),
  });
}

/**
 * Waits until GET `<url>/api/v1/health` answers 200 (polling every 50 ms, at
 * most `timeoutMs`); resolves with its body, rejects with the last answer.
 */
export async function waitForHealth(url: string, timeoutMs = 10_000): Promise<unknown> {
  const deadline = performance.now() + timeoutMs;
  let last = 'no answer';
  for (;;) {
    try {
      const res = await fetch(`${url}/api/v1/health`, { signal: AbortSignal.timeout(timeoutMs) });
      const text = await res.text();
      if (res.status === 200) return JSON.parse(text) as unknown;
      last = `HTTP ${res.status}: ${text.slice(0, 300)}`;
    } catch (err) {
      last = (err as Error).message;
    }
    if (performance.now() >= deadline) throw new Error(`gateway at ${url} not healthy within ${timeoutMs} ms: ${last}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** The admin token the gateway generated on its first start in `dataDir` (read from its 0600 file). */
export function readAdminToken(dataDir: string): string {
  return readFileSync(adminTokenPath(dataDir), 'utf8').trim();
}

/**
 * Stops one child: sends `signal` (default SIGTERM), then SIGKILL if it is
 * still running after `graceMs`. Resolves with its exit code or signal name
 * (`'SIGKILL'` tells that the grace ran out).
 */
export async function stopChild(
  child: Child,
  graceMs: number,
  signal: NodeJS.Signals = 'SIGTERM',
): Promise<number | string> {
  if (child.process.exitCode !== null || child.process.signalCode !== null) return child.exited;
  child.process.stdin?.end();
  child.process.kill(signal);
  const timer = setTimeout(() => child.process.kill('SIGKILL'), graceMs);
  try {
    return await child.exited;
  } finally {
    clearTimeout(timer);
  }
}

/** Stops every child still running (on the way out, also after a failure). */
export async function stopAll(graceMs: number): Promise<void> {
  await Promise.all([...children].map((child) => stopChild(child, graceMs)));
}

/** Last resort (synchronous: `process.on('exit')`, a test's afterEach): SIGKILL every child still running. */
export function killAllNow(): void {
  for (const child of children) {
    if (child.process.exitCode === null && child.process.signalCode === null) child.killGroup('SIGKILL');
  }
}
