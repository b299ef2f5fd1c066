import { describe, expect, it } from 'vitest';
import { ManualTimers } from '../../test/helpers/manual-timers.js';
import {
  COLLECT_INTERVAL_MS,
  fullCollection,
  LoadSampler,
  SAMPLE_INTERVAL_MS,
  type LoadSample,
} from './load-sampler.js';

const MB = 1024 * 1024;

/**
 * A heap whose garbage goes only when collected: `allocate(mb)` adds garbage, `collect()` drops it. The
 * sampler sees live + garbage, as `process.memoryUsage().heapUsed` does between major collections.
 */
function heapWithGarbage(liveMb: number) {
  let garbage = 0;
  const timers = new ManualTimers();
  let clock = 0;
  const collections: number[] = [];
  return {
    timers,
    collections,
    allocate: (mb: number) => (garbage += mb * MB),
    probes: {
      memory: () => liveMb * MB + garbage,
      timers,
      now: () => clock,
      collect: () => {
        collections.push(clock);
        garbage = 0;
        return true;
      },
    },
    advance(ms: number) {
      clock += ms;
      timers.advance(ms);
    },
  };
}

describe('LoadSampler: memory over the watermark is measured again after a collection', () => {
  it('counts garbage only until a collection shows it is not in use, and collects at most once per interval', () => {
    const heap = heapWithGarbage(100);
    const samples: LoadSample[] = [];
    const sampler = new LoadSampler('heap', (s) => samples.push(s), heap.probes, 256 * MB);
    sampler.start();
    expect(samples.at(-1)!.memoryBytes).toBe(100 * MB);
    expect(heap.collections).toEqual([]); // under the watermark: no collection

    heap.allocate(300); // a flood's garbage
    heap.advance(SAMPLE_INTERVAL_MS);
    expect(samples.at(-1)!.memoryBytes).toBe(100 * MB); // collected, then read again
    expect(heap.collections).toHaveLength(1);

    // Within the interval another spike is taken as it is: a collection per sample would stall a busy gateway.
    heap.allocate(300);
    heap.advance(SAMPLE_INTERVAL_MS);
    expect(samples.at(-1)!.memoryBytes).toBe(400 * MB);
    expect(heap.collections).toHaveLength(1);

    // Once the interval has passed, the next sample over the watermark collects again.
    heap.advance(COLLECT_INTERVAL_MS);
    expect(samples.at(-1)!.memoryBytes).toBe(100 * MB);
    expect(heap.collections).toHaveLength(2);
    sampler.close();
  });

  it('reports memory still in use after the collection as over the watermark', () => {
    const heap = heapWithGarbage(300);
    const samples: LoadSample[] = [];
    const sampler = new LoadSampler('heap', (s) => samples.push(s), heap.probes, 256 * MB);
    sampler.sample();
    expect(heap.collections).toHaveLength(1);
    expect(samples.at(-1)!.memoryBytes).toBe(300 * MB);
  });

  it('never collects without a watermark', () => {
    const heap = heapWithGarbage(100);
    heap.allocate(1000);
    const sampler = new LoadSampler('heap', () => undefined, heap.probes, null);
    expect(sampler.sample().memoryBytes).toBe(1100 * MB);
    expect(heap.collections).toEqual([]);
  });

  it('makes a real full collection in this process', () => {
    let held: unknown[] | null = Array.from({ length: 200_000 }, (_, i) => ({ i }));
    expect(held.length).toBe(200_000);
    held = null;
    const before = process.memoryUsage().heapUsed;
    expect(fullCollection()).toBe(true);
    expect(held).toBeNull();
    expect(process.memoryUsage().heapUsed).toBeLessThan(before);
  });
});
