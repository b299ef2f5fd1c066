import { describe, expect, it } from 'vitest';
import { ManualClock } from '../lib/clock.js';
import type { SharedWindows } from './cluster-counts.js';
import { createRateLimiter, createWindowCounter, type RateGroup } from './rate-limit.js';

const LIMITS: Record<RateGroup, number> = { read: 120, write: 30, analytics: 10, lifecycle: 5 };
// 2026-11-21T10:00:00.000Z, a minute boundary
const T0 = Date.UTC(2026, 10, 21, 10, 0, 0, 0);

function setup(start = T0): { clock: ManualClock; limiter: ReturnType<typeof createRateLimiter> } {
  const clock = new ManualClock(start);
  return { clock, limiter: createRateLimiter({ limits: LIMITS, clock }) };
}

describe('createRateLimiter', () => {
  it('refuses the 121st read in a window', () => {
    const { limiter } = setup();
    for (let i = 1; i <= 120; i++) {
      const d = limiter.hit('tok_a', 'read');
      expect(d.allowed).toBe(true);
      expect(d.remaining).toBe(120 - i);
      expect(d.limit).toBe(120);
    }
    const refused = limiter.hit('tok_a', 'read');
    expect(refused).toEqual({ allowed: false, limit: 120, remaining: 0, resetSeconds: 60 });
    // stays refused and remaining never goes negative
    expect(limiter.hit('tok_a', 'read')).toMatchObject({ allowed: false, remaining: 0 });
  });

  it('resets counters at the window edge', () => {
    const { clock, limiter } = setup();
    for (let i = 0; i < 5; i++) expect(limiter.hit('k', 'lifecycle').allowed).toBe(true);
    expect(limiter.hit('k', 'lifecycle').allowed).toBe(false);
    clock.advance(59_999);
    expect(limiter.hit('k', 'lifecycle')).toEqual({ allowed: false, limit: 5, remaining: 0, resetSeconds: 1 });
    clock.advance(1); // exactly the next window
    expect(limiter.hit('k', 'lifecycle')).toEqual({ allowed: true, limit: 5, remaining: 4, resetSeconds: 60 });
  });

  it('windows are aligned to floor(now / windowMs), not to the first request', () => {
    const { clock, limiter } = setup(T0 + 50_000);
    for (let i = 0; i < 5; i++) limiter.hit('k', 'lifecycle');
    expect(limiter.hit('k', 'lifecycle')).toMatchObject({ allowed: false, resetSeconds: 10 });
    clock.advance(10_000);
    expect(limiter.hit('k', 'lifecycle').allowed).toBe(true);
  });

  it('groups are independent', () => {
    const { limiter } = setup();
    for (let i = 0; i < 10; i++) expect(limiter.hit('k', 'analytics').allowed).toBe(true);
    expect(limiter.hit('k', 'analytics').allowed).toBe(false);
    expect(limiter.hit('k', 'read')).toMatchObject({ allowed: true, remaining: 119 });
    expect(limiter.hit('k', 'write')).toMatchObject({ allowed: true, remaining: 29, limit: 30 });
    expect(limiter.hit('k', 'lifecycle')).toMatchObject({ allowed: true, remaining: 4, limit: 5 });
  });

  it('keys are independent', () => {
    const { limiter } = setup();
    for (let i = 0; i < 30; i++) limiter.hit('tok_a', 'write');
    expect(limiter.hit('tok_a', 'write').allowed).toBe(false);
    expect(limiter.hit('tok_b', 'write')).toMatchObject({ allowed: true, remaining: 29 });
  });

  it('resetSeconds counts down in whole seconds, at least 1', () => {
    const { clock, limiter } = setup();
    expect(limiter.hit('k', 'read').resetSeconds).toBe(60);
    clock.advance(500);
    expect(limiter.hit('k', 'read').resetSeconds).toBe(60); // 59.5 s → 60
    clock.advance(500);
    expect(limiter.hit('k', 'read').resetSeconds).toBe(59);
    clock.advance(30_000);
    expect(limiter.hit('k', 'read').resetSeconds).toBe(29);
    clock.advance(28_999);
    expect(limiter.hit('k', 'read').resetSeconds).toBe(1);
  });

  it('sweeps counters of past windows', () => {
    const { clock, limiter } = setup();
    for (let i = 0; i < 100; i++) limiter.hit(`tok_${i}`, 'read');
    limiter.hit('tok_0', 'write');
    expect(limiter.size()).toBe(101);
    clock.advance(60_000);
    expect(limiter.size()).toBe(0);
    limiter.hit('tok_new', 'read');
    expect(limiter.size()).toBe(1);
    clock.advance(3 * 60_000);
    expect(limiter.size()).toBe(0);
  });

  it('caps the number of counters, evicting the oldest', () => {
    const clock = new ManualClock(T0);
    const limiter = createRateLimiter({ limits: LIMITS, clock, maxKeys: 3 });
    for (let i = 0; i < 5; i++) limiter.hit('a', 'lifecycle');
    limiter.hit('b', 'read');
    limiter.hit('c', 'read');
    expect(limiter.hit('a', 'lifecycle').allowed).toBe(false);
    limiter.hit('d', 'read'); // evicts a/lifecycle, the oldest
    expect(limiter.size()).toBe(3);
    expect(limiter.hit('a', 'lifecycle').allowed).toBe(true);
  });

  it('honours a custom window and configured limits', () => {
    const clock = new ManualClock(T0);
    const limiter = createRateLimiter({ limits: { ...LIMITS, write: 2 }, clock, windowMs: 10_000 });
    expect(limiter.hit('k', 'write')).toMatchObject({ allowed: true, remaining: 1, resetSeconds: 10 });
    expect(limiter.hit('k', 'write')).toMatchObject({ allowed: true, remaining: 0 });
    expect(limiter.hit('k', 'write').allowed).toBe(false);
    clock.advance(10_000);
    expect(limiter.hit('k', 'write').allowed).toBe(true);
  });

  it('a clock stepping backwards keeps the current window', () => {
    const { clock, limiter } = setup();
    for (let i = 0; i < 5; i++) limiter.hit('k', 'lifecycle');
    clock.set(T0 - 120_000);
    expect(limiter.hit('k', 'lifecycle').allowed).toBe(false);
  });
});

