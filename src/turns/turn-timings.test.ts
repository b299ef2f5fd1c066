import { describe, expect, it } from 'vitest';
import { serverTimingHeader, TurnTimings } from './turn-timings.js';

function metrics(header: string): Record<string, number> {
  return Object.fromEntries(
    header.split(', ').map((part) => {
      const [name, dur] = part.split(';dur=');
      return [name!, Number(dur)];
    }),
  );
}

describe('turn timings', () => {
  it('names each phase between two marks, then the total', () => {
    const timings = new TurnTimings();
    const at = { accepted: 11, queued: 11.5, started: 12, claimed: 14, answered: 15, stored: 16.25 };
    for (const [moment, t] of Object.entries(at)) timings.mark('evt_1', moment as keyof typeof at, t);
    const header = serverTimingHeader(timings.take('evt_1'), 10, 16.5);
    expect(metrics(header)).toEqual({
      accept: 1,
      queue: 0.5,
      claim: 2,
      provider: 1,
      persist: 1.25,
      deliver: 0.25,
      total: 6.5,
    });
    expect(timings.take('evt_1')).toBeUndefined(); // read once
  });

  it('an acknowledgement has its acceptance and total only; unknown turns the total', () => {
    const timings = new TurnTimings();
    timings.mark('evt_a', 'accepted', 3);
    timings.mark('evt_a', 'queued', 3);
    expect(metrics(serverTimingHeader(timings.take('evt_a'), 1, 4))).toEqual({ accept: 2, total: 3 });
    expect(serverTimingHeader(undefined, 1, 2)).toBe('total;dur=1.000');
  });

  it('keeps no marks for a turn whose marks were read or never started (acknowledged, found again)', () => {
    const timings = new TurnTimings();
    timings.mark('evt_ack', 'accepted', 1);
    expect(timings.take('evt_ack')).toEqual({ accepted: 1 });
    // The acknowledged turn goes on running: nothing will read these.
    timings.mark('evt_ack', 'started', 2);
    timings.mark('evt_ack', 'stored', 3);
    timings.mark('evt_recovered', 'started', 2);
    expect(timings.size).toBe(0);
    expect(timings.take('evt_ack')).toBeUndefined();
  });

  it('is bounded: the oldest turns are forgotten first', () => {
    const timings = new TurnTimings(2);
    timings.mark('a', 'accepted', 1);
    timings.mark('b', 'accepted', 1);
    timings.mark('c', 'accepted', 1);
    expect(timings.size).toBe(2);
    expect(timings.take('a')).toBeUndefined();
    expect(timings.take('c')).toEqual({ accepted: 1 });
  });
});
