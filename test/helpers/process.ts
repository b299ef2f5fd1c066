import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';

export const ROOT = join(import.meta.dirname, '..', '..');
export const MAIN = join(ROOT, 'dist', 'src', 'main.js');

export interface Spawned {
  child: ChildProcess;
  stdout: string[];
  stderr: string[];
  /** Resolves with the base URL once the "listening" log line (or the stderr banner) appears. */
  ready: Promise<string>;
  /** Resolves with the exit code (or signal name). */
  exited: Promise<number | string>;
  /** Resolves with the first stderr line (already seen or still to come) that matches. */
  stderrLine(pattern: RegExp): Promise<string>;
}

const live = new Set<ChildProcess>();

/** Kills every gateway a test spawned and did not stop (call from afterEach). */
export function killAllGateways(): void {
  for (const child of live) child.kill('SIGKILL');
  live.clear();
}

/** Spawns the built gateway with arguments; collects its output line by line. */
export function spawnGateway(args: string[], env: NodeJS.ProcessEnv = {}): Spawned {
  const child = spawn(process.execPath, [MAIN, ...args], {
    cwd: ROOT,
    env: { PATH: process.env.PATH, TZ: 'UTC', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  live.add(child);
  child.once('exit', () => live.delete(child));
  const stdout: string[] = [];
  const stderr: string[] = [];
  const stderrWaiters: Array<{ pattern: RegExp; resolve: (line: string) => void }> = [];
  let resolveReady!: (url: string) => void;
  let rejectReady!: (err: Error) => void;
  const ready = new Promise<string>((res, rej) => {
    resolveReady = res;
    rejectReady = rej;
  });
  // Callers that only await `exited` must not see an unhandled rejection.
  ready.catch(() => undefined);
  const exited = new Promise<number | string>((res) => {
    child.once('exit', (code, signal) => {
      rejectReady(new Error(`gateway exited (${code ?? signal}) before listening:\n${stderr.join('\n')}`));
      res(code ?? signal ?? -1);
    });
  });
  const split = (sink: string[], onLine?: (line: string) => void) => {
    let buffer = '';
    return (chunk: Buffer) => {
      buffer += chunk.toString('utf8');
      let nl: number;
      while ((nl = buffer.indexOf('\n')) !== -1) {
        const line = buffer.slice(0, nl);
        buffer = buffer.slice(nl + 1);
        sink.push(line);
        onLine?.(line);
      }
    };
  };
  child.stdout.on(
    'data',
    split(stdout, (line) => {
      try {
        const entry = JSON.parse(line) as { message?: string; url?: string };
        if (entry.url && entry.message?.startsWith('listening')) resolveReady(entry.url);
      } catch {
        /* not a JSON line */
      }
    }),
  );
  child.stderr.on(
    'data',
    split(stderr, (line) => {
      // The banner on stderr is printed whatever `logs.level` is (the JSON line is info-level).
      const banner = /^Gatehouse listening on (\S+) /.exec(line);
      if (banner?.[1]) resolveReady(banner[1]);
      for (const waiter of [...stderrWaiters]) {
        if (waiter.pattern.test(line)) {
          stderrWaiters.splice(stderrWaiters.indexOf(waiter), 1);
          waiter.resolve(line);
        }
      }
    }),
  );
  const stderrLine = (pattern: RegExp): Promise<string> => {
    const seen = stderr.find((line) => pattern.test(line));
    if (seen !== undefined) return Promise.resolve(seen);
    return new Promise((resolve) => stderrWaiters.push({ pattern, resolve }));
  };
  return { child, stdout, stderr, ready, exited, stderrLine };
}
