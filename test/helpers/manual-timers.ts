import type { Timers } from '../../src/turns/timers.js';

/**
 * Timers that fire only when a test advances them (the `Timers` twin of
 * ManualClock): backoffs and background passes run without sleeping.
 */
export class ManualTimers implements Timers {
  private now = 0;
  private seq = 0;
  private readonly pending = new Map<number, { at: number; fn: () => void }>();

  after(ms: number, fn: () => void): () => void {
    const id = ++this.seq;
    this.pending.set(id, { at: this.now + ms, fn });
    return () => this.pending.delete(id);
  }

  /** Timers waiting to fire. */
  get size(): number {
    return this.pending.size;
  }

  /** Delays (from now) of the timers waiting, soonest first. */
  delays(): number[] {
    return [...this.pending.values()].map((t) => t.at - this.now).sort((a, b) => a - b);
  }

  /** Moves time on by `ms`, firing every timer due on the way, in order (including ones they set). */
  advance(ms: number): void {
    const target = this.now + ms;
    for (;;) {
      let next: [number, { at: number; fn: () => void }] | undefined;
      for (const entry of this.pending) if (entry[1].at <= target && (!next || entry[1].at < next[1].at)) next = entry;
      if (!next) break;
      this.pending.delete(next[0]);
      this.now = next[1].at;
      next[1].fn();
    }
    this.now = target;
  }
}
