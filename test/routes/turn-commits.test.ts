/**
 * What a turn costs the store (ADR 0026): a waited turn is three commits —
 * its acceptance, its claim with the user's message and first event, its
 * outcome with the reply, the usage, the ledger's end, the idempotency TTL
 * and the final event — and POST /message names where the time went.
 */
import { describe, expect, it } from 'vitest';
import { echoReply } from '../helpers/fake-openai.js';
import { adminHeaders, useHarness } from '../helpers/harness.js';
import { parseSse } from '../helpers/sse.js';
import { msg } from './builders.js';

function timing(header: unknown): Record<string, number> {
  return Object.fromEntries(
    String(header)
      .split(',')
      .map((part) => /^\s*([a-z]+);dur=([0-9.]+)/.exec(part))
      .filter((m): m is RegExpExecArray => m !== null)
      .map((m) => [m[1]!, Number(m[2])]),
  );
}

describe('the commits of a turn', () => {
  const rig = useHarness({ fake: { always: echoReply }, autoOpen: false });

  it('a waited turn commits three times: acceptance, claim, outcome; its answer carries Server-Timing', async () => {
    const h = await rig.open();
    // Warm: the session exists, the gateway has settled.
    expect((await h.message(msg('first', 'c-commits', { wait: true }))).statusCode).toBe(200);
    await h.internals.messages.idle(2_000);
    const writer = h.internals.store.writer;
    const before = writer.stats.batchesCommitted;
    const res = await h.message(msg('second', 'c-commits', { wait: true }));
    expect(res.statusCode).toBe(200);
    await h.internals.messages.idle(2_000);
    expect(writer.stats.batchesCommitted - before).toBe(3);

    const phases = timing(res.headers['server-timing']);
    expect(Object.keys(phases)).toEqual(['accept', 'queue', 'claim', 'provider', 'persist', 'deliver', 'total']);
    const parts = phases.accept! + phases.queue! + phases.claim! + phases.provider! + phases.persist! + phases.deliver!;
    expect(parts).toBeLessThanOrEqual(phases.total! + 0.01);

    // Everything of the outcome is there: the reply in the history, the events to `done`.
    const { event_id: eventId } = res.json<{ event_id: string }>();
    const events = parseSse(
      (await h.inject({ method: 'GET', url: `/api/v1/turns/${eventId}/events`, headers: adminHeaders })).body,
    );
    expect(events[0]).toMatchObject({ event: 'status', id: '1', data: { status: 'running' } });
    expect(events.at(-1)).toMatchObject({ event: 'done', data: { status: 'completed', content: 'fake: second' } });
    const history = await h.adminGet(`/api/v1/sessions/${encodeURIComponent('gateway:api:c-commits')}/history`);
    expect(history.json<{ items: Array<{ content: string }> }>().items.map((m) => m.content)).toEqual([
      'first',
      'fake: first',
      'second',
      'fake: second',
    ]);
  });

  it('an acknowledgement carries the acceptance in Server-Timing', async () => {
    const h = await rig.open();
    const res = await h.message(msg('ack me', 'c-ack'));
    expect(res.statusCode).toBe(202);
    const phases = timing(res.headers['server-timing']);
    expect(phases.accept).toBeGreaterThanOrEqual(0);
    expect(phases.total).toBeGreaterThanOrEqual(phases.accept!);
  });

  it("a replay's Server-Timing is its own total, never the original turn's phases", async () => {
    const h = await rig.open();
    const keyed = { 'Idempotency-Key': 'k-timing' };
    const original = await h.message(msg('once', 'c-replay-timing'), keyed);
    expect(original.statusCode).toBe(202);
    // The acknowledged turn runs to its end after the answer; its later moments are no answer's.
    await h.internals.messages.idle(2_000);
    const replay = await h.message(msg('once', 'c-replay-timing'), keyed);
    expect(replay.statusCode).toBe(202);
    expect(replay.json()).toEqual(original.json());
    expect(Object.keys(timing(replay.headers['server-timing']))).toEqual(['total']);
  });
});
