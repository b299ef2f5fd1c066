import { performance } from 'node:perf_hooks';

/** What the memory watermark compares (`limits.overload.memory_measure`). */
export type MemoryMeasure = 'rss' | 'heap';

/** Delayed callbacks (the message path's `Timers` shape), injected so a test drives the sampling. */
export interface SampleTimers {
  /** Calls `fn` once after `ms` milliseconds; the returned function cancels it. Never keeps the process alive. */
  after(ms: number, fn: () => void): () => void;
}

/** The sources a sampler reads; each replaceable (tests, embedding). */
export interface LoadProbes {
  /** The memory measure in bytes; default `readMemory`. */
  memory?: (measure: MemoryMeasure) => number;
  /** The timer between samples; default `setTimeout`, unreferenced. */
  timers?: SampleTimers;
  /** Monotonic milliseconds, for how late a sample ran; default `performance.now()`. */
  now?: () => number;
}

/** One sample: the memory measure and how late the event loop ran it. */
export interface LoadSample {
  memoryBytes: number;
  eventLoopDelayMs: number;
}

/** Pause between samples: new work is refused, or taken again, within this of memory crossing the watermark. */
export const SAMPLE_INTERVAL_MS = 500;

const unrefTimers: SampleTimers = {
  after(ms, fn) {
    const timer = setTimeout(fn, ms);
    timer.unref();
    return () => clearTimeout(timer);
  },
};

/**
 * The default memory reader: the resident set size, or the V8 heap in use plus the memory outside it that
 * JavaScript objects hold (Buffers, typed arrays: `external`).
 */
export function readMemory(measure: MemoryMeasure): number {
  if (measure === 'rss') return process.memoryUsage.rss();
  const usage = process.memoryUsage();
  return usage.heapUsed + usage.external;
}

/**
 * Samples the process's load on one timer (one owner, `close()`): the memory
 * measure, and how late the timer fired — the event loop's delay, measured
 * without a timer of its own (an idle gateway wakes only for the sample).
 * Readers take the last sample, so nothing is measured per request.
 */
export class LoadSampler {
  private last: LoadSample = { memoryBytes: 0, eventLoopDelayMs: 0 };
  private cancel: (() => void) | null = null;
  private dueAt: number | null = null;
  private closed = false;
  private readonly memory: (measure: MemoryMeasure) => number;
  private readonly timers: SampleTimers;
  private readonly now: () => number;

  constructor(
    private readonly measure: MemoryMeasure,
    private readonly onSample: (sample: LoadSample) => void,
    probes: LoadProbes = {},
  ) {
    this.memory = probes.memory ?? readMemory;
    this.timers = probes.timers ?? unrefTimers;
    this.now = probes.now ?? (() => performance.now());
  }

  /** The last sample (zeros before the first). */
  get current(): LoadSample {
    return this.last;
  }

  /** Takes a sample now, then one every `SAMPLE_INTERVAL_MS` until `close()`. */
  start(): void {
    if (this.closed || this.cancel) return;
    this.tick();
  }

  /** Takes one sample now (start-up's first value), without starting the timer. */
  sample(): LoadSample {
    const at = this.now();
    const late = this.dueAt === null ? 0 : Math.max(0, at - this.dueAt);
    this.last = { memoryBytes: this.memory(this.measure), eventLoopDelayMs: late };
    this.onSample(this.last);
    return this.last;
  }

  /** Stops sampling; the last sample stays readable. */
  close(): void {
    this.closed = true;
    this.cancel?.();
    this.cancel = null;
  }

  private tick(): void {
    this.cancel = null;
    if (this.closed) return;
    this.sample();
    this.dueAt = this.now() + SAMPLE_INTERVAL_MS;
    this.cancel = this.timers.after(SAMPLE_INTERVAL_MS, () => this.tick());
  }
}
