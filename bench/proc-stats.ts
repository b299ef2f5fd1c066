import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

/** CPU and memory figures of processes and of the machine, read from /proc (Linux), for the bench's report. */

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
  return statCpuMs(`/proc/${pid}/stat`);
}

/**
 * CPU time of one thread of a process so far (its main thread: `tid` = `pid`), in milliseconds, from
 * /proc/<pid>/task/<tid>/stat; NaN once it is gone. The rest of a Node process's CPU is its helper threads'
 * (V8's GC and compiler workers, libuv's pool).
 */
export function threadCpuMs(pid: number, tid: number): number {
  return statCpuMs(`/proc/${pid}/task/${tid}/stat`);
}

/**
 * CPU time a process's threads alive now have run so far, in milliseconds at nanosecond resolution (the first
 * field of each /proc/<pid>/task/<tid>/schedstat); NaN once it is gone. For small amounts (an idle process over
 * a few seconds), where utime+stime count whole clock ticks (10 ms).
 */
export function runMs(pid: number): number {
  let tids: string[];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return NaN;
  }
  let ns = 0;
  for (const tid of tids) {
    try {
      ns += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ', 1)[0]);
    } catch {
      // the thread ended meanwhile
    }
  }
  return ns / 1e6;
}

function statCpuMs(path: string): number {
  let stat: string;
  try {
    stat = readFileSync(path, 'utf8');
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
