/**
 * SSE streams in process (ADR 0017): the message stream's ids and its
 * resumption through GET /turns/{event_id}/events, 204 once the end was
 * seen, keepalive comments on every stream, and the log follow's ids and
 * `Last-Event-ID`. Real SQLite, the fake provider over HTTP, real sockets
 * where a stream must stay open.
 */
import { describe, expect, it, vi } from 'vitest';
import type { LogEntry, LogPipeline } from '../../src/logs/index.js';
import type { TurnStatus } from '../../src/turns/index.js';
import { resumedPastEnd } from '../../src/turns/turn-stream.js';
import { useCleanups } from '../helpers/cleanups.js';
import { deferred } from '../helpers/deferred.js';
import { echoReply } from '../helpers/fake-openai.js';
import { adminHeaders, apiHeaders, useHarness, type Harness } from '../helpers/harness.js';
import { quietLogPipeline } from '../helpers/log-pipeline.js';
import { openSse, type SseClient } from '../helpers/sse-client.js';
import { deltaText, parseSse, type SseEvent } from '../helpers/sse.js';
import { recordingTool } from './builders.js';

const enc = encodeURIComponent;

describe('SSE streams', () => {
  const rig = useHarness({ fake: { always: echoReply }, autoOpen: false });
  const cleanup = useCleanups();

  const createSession = async (h: Harness): Promise<string> => {
    const res = await h.inject({ method: 'POST', url: '/api/v1/sessions', headers: apiHeaders, payload: {} });
    expect(res.statusCode).toBe(201);
    return res.json<{ id: string }>().id;
  };
  const streamMessage = (h: Harness, session: string, content: string) =>
    h.inject({
      method: 'POST',
      url: `/api/v1/sessions/${enc(session)}/messages`,
      headers: { ...apiHeaders, accept: 'text/event-stream' },
      payload: { content },
    });
  const turnEvents = (h: Harness, eventId: string, lastEventId?: string) =>
    h.inject({
      method: 'GET',
      url: `/api/v1/turns/${eventId}/events`,
      headers: { ...apiHeaders, ...(lastEventId !== undefined ? { 'last-event-id': lastEventId } : {}) },
    });

  describe('the message stream', () => {
    it('starts with `accepted` {event_id, session_key} as id 0; every event has an increasing id', async () => {
      const h = await rig.open();
      const session = await createSession(h);
      rig.fake.enqueue({ content: 'alpha beta gamma delta', chunks: 4 });
      const res = await streamMessage(h, session, 'count');
      expect(res.statusCode).toBe(200);
      const events = parseSse(res.body);
      expect(events[0]).toMatchObject({ id: '0', event: 'accepted', data: { session_key: session } });
      const eventId = (events[0]!.data as { event_id: string }).event_id;
      expect(eventId).toMatch(/^evt_/);
      expect(Object.keys(events[0]!.data as object).sort()).toEqual(['event_id', 'session_key']);
      expect(events.map((e) => e.event)).toEqual(['accepted', 'delta', 'delta', 'delta', 'delta', 'done']);
      const ids = events.map((e) => Number(e.id));
      expect(ids.every(Number.isInteger)).toBe(true);
      for (let i = 1; i < ids.length; i++) expect(ids[i]).toBeGreaterThan(ids[i - 1]!);
      expect(events.at(-1)!.data).toMatchObject({ event_id: eventId, status: 'completed' });

      // The same numbering as the turn's event stream (which also carries `status`).
      const all = parseSse((await turnEvents(h, eventId)).body);
      const byId = new Map(all.map((e) => [e.id, e.event]));
      for (const e of events.slice(1)) expect(byId.get(e.id)).toBe(e.event);
    });

    it('resumes through /turns/{event_id}/events with Last-Event-ID: exactly the rest, then the stream ends', async () => {
      const h = await rig.open();
      const session = await createSession(h);
      rig.fake.enqueue({ content: 'one two three four five six', chunks: 6 });
      const events = parseSse((await streamMessage(h, session, 'six words')).body);
      const eventId = (events[0]!.data as { event_id: string }).event_id;
      // The client saw up to the third delta, then lost the connection.
      const cut = events.findIndex(
        (e, i) => e.event === 'delta' && events.slice(0, i + 1).filter((x) => x.event === 'delta').length === 3,
      );
      const seen = events.slice(0, cut + 1);

      const resumed = await turnEvents(h, eventId, seen.at(-1)!.id);
      expect(resumed.statusCode).toBe(200);
      const rest = parseSse(resumed.body);
      expect(rest.map((e) => e.event)).toEqual(['delta', 'delta', 'delta', 'done']);
      expect(rest.map((e) => e.id)).toEqual(events.slice(cut + 1).map((e) => e.id));
      expect(deltaText(seen) + deltaText(rest)).toBe('one two three four five six');
      expect(rest.at(-1)!.data).toEqual(events.at(-1)!.data);

      // After the final event there is nothing left: 204, and the same beyond it.
      expect((await turnEvents(h, eventId, rest.at(-1)!.id)).statusCode).toBe(204);
      expect((await turnEvents(h, eventId, '999')).statusCode).toBe(204);
      // Resuming from `accepted` (id 0) replays the whole turn.
      expect(deltaText(parseSse((await turnEvents(h, eventId, '0')).body))).toBe('one two three four five six');
    });
  });

  describe('resuming a finished turn', () => {
    it('204 only when the end was seen: the stored final event, or an end numbered past every stored event', () => {
      const done = { status: 'completed' as TurnStatus };
      const stored = [
        { seq: 1, type: 'status' },
        { seq: 2, type: 'delta' },
        { seq: 3, type: 'done' },
      ];
      const from = (after: number) => stored.filter((e) => e.seq >= after).slice(0, 2);
      expect(resumedPastEnd(done, 3, from(3))).toBe(true);
      expect(resumedPastEnd(done, 7, from(7))).toBe(true);
      expect(resumedPastEnd(done, 2, from(2))).toBe(false); // `done` is still to come
      expect(resumedPastEnd(done, 0, from(0))).toBe(false); // nothing seen
      expect(resumedPastEnd({ status: 'running' }, 3, from(3))).toBe(false); // not over (cannot happen with `done`)
      expect(resumedPastEnd({ status: 'waiting_approval' }, 9, [])).toBe(false); // paused: it goes on

      // A turn that ended without a stored final event (the ledger gives the end, numbered 3).
      const cut = stored.slice(0, 2);
      const upTo = (after: number) => cut.filter((e) => e.seq >= after).slice(0, 2);
      const interrupted = { status: 'interrupted' as TurnStatus };
      expect(resumedPastEnd(interrupted, 2, upTo(2))).toBe(false); // the end is still to be told
      expect(resumedPastEnd(interrupted, 3, upTo(3))).toBe(true);
      expect(resumedPastEnd({ status: 'failed' }, 1, [{ seq: 1, type: 'error' }])).toBe(true);
    });

    it('a malformed Last-Event-ID is still 400, an unknown turn 404', async () => {
      const h = await rig.open();
      const session = await createSession(h);
      const events = parseSse((await streamMessage(h, session, 'hi')).body);
      const eventId = (events[0]!.data as { event_id: string }).event_id;
      expect((await turnEvents(h, eventId, 'x1')).statusCode).toBe(400);
      expect((await turnEvents(h, 'evt_nope', '3')).statusCode).toBe(404);
    });
  });

  describe('keepalive', () => {
    it('every SSE stream carries `: ping` comments at the configured interval', async () => {
      const gate = deferred();
      const entered = deferred();
      const tool = recordingTool('slow_step', async () => {
        entered.resolve();
        await gate.promise;
        return { done: true };
      });
      const h = await rig.open({ tools: [tool], ssePingMs: 25 });
      cleanup(() => gate.resolve());
      const base = await h.gateway.listen();
      const session = await createSession(h);
      rig.fake.enqueue({ tool_calls: [{ name: 'slow_step', arguments: {} }] }, { content: 'finished', chunks: 2 });

      const streams: SseClient[] = [];
      const open = async (path: string, options: Parameters<typeof openSse>[2]) => {
        const client = await openSse(base, path, options);
        streams.push(client);
        cleanup(() => client.close());
        expect(client.status).toBe(200);
        return client;
      };
      const message = await open(`/api/v1/sessions/${enc(session)}/messages`, {
        method: 'POST',
        headers: apiHeaders,
        body: { content: 'work slowly' },
      });
      const accepted = await message.until((e) => e.length > 0);
      const eventId = (accepted[0]!.data as { event_id: string }).event_id;
      await entered.promise;
      const turn = await open(`/api/v1/turns/${eventId}/events`, { headers: apiHeaders });
      const logs = await open('/api/v1/logs?follow=true&source=nothing-logs-here', { headers: adminHeaders });

      // While the turn waits in its tool, each stream is idle but for its pings.
      await vi.waitFor(() => {
        for (const client of streams) expect(client.comments().filter((c) => c === 'ping').length).toBeGreaterThan(1);
      }, 3_000);
      expect(logs.events()).toEqual([]);

      gate.resolve();
      await message.until((e) => e.at(-1)?.event === 'done');
      await turn.until((e) => e.at(-1)?.event === 'done');
      await Promise.all([message.ended, turn.ended]);
      expect(deltaText(message.events())).toBe('finished');
    });
  });
});

