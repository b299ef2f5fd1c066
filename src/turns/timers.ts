/**
 * Delayed callbacks, injected so that backoffs and background passes can be
 * driven by a test instead of waited for (as the Clock is for time).
 */
export interface Timers {
  /** Calls `fn` once after `ms` milliseconds; the returned function cancels it. Never keeps the process alive. */
  after(ms: number, fn: () => void): () => void;
}

/** `setTimeout`, unreferenced. */
export const realTimers: Timers = {
  after(ms, fn) {
    const timer = setTimeout(fn, ms);
    timer.unref();
    return () => clearTimeout(timer);
  },
};
