/**
 * Time source. Domain code takes a Clock instead of calling Date.now() so
 * TTLs, lockouts, rate windows and schedules can be tested by advancing time.
 */
export interface Clock {
  /** Milliseconds since the Unix epoch. */
  now(): number;
}

/** The wall clock. */
export const systemClock: Clock = { now: () => Date.now() };

/** A clock that only moves when told to; for tests. */
export class ManualClock implements Clock {
  constructor(private ms = Date.UTC(2026, 10, 21, 10, 0, 0, 0)) {}
  now(): number {
    return this.ms;
  }
  /** Moves time forward by `ms` milliseconds. */
  advance(ms: number): void {
    this.ms += ms;
  }
  /** Jumps to an absolute time. */
  set(ms: number): void {
    this.ms = ms;
  }
}

/** ISO 8601 UTC with milliseconds, the wire format of every timestamp. */
export function isoTime(ms: number): string {
  return new Date(ms).toISOString();
}
