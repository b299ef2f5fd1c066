/**
 * GET /metrics counts the open SSE streams (`gatehouse_sse_streams`, read from the server's own count at
 * scrape time): real streams over a real socket, opened and closed by the client.
 */
import { describe, expect, it, vi } from 'vitest';
import { adminHeaders, apiHeaders, useHarness, type Harness } from '../helpers/harness.js';
import { openSse, type SseClient } from '../helpers/sse-client.js';

/** The value of the unlabelled `gatehouse_sse_streams` gauge, as scraped. */
async function openStreams(h: Harness): Promise<number> {
  const res = await h.inject({ method: 'GET', url: '/metrics', headers: apiHeaders });
  expect(res.statusCode).toBe(200);
  expect(res.body).toContain('# TYPE gatehouse_sse_streams gauge');
  const line = /^gatehouse_sse_streams (\d+)$/m.exec(res.body);
  expect(line, 'the gatehouse_sse_streams sample').not.toBeNull();
  return Number(line![1]);
}

describe('gatehouse_sse_streams', () => {
  const rig = useHarness();

  it('counts the SSE streams open at scrape time', async () => {
    const base = await rig.gateway.listen();
    expect(await openStreams(rig)).toBe(0);

    const streams: SseClient[] = [];
    try {
      for (let i = 0; i < 2; i++) {
        const stream = await openSse(base, '/api/v1/logs?follow=true', { headers: adminHeaders });
        streams.push(stream);
        expect(stream.status).toBe(200);
        expect(await openStreams(rig)).toBe(i + 1);
      }
      streams[0]!.close();
      await vi.waitFor(async () => expect(await openStreams(rig)).toBe(1), { timeout: 5_000, interval: 20 });
    } finally {
      for (const stream of streams) stream.close();
    }
    await vi.waitFor(async () => expect(await openStreams(rig)).toBe(0), { timeout: 5_000, interval: 20 });
  });
});
