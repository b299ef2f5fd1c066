/**
 * A reply of the model past `limits.payloads.max_reply_bytes` is cut there (ADR 0043): the call is stopped,
 * what was streamed is what is kept, and the turn ends `incomplete` with `termination_reason: max_reply_bytes`.
 * One 6 MB reply otherwise held the gateway at about 230 MB of RSS while it streamed and was stored.
 */
import { describe, expect, it } from 'vitest';
import { adminHeaders, apiHeaders, useHarness } from '../helpers/harness.js';
import { parseSse } from '../helpers/sse.js';
import { msg } from '../routes/builders.js';

const CAP = 50_000;
const enc = encodeURIComponent;

describe('a reply past max_reply_bytes', () => {
  // Two-byte characters, so the cut must not split one; 40 deltas of 5,000 characters (10 KB each), 400 KB in all.
  const long = 'é'.repeat(200_000);
  const rig = useHarness({
    fake: { always: () => ({ content: long, chunks: 40 }) },
    config: { limits: { payloads: { max_reply_bytes: CAP } } },
  });

  it('ends the turn incomplete, the streamed, answered and stored text cut at the cap on a character', async () => {
    const h = rig;
    const res = await h.message(msg('write a lot', 'c1', { wait: true, timeout_seconds: 60 }));
    expect(res.statusCode, res.body.slice(0, 500)).toBe(200);
    const body = res.json<{ status: string; event_id: string; response: string }>();
    expect(body.status).toBe('incomplete');
    expect(Buffer.byteLength(body.response)).toBeLessThanOrEqual(CAP);
    expect(Buffer.byteLength(body.response)).toBeGreaterThan(CAP - 2);
    expect(body.response).toBe('é'.repeat(CAP / 2));

    const turn = await h.inject({ method: 'GET', url: `/api/v1/turns/${enc(body.event_id)}`, headers: adminHeaders });
    expect(turn.json()).toMatchObject({ status: 'incomplete', termination_reason: 'max_reply_bytes' });

    // The turn's events: the deltas add up to the kept text, no more.
    const events = await h.inject({
      method: 'GET',
      url: `/api/v1/turns/${enc(body.event_id)}/events`,
      headers: { ...apiHeaders, accept: 'text/event-stream' },
    });
    const deltas = parseSse(events.body).filter((e) => e.event === 'delta');
    expect(deltas.map((e) => (e.data as { content: string }).content).join('')).toBe(body.response);

    const history = await h.inject({
      method: 'GET',
      url: `/api/v1/sessions/${enc('gateway:api:c1')}/history?limit=10`,
      headers: apiHeaders,
    });
    const items = history.json<{ items: Array<{ role: string; content: string | null }> }>().items;
    expect(items.find((m) => m.role === 'assistant')?.content).toBe(body.response);
  });
});
