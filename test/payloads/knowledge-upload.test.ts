/**
 * Knowledge uploads are bounded (DECISIONS §9, ADR 0043): up to 10 MiB of content is accepted and chunked,
 * one document indexed at a time; past the cap the answer is 413 in the envelope, before any indexing.
 */
import { describe, expect, it } from 'vitest';
import { adminHeaders, useHarness } from '../helpers/harness.js';
import { MiB, withMemoryPeaks } from './fixtures.js';

/** About `bytes` of prose in paragraphs (ASCII: a byte a character). */
function prose(bytes: number, seed: number): string {
  const words = ['lorem', 'ipsum', 'gateway', 'signal', 'harbor', 'violet', 'quartz', 'meadow'];
  const parts: string[] = [];
  let size = 0;
  for (let i = 0; size < bytes; i++) {
    const part = `${words[(i + seed) % 8]} ${words[(i * 7) % 8]}${i % 97 === 0 ? '.\n\n' : ' '}`;
    parts.push(part);
    size += part.length;
  }
  return parts.join('').slice(0, bytes);
}

describe('a 10 MB knowledge upload', () => {
  const rig = useHarness({ autoOpen: false });

  it('is accepted and chunked; four at once are indexed one at a time; over 10 MiB is 413', async () => {
    // Shedding (limits.overload) is off here: this measures the uploads and their caps, not the shedding.
    const h = await rig.open({
      config: { limits: { overload: { memory_watermark_mb: null, max_event_loop_delay_ms: null } } },
    });
    const post = (payload: unknown) =>
      h.inject({ method: 'POST', url: '/api/v1/knowledge', headers: adminHeaders, payload: payload as object });

    global.gc?.();
    const base = process.memoryUsage();
    const { result: answers, peaks } = await withMemoryPeaks(base, () =>
      Promise.all([0, 1, 2, 3].map((i) => post({ title: `Doc ${i}`, content: prose(10_000_000, i), source: 'bulk' }))),
    );
    for (const res of answers) {
      expect(res.statusCode, res.body.slice(0, 200)).toBe(201);
      expect(res.json<{ size_bytes: number; chunk_count: number }>()).toMatchObject({ size_bytes: 10_000_000 });
    }
    console.info(
      `[payloads] four 10 MB knowledge uploads at once: heap ${Math.round(base.heapUsed / MiB)} → peak ${Math.round(peaks.heapUsed / MiB)} MB`,
    );

    const over = await post({ title: 'Big', content: 'x'.repeat(10 * MiB + 1), source: 'bulk' });
    expect(over.statusCode, over.body.slice(0, 300)).toBe(413);
    expect(over.json<{ error: { code: string } }>().error.code).toBe('PAYLOAD_TOO_LARGE');
  }, 120_000);
});