describe('GET /logs?follow=true: ids and Last-Event-ID', () => {
  let pipeline: LogPipeline;
  const CAPACITY = 40;
  const rig = useHarness({
    scope: 'all',
    config: { logs: { level: 'debug', buffer_entries: CAPACITY } },
    logs: (config) => (pipeline = quietLogPipeline(config)),
  });
  const cleanup = useCleanups();
  const log = (source: string, message: string): void => pipeline.logger.child({ source }).info(message);
  const follow = async (source: string, lastEventId?: string): Promise<SseClient> => {
    const base = await listening();
    const client = await openSse(base, `/api/v1/logs?follow=true&source=${source}`, {
      headers: { ...adminHeaders, ...(lastEventId !== undefined ? { 'last-event-id': lastEventId } : {}) },
    });
    cleanup(() => client.close());
    return client;
  };
  let base: string | undefined;
  const listening = async (): Promise<string> => (base ??= await rig.gateway.listen());
  const messages = (events: SseEvent[]) => events.map((e) => (e.data as LogEntry).message);
  /** Closes a follower and waits until the buffer has let it go (so entries logged next are missed by it). */
  const leave = async (client: SseClient, listenersBefore: number) => {
    client.close();
    await vi.waitFor(() => expect(pipeline.buffer.stats().listeners).toBe(listenersBefore));
  };

  it('each entry has an id `<run>-<n>`; resuming replays exactly the entries after it, then goes on live', async () => {
    const listeners = pipeline.buffer.stats().listeners;
    const first = await follow('resume');
    log('resume', 'one');
    log('resume', 'two');
    const seen = await first.until((e) => e.length === 2);
    expect(messages(seen)).toEqual(['one', 'two']);
    const [runOne, seqOne] = seen[0]!.id!.split('-');
    const [runTwo, seqTwo] = seen[1]!.id!.split('-');
    expect(runOne).toBe(pipeline.buffer.run);
    expect(runTwo).toBe(runOne);
    expect(Number(seqTwo)).toBeGreaterThan(Number(seqOne));
    await leave(first, listeners);

    log('resume', 'three');
    log('elsewhere', 'not for this follower');
    log('resume', 'four');
    const again = await follow('resume', seen[1]!.id);
    expect(again.status).toBe(200);
    await again.until((e) => e.length === 2, 5_000, 'the replayed entries');
    log('resume', 'five');
    const all = await again.until((e) => e.length === 3, 5_000, 'the live entry');
    expect(messages(all)).toEqual(['three', 'four', 'five']);
    const seqs = all.map((e) => Number(e.id!.split('-')[1]));
    expect(seqs[0]).toBeGreaterThan(Number(seqTwo));
    expect([...seqs].sort((a, b) => a - b)).toEqual(seqs);
  });

  it('an id older than the buffer replays from the oldest kept entry; an id of another run replays every kept one', async () => {
    const listeners = pipeline.buffer.stats().listeners;
    const first = await follow('flood');
    log('flood', 'flood-0');
    const [zero] = await first.until((e) => e.length === 1);
    await leave(first, listeners);
    for (let i = 1; i < CAPACITY + 10; i++) log('flood', `flood-${i}`);

    const kept = pipeline.buffer.after(0, { source: 'flood' }).map((k) => k.entry.message);
    // What the buffer still holds: a contiguous tail of the flood, without its first entry.
    const total = CAPACITY + 10;
    expect(kept.length).toBeGreaterThan(0);
    expect(kept.length).toBeLessThanOrEqual(CAPACITY);
    expect(kept).toEqual(Array.from({ length: kept.length }, (_, i) => `flood-${total - kept.length + i}`));
    const resumed = await follow('flood', zero!.id);
    expect(messages(await resumed.until((e) => e.length === kept.length))).toEqual(kept);

    const otherRun = await follow('flood', 'ffffffff-3');
    expect(messages(await otherRun.until((e) => e.length === kept.length))).toEqual(kept);
  });

  it('a malformed Last-Event-ID → 400', async () => {
    const res = await rig.gateway.app.inject({
      method: 'GET',
      url: '/api/v1/logs?follow=true',
      headers: { ...adminHeaders, 'last-event-id': 'not an id' },
    });
    expect(res.statusCode).toBe(400);
  });
});
