import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';

/** A child process of the bench, with the tail of its output kept for error reports. */
export interface Child {
  name: string;
  process: ChildProcess;
  pid: number;
  /** Resolves with the base URL the child announced. */
  ready: Promise<string>;
  /** Resolves when the child has exited (code or signal). */
  exited: Promise<string>;
  /** The last output lines (stdout and stderr), for diagnostics. */
  tail(): string;
}

const children = new Set<Child>();
const TAIL_LINES = 40;

/**
 * Spawns `node <args>`; the child is ready when `findUrl` recognises a line of
 * its stdout or stderr. Rejects `ready` if it exits first or takes longer than
 * `startTimeoutMs`. Every child is tracked for `killAll`.
 */
export function spawnNode(options: {
  name: string;
  args: string[];
  cwd: string;
  env: NodeJS.ProcessEnv;
  findUrl: (line: string) => string | undefined;
  startTimeoutMs: number;
}): Child {
  const proc = spawn(process.execPath, options.args, {
    cwd: options.cwd,
    env: options.env,
    // stdin stays open: our own small servers exit when it closes.
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  if (proc.pid === undefined) throw new Error(`${options.name}: spawn failed`);
  const lines: string[] = [];
  let resolveReady!: (url: string) => void;
  let rejectReady!: (err: Error) => void;
  const ready = new Promise<string>((res, rej) => {
    resolveReady = res;
    rejectReady = rej;
  });
  ready.catch(() => undefined);
  const timer = setTimeout(
    () => rejectReady(new Error(`${options.name} did not start within ${options.startTimeoutMs} ms`)),
    options.startTimeoutMs,
  );
  const exited = new Promise<string>((res) => {
    proc.once('exit', (code, signal) => {
      clearTimeout(timer);
      const how = signal ?? String(code);
      rejectReady(new Error(`${options.name} exited (${how}) before it was ready`));
      res(how);
    });
  });
  proc.once('error', (err) => rejectReady(new Error(`${options.name}: ${err.message}`)));
  proc.stdin?.on('error', () => undefined);
  const onData = () => {
    let buffer = '';
    return (chunk: Buffer) => {
      buffer += chunk.toString('utf8');
      let nl: number;
      while ((nl = buffer.indexOf('\n')) !== -1) {
        const line = buffer.slice(0, nl);
        buffer = buffer.slice(nl + 1);
        lines.push(line);
        if (lines.length > TAIL_LINES) lines.shift();
        const url = options.findUrl(line);
        if (url !== undefined) {
          clearTimeout(timer);
          resolveReady(url);
        }
      }
    };
  };
  proc.stdout?.on('data', onData());
  proc.stderr?.on('data', onData());
  const child: Child = {
    name: options.name,
    process: proc,
    pid: proc.pid,
    ready,
    exited,
    tail: () => lines.join('\n'),
  };
  children.add(child);
  void exited.then(() => children.delete(child));
  return child;
}

/** The `{"url": …}` line our bench servers print. */
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
 * info), or from the "Gatehouse listening on …" line it always writes to stderr.
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

/** Stops one child: SIGTERM, then SIGKILL after `graceMs`. Resolves once it has exited. */
export async function stopChild(child: Child, graceMs: number): Promise<void> {
  if (child.process.exitCode !== null || child.process.signalCode !== null) return;
  child.process.stdin?.end();
  child.process.kill('SIGTERM');
  const timer = setTimeout(() => child.process.kill('SIGKILL'), graceMs);
  await child.exited;
  clearTimeout(timer);
}

/** Stops every child still running (used on the way out, also after a failure). */
export async function stopAll(graceMs: number): Promise<void> {
  await Promise.all([...children].map((child) => stopChild(child, graceMs)));
}

/** Last resort (synchronous, for `process.on('exit')`): SIGKILL every child still tracked, by pid. */
export function killAllNow(): void {
  for (const child of children) {
    if (child.process.exitCode === null && child.process.signalCode === null) child.process.kill('SIGKILL');
  }
}

let clockTicks: number | undefined;

/** Clock ticks per second for /proc times (`getconf CLK_TCK`, else 100). */
export function ticksPerSecond(): number {
  if (clockTicks === undefined) {
    try {
      const value = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim());
      clockTicks = Number.isFinite(value) && value > 0 ? value : 100;
    } catch {
      clockTicks = 100;
    }
  }
  return clockTicks;
}

/** CPU time (user + system) a process has used so far, in milliseconds, from /proc/<pid>/stat; NaN once it is gone. */
export function cpuMs(pid: number): number {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return NaN;
  }
  // Field 2 (comm) may contain spaces; the fields after its closing paren start at field 3.
  const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const utime = Number(rest[11]);
  const stime = Number(rest[12]);
  return ((utime + stime) * 1000) / ticksPerSecond();
}

/** A /proc/<pid>/status memory field (VmRSS, VmHWM) in MiB. */
export function memoryMiB(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const match = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status);
  if (!match) throw new Error(`${field} not found in /proc/${pid}/status`);
  return Number(match[1]) / 1024;
}

/** Busy CPU time of the whole machine so far (all CPUs, not idle or iowait), in milliseconds, from /proc/stat. */
export function machineBusyMs(): number {
  const line = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0] ?? '';
  const fields = line.trim().split(/\s+/).slice(1, 9).map(Number);
  const [user = 0, nice = 0, system = 0, _idle = 0, _iowait = 0, irq = 0, softirq = 0, steal = 0] = fields;
  return ((user + nice + system + irq + softirq + steal) * 1000) / ticksPerSecond();
}
