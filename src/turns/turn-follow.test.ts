import { describe, expect, it } from 'vitest';
import { followTurn, type FollowDeps, type FollowStep } from './turn-follow.js';
import type { TurnEvent, TurnEventListener } from './turn-events.js';
import type { TurnRecord } from './turns.repo.js';

const event = (seq: number, type: TurnEvent['type'], data: Record<string, unknown> = {}): TurnEvent => ({
  eventId: 'evt',
  seq,
  type,
  data,
});

/** A store of events the test fills, a live listener it calls, and a ledger watch it settles. */
function fakeDeps() {
  const stored: TurnEvent[] = [];
  let listener: TurnEventListener = () => undefined;
  let ended: TurnRecord | null = null;
  let settle: (turn: TurnRecord | null) => void = () => undefined;
  const deps: FollowDeps = {
    hub: {
      subscribe: (_id, l) => {
        listener = l;
        return () => undefined;
      },
      flush: () => Promise.resolve(),
      replay: (_id, afterSeq, limit = 10_000) =>
        Promise.resolve(stored.filter((e) => e.seq > afterSeq).slice(0, limit)),
    },
    waiters: {
      wait: () =>
        new Promise<TurnRecord | null>((resolve) => {
          if (ended) resolve(ended);
          settle = resolve;
        }),
    },
    lastSeq: () => Promise.resolve(stored.at(-1)?.seq ?? 0),
  };
  return {
    deps,
    stored,
    live: (e: TurnEvent) => listener(e),
    end: (status: string) => settle((ended = { eventId: 'evt', status } as TurnRecord)),
  };
}

const describeStep = (step: FollowStep): string =>
  step.kind === 'event' ? `${step.event.seq}:${step.event.type}:${step.live ? 'live' : 'stored'}` : step.kind;

describe('followTurn with events it did not hear live (another process, ADR 0025)', () => {
  it('reads a gap in the live numbers from the store before going on', async () => {
    const f = fakeDeps();
    f.stored.push(event(1, 'status', { status: 'running' }));
    const steps = followTurn(f.deps, 'evt', { fromSeq: 0, endOnPause: false });
    const seen: string[] = [];
    seen.push(describeStep((await steps.next()).value as FollowStep));
    // Event 2 never arrived live; it is in the store by the time 3 arrives.
    f.stored.push(event(2, 'delta', { content: 'a' }), event(3, 'delta', { content: 'b' }));
    const next = steps.next();
    f.live(event(3, 'delta', { content: 'b' }));
    seen.push(describeStep((await next).value as FollowStep));
    seen.push(describeStep((await steps.next()).value as FollowStep));
    expect(seen).toEqual(['1:status:stored', '2:delta:stored', '3:delta:live']);
    await steps.return(undefined);
  });

  it('yields what the store holds beyond the last heard event when the ledger shows the end, ending on `done`', async () => {
    const f = fakeDeps();
    f.stored.push(event(1, 'status', { status: 'running' }));
    const seen: string[] = [];
    const run = (async () => {
      for await (const step of followTurn(f.deps, 'evt', { fromSeq: 0, endOnPause: false })) {
        seen.push(describeStep(step));
        if (seen.length === 1) {
          f.stored.push(event(2, 'delta'), event(3, 'done', { status: 'completed' }));
          f.end('completed');
        }
      }
    })();
    await run;
    expect(seen).toEqual(['1:status:stored', '2:delta:stored', '3:done:stored']);
  });

  it('still ends with the ledger’s `end` when the store holds nothing more', async () => {
    const f = fakeDeps();
    f.stored.push(event(1, 'status', { status: 'running' }));
    const seen: string[] = [];
    for await (const step of followTurn(f.deps, 'evt', { fromSeq: 0, endOnPause: false })) {
      seen.push(describeStep(step));
      if (seen.length === 1) f.end('interrupted');
    }
    expect(seen).toEqual(['1:status:stored', 'end']);
  });
});
