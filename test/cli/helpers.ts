/**
 * Helpers for the command line's tests: they run the built binary (`node dist/src/main.js …`, as the `gatehouse`
 * command runs) as a subprocess with a clean environment, in a temp dir of their own. `npm test` builds first;
 * run `npm run build` before running these files alone.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GATEWAY_MAIN, GATEWAY_NODE_FLAGS, spawnGateway, type Child } from '../../bench/processes.js';

if (!existsSync(GATEWAY_MAIN)) throw new Error(`${GATEWAY_MAIN} is missing: run npm run build first`);

/** How a run of the command ended. */
export interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Options of `gatehouse`. */
export interface RunOptions {
  /** Working directory (default: a fresh temp dir). */
  cwd?: string;
  /** Added to a clean environment of PATH and TZ=UTC (nothing of the test runner's leaks in). */
  env?: NodeJS.ProcessEnv;
  /** Written to standard input, which is then closed (default: nothing, closed at once). */
  input?: string;
  timeoutMs?: number;
}

const dirs = new Set<string>();

/** A fresh temp dir, removed by `removeTempDirs`. */
export function tempDir(prefix = 'gatehouse-cli-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  dirs.add(dir);
  return dir;
}

/** Removes every dir `tempDir` made (afterAll / afterEach, once the processes in them are stopped). */
export function removeTempDirs(): void {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
  dirs.clear();
}

/** The environment a command runs with: PATH, TZ and `extra`, nothing else. */
export function cleanEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  return { PATH: process.env.PATH, TZ: 'UTC', ...extra };
}

/** Runs `gatehouse <args>` to its end (bounded) and resolves with its exit code and output. */
export function gatehouse(args: string[], options: RunOptions = {}): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...GATEWAY_NODE_FLAGS, GATEWAY_MAIN, ...args], {
      cwd: options.cwd ?? tempDir(),
      env: cleanEnv(options.env),
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    child.stdin.on('error', () => undefined);
    child.stdin.end(options.input ?? '');
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`gatehouse ${args.join(' ')} did not end within ${options.timeoutMs ?? 15_000} ms:\n${stderr}`));
    }, options.timeoutMs ?? 15_000);
    child.once('error', reject);
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** True when `script` (util-linux) can give a command a pseudo-terminal here. */
export const HAS_SCRIPT =
  process.platform === 'linux' && spawnSync('script', ['--version'], { stdio: 'ignore' }).status === 0;

/**
 * Runs `gatehouse <args>` on a pseudo-terminal (through `script`), so standard input and output are TTYs, with
 * `input` typed ahead; resolves with everything the terminal showed (ANSI codes and echo included).
 */
export function gatehouseOnTerminal(args: string[], options: RunOptions = {}): Promise<Run> {
  const quote = (s: string): string => `'${s.replace(/'/g, `'\\''`)}'`;
  const command = [process.execPath, ...GATEWAY_NODE_FLAGS, GATEWAY_MAIN, ...args].map(quote).join(' ');
  return new Promise((resolve, reject) => {
    const child = spawn('script', ['-qfec', command, '/dev/null'], {
      cwd: options.cwd ?? tempDir(),
      env: cleanEnv({ TERM: 'xterm', ...options.env }),
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    child.stdin.on('error', () => undefined);
    child.stdin.write(options.input ?? '');
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`gatehouse ${args.join(' ')} on a terminal did not end:\n${stdout}`));
    }, options.timeoutMs ?? 20_000);
    child.once('error', reject);
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr: '' });
    });
  });
}

/** Text without ANSI escape sequences and carriage returns. */
export function plain(text: string): string {
  // eslint-disable-next-line no-control-regex
  return text.replace(/\u001b\[[0-9;?]*[A-Za-z]/g, '').replace(/\r/g, '');
}

/** Writes `gatehouse.yaml` in `dir` from a configuration object (JSON is YAML) and returns its path. */
export function writeConfig(dir: string, config: Record<string, unknown>, name = 'gatehouse.yaml'): string {
  const path = join(dir, name);
  writeFileSync(path, JSON.stringify(config, null, 2));
  return path;
}

/** A port nothing listens on at the moment (bound, then released). */
export async function freePort(): Promise<number> {
  const server = await listenTcp(0);
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** A TCP server on 127.0.0.1:`port` that answers every connection with `greeting` (or nothing). */
export function listenTcp(port: number, greeting?: string): Promise<Server> {
  return new Promise((resolve, reject) => {
    const server = createServer((socket) => {
      socket.on('error', () => undefined);
      socket.on('data', () => undefined);
      if (greeting !== undefined) socket.write(greeting);
    });
    server.once('error', reject);
    server.listen({ host: '127.0.0.1', port }, () => resolve(server));
  });
}

/** Spawns the built gateway (`gatehouse serve`, the default command) with a clean environment plus `env`. */
export function startServe(args: string[], options: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): Child {
  return spawnGateway(args, { startTimeoutMs: 15_000, ...options });
}

/** The JSON lines of a stream's lines (lines that are not JSON are left out). */
export function jsonLines(lines: readonly string[]): Array<Record<string, unknown>> {
  return lines.flatMap((line): Array<Record<string, unknown>> => {
    try {
      const value = JSON.parse(line) as Record<string, unknown> | null;
      return value && typeof value === 'object' ? [value] : [];
    } catch {
      return [];
    }
  });
}

/** A command running on a pseudo-terminal (through `script`) until it is stopped. */
export interface TerminalChild {
  /** Everything the terminal showed so far, without ANSI codes. */
  screen(): string;
  /** Resolves once the screen matches `pattern`; rejects after `timeoutMs` with the screen. */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<void>;
  /** Ends it (SIGTERM to `script`, which hangs up its terminal) and resolves once it exited. */
  stop(): Promise<void>;
}

/** Starts `gatehouse <args>` on a pseudo-terminal; see `gatehouseOnTerminal`. */
export function startOnTerminal(args: string[], options: RunOptions = {}): TerminalChild {
  const quote = (s: string): string => `'${s.replace(/'/g, `'\\''`)}'`;
  const command = [process.execPath, ...GATEWAY_NODE_FLAGS, GATEWAY_MAIN, ...args].map(quote).join(' ');
  const child = spawn('script', ['-qfec', command, '/dev/null'], {
    cwd: options.cwd ?? tempDir(),
    env: cleanEnv({ TERM: 'xterm', ...options.env }),
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let raw = '';
  child.stdout.on('data', (chunk: Buffer) => (raw += chunk.toString('utf8')));
  child.stderr.on('data', (chunk: Buffer) => (raw += chunk.toString('utf8')));
  child.stdin.on('error', () => undefined);
  const exited = new Promise<void>((resolve) => child.once('close', () => resolve()));
  return {
    screen: () => plain(raw),
    async waitFor(pattern, timeoutMs = 15_000) {
      const deadline = Date.now() + timeoutMs;
      while (!pattern.test(plain(raw))) {
        if (Date.now() > deadline || child.exitCode !== null) {
          throw new Error(`the terminal never showed ${String(pattern)}:\n${plain(raw)}`);
        }
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    },
    async stop() {
      if (child.exitCode === null) child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    },
  };
}
