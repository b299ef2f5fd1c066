import { performance } from 'node:perf_hooks';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

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
  /**
   * A full garbage collection, asked for when the measure is over the watermark (at most once per
   * `COLLECT_INTERVAL_MS`); false when none can be made. Default `fullCollection`, or none when `memory` is
   * injected without it.
   */
  collect?: () => boolean;
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

/** The least time between two collections asked for by the sampler: one full collection every 5 s at most. */
export const COLLECT_INTERVAL_MS = 5_000;

/** V8's `gc()`, made available the first time it is asked for; null where it cannot be. */
let gcFunction: (() => void) | null | undefined;

/**
 * Runs a full garbage collection. Memory over the watermark may be garbage: the heap in use counts objects no
 * longer reachable until the next major collection, and a gateway that refuses new work allocates so little that
 * this one might not come for many seconds (it was 13 s after a flood), so the shedding would outlive its cause.
 * V8 exposes its `gc` only behind `--expose-gc`; the flag, set at run time, gives it to a new context. False when
 * that fails (another engine, a flag refused).
 */
export function fullCollection(): boolean {
  if (gcFunction === undefined) {
    gcFunction = null;
    try {
      const global = globalThis as { gc?: () => void };
      if (typeof global.gc === 'function') gcFunction = global.gc;
      else {
        setFlagsFromString('--expose-gc');
        const fn: unknown = runInNewContext('gc');
        if (typeof fn === 'function') gcFunction = fn as () => void;
      }
    } catch {
      gcFunction = null;
    }
  }
  if (!gcFunction) return false;
  gcFunction();
  return true;
}

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
  private readonly collect: () => boolean;
  /** When the sampler last asked for a collection (`now()`), or null. */
  private collectedAt: number | null = null;

  /**
   * @param watermarkBytes above it, a sample is taken again after a full collection (at most once per
   *   `COLLECT_INTERVAL_MS`), so that only memory still in use counts; null: never.
   */
  constructor(
    private readonly measure: MemoryMeasure,
    private readonly onSample: (sample: LoadSample) => void,
    probes: LoadProbes = {},
    private readonly watermarkBytes: number | null = null,
  ) {
    this.memory = probes.memory ?? readMemory;
    this.timers = probes.timers ?? unrefTimers;
    this.now = probes.now ?? (() => performance.now());
    this.collect = probes.collect ?? (probes.memory ? () => false : fullCollection);
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
    this.last = { memoryBytes: this.memoryInUse(at), eventLoopDelayMs: late };
    this.onSample(this.last);
    return this.last;
  }

  /** Stops sampling; the last sample stays readable. */
  close(): void {
    this.closed = true;
    this.cancel?.();
    this.cancel = null;
  }

  /** The memory measure; above the watermark, read again after a full collection when one is due. */
  private memoryInUse(at: number): number {
    const bytes = this.memory(this.measure);
    if (this.watermarkBytes === null || bytes <= this.watermarkBytes) return bytes;
    if (this.collectedAt !== null && at - this.collectedAt < COLLECT_INTERVAL_MS) return bytes;
    this.collectedAt = at;
    return this.collect() ? this.memory(this.measure) : bytes;
  }

  private tick(): void {
    this.cancel = null;
    if (this.closed) return;
    this.sample();
    this.dueAt = this.now() + SAMPLE_INTERVAL_MS;
    this.cancel = this.timers.after(SAMPLE_INTERVAL_MS, () => this.tick());
  }
}