describe('createWindowCounter', () => {
  it('rejects nonsensical options', () => {
    const clock = new ManualClock(T0);
    expect(() => createWindowCounter({ clock, windowMs: 0 })).toThrow(RangeError);
    expect(() => createWindowCounter({ clock, maxKeys: 0 })).toThrow(RangeError);
  });
});

/** Other processes' counts set by hand, and every local count reported. */
function fakeShared(): SharedWindows & { set(key: string, windowStart: number, n: number): void; reports: string[] } {
  const others = new Map<string, number>();
  const reports: string[] = [];
  return {
    reports,
    set: (key, windowStart, n) => others.set(`${windowStart}|${key}`, n),
    others: (key, windowStart) => others.get(`${windowStart}|${key}`) ?? 0,
    report: (key, windowStart, count) => reports.push(`${windowStart}|${key}=${count}`),
  };
}

describe("createRateLimiter with the other processes' counts", () => {
  it("adds the others' count of the same window to the local one", () => {
    const clock = new ManualClock(T0);
    const shared = fakeShared();
    const limiter = createRateLimiter({ limits: LIMITS, clock, shared });
    shared.set('write:tok_a', T0, 27);
    expect(limiter.hit('tok_a', 'write')).toMatchObject({ allowed: true, remaining: 2, limit: 30 });
    expect(limiter.hit('tok_a', 'write')).toMatchObject({ allowed: true, remaining: 1 });
    expect(limiter.hit('tok_a', 'write')).toMatchObject({ allowed: true, remaining: 0 });
    expect(limiter.hit('tok_a', 'write')).toMatchObject({ allowed: false, remaining: 0 });
    // Another token and another group are untouched by that count.
    expect(limiter.hit('tok_b', 'write')).toMatchObject({ allowed: true, remaining: 29 });
    expect(limiter.hit('tok_a', 'read')).toMatchObject({ allowed: true, remaining: 119 });
    // Each admitted request is reported with the local count; a refused one is not.
    expect(shared.reports).toEqual([
      `${T0}|write:tok_a=1`,
      `${T0}|write:tok_a=2`,
      `${T0}|write:tok_a=3`,
      `${T0}|write:tok_b=1`,
      `${T0}|read:tok_a=1`,
    ]);
  });

  it('refuses at once when the others already spent the limit', () => {
    const clock = new ManualClock(T0 + 30_000);
    const shared = fakeShared();
    const limiter = createRateLimiter({ limits: LIMITS, clock, shared });
    shared.set('lifecycle:k', T0, 9); // more than the limit: remaining stays 0
    expect(limiter.hit('k', 'lifecycle')).toEqual({ allowed: false, limit: 5, remaining: 0, resetSeconds: 30 });
    expect(shared.reports).toEqual([]);
  });

  it('counts of another window do not count', () => {
    const clock = new ManualClock(T0);
    const shared = fakeShared();
    const limiter = createRateLimiter({ limits: LIMITS, clock, shared });
    shared.set('lifecycle:k', T0 - 60_000, 5); // the previous window
    expect(limiter.hit('k', 'lifecycle')).toMatchObject({ allowed: true, remaining: 4 });
    shared.set('lifecycle:k', T0 + 60_000, 5); // the next one
    clock.advance(60_000);
    expect(limiter.hit('k', 'lifecycle').allowed).toBe(false);
    expect(shared.reports).toEqual([`${T0}|lifecycle:k=1`]);
  });
});
