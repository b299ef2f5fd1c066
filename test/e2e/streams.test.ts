/**
 * Streams of the built server over real sockets (ADR 0017): an
 * `EventSource` follows a turn to `done` and stops there (204 on its one
 * reconnect); a middle `Last-Event-ID` replays the rest and ends; and every
 * SSE event and WebSocket frame recorded here validates against the
 * payload schemas of the served AsyncAPI document.
 */
import { EventSource } from 'eventsource';
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { killAllNow } from '../../bench/processes.js';
import { payloadChecker, type AsyncApiDoc, type PayloadChecker } from '../helpers/asyncapi-payloads.js';
import { startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai.js';
import { openSse } from '../helpers/sse-client.js';
import type { SseEvent } from '../helpers/sse.js';
import {
  ADMIN_TOKEN,
  API_TOKEN,
  call,
  e2eHome,
  postMessage,
  readSse,
  removeE2EHomes,
  startGateway,
  within,
  type Running,
} from './helpers.js';

/** The reconnection delay the client is told to use (the `retry:` field), far below EventSource's 3 s default. */
const RETRY_MS = 50;
/** How long the client is watched after the end: at `RETRY_MS`, room for dozens of reconnects. */
const QUIET_WINDOW_MS = 1_500;

/** Puts `retry: RETRY_MS` in front of an SSE body, so the client reconnects after RETRY_MS. */
function withShortRetry(body: ReadableStream<Uint8Array>): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  let told = false;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (!told) {
        told = true;
        controller.enqueue(new TextEncoder().encode(`retry: ${RETRY_MS}\n\n`));
        return;
      }
      const { done, value } = await reader.read();
      if (done) controller.close();
      else controller.enqueue(value);
    },
    cancel: (reason) => reader.cancel(reason),
  });
}

const text = (raw: WebSocket.RawData): string =>
  Buffer.isBuffer(raw)
    ? raw.toString('utf8')
    : Array.isArray(raw)
      ? Buffer.concat(raw).toString('utf8')
      : Buffer.from(raw).toString('utf8');

describe('streams of the built server', () => {
  const fakes: FakeOpenAI[] = [];
  const closers: Array<() => void> = [];
  afterEach(async () => {
    for (const close of closers.splice(0)) close();
    killAllNow();
    const closing = fakes.splice(0);
    await Promise.all(closing.map((f) => f.close()));
    removeE2EHomes();
    for (const f of closing) f.verify();
  });
  const start = async (extra: Record<string, unknown> = {}): Promise<{ gw: Running; openai: FakeOpenAI }> => {
    const openai = await startFakeOpenAI();
    fakes.push(openai);
    const gw = await startGateway(
      e2eHome(openai, { security: { rate_limits: { read: 100_000, write: 100_000 } }, ...extra }),
    );
    return { gw, openai };
  };
  const asyncApi = async (url: string): Promise<PayloadChecker> => {
    const res = await call<AsyncApiDoc>(url, 'GET', '/api/v1/asyncapi.json', { token: API_TOKEN });
    expect(res.status).toBe(200);
    return payloadChecker(res.body);
  };
  const expectValid = (check: PayloadChecker, channel: string, events: SseEvent[]) => {
    expect(events.length).toBeGreaterThan(0);
    for (const e of events)
      expect(check.errors(channel, e.event, e.data), `${e.event} ${JSON.stringify(e.data)}`).toEqual([]);
  };

  it('an EventSource follows a turn to done, and then reconnects once, gets 204 and stops', async () => {
    const { gw, openai } = await start();
    openai.enqueue({ content: 'streamed over EventSource', chunks: 3 });
    const ack = await postMessage<{ event_id: string }>(gw.url, {
      platform: 'e2e',
      user_id: 'u1',
      chat_id: 'es',
      text: 'stream it',
    });
    expect(ack.status).toBe(202);
    const eventId = ack.body.event_id;

    const requests: Array<{ lastEventId: string | null; status: number }> = [];
    const es = new EventSource(`${gw.url}/api/v1/turns/${eventId}/events`, {
      fetch: async (input, init) => {
        const headers: Record<string, string> = {
          ...(init?.headers as Record<string, string>),
          'x-api-token': API_TOKEN,
        };
        const res = await fetch(input, { ...init, headers });
        requests.push({ lastEventId: headers['Last-Event-ID'] ?? null, status: res.status });
        if (res.status !== 200 || !res.body) return res;
        return new Response(withShortRetry(res.body), { status: res.status, headers: res.headers });
      },
    });
    closers.push(() => es.close());
    const received: Array<{ event: string; id: string; data: unknown }> = [];
    // (`error` is left out: an EventSource dispatches its own connection errors under that name.)
    for (const name of ['status', 'delta', 'tool_call', 'tool_result', 'done']) {
      es.addEventListener(name, (event) => {
        received.push({ event: name, id: event.lastEventId, data: JSON.parse(event.data) as unknown });
      });
    }
    const stopped = new Promise<{ code: number | undefined }>((resolve) => {
      es.addEventListener('error', (event) => {
        if (es.readyState === es.CLOSED) resolve({ code: event.code });
      });
    });
    const end = await within(stopped, 10_000, 'the EventSource to stop');
    expect(end.code).toBe(204);
    expect(received.map((e) => e.event)).toEqual(['status', 'delta', 'delta', 'delta', 'done']);
    expect(received.at(-1)!.data).toMatchObject({ status: 'completed', content: 'streamed over EventSource' });
    const doneId = received.at(-1)!.id;

    // Watched long enough for dozens of reconnects at the short retry: there is exactly one.
    await new Promise((resolve) => setTimeout(resolve, QUIET_WINDOW_MS));
    expect(requests).toEqual([
      { lastEventId: null, status: 200 },
      { lastEventId: doneId, status: 204 },
    ]);
  });

  it('a middle Last-Event-ID replays the rest and the stream ends after done', async () => {
    const { gw, openai } = await start();
    openai.enqueue({ content: 'abcdef', chunks: 3 });
    const waited = await postMessage<{ event_id: string }>(gw.url, {
      platform: 'e2e',
      user_id: 'u1',
      chat_id: 'resume',
      text: 'go',
      wait: true,
    });
    expect(waited.status).toBe(200);
    const path = `/api/v1/turns/${waited.body.event_id}/events`;
    const all = await readSse(gw.url, path, { token: API_TOKEN });
    expect(all.events.map((e) => e.id)).toEqual(['1', '2', '3', '4', '5']);
    // `readSse` reads to the end of the response: the server closed each stream after its final event.
    const rest = await readSse(gw.url, path, { token: API_TOKEN, headers: { 'last-event-id': '2' } });
    expect(rest.events.map((e) => [e.id, e.event])).toEqual([
      ['3', 'delta'],
      ['4', 'delta'],
      ['5', 'done'],
    ]);
    const after = await fetch(`${gw.url}${path}`, { headers: { 'x-api-token': API_TOKEN, 'last-event-id': '5' } });
    expect(after.status).toBe(204);
    expect(await after.text()).toBe('');
  });

  it('SSE events of the message stream, the turn events and the log follow match the AsyncAPI schemas', async () => {
    const { gw, openai } = await start({ logs: { level: 'debug' } }); // every request is logged
    const check = await asyncApi(gw.url);
    const session = await call<{ id: string }>(gw.url, 'POST', '/api/v1/sessions', { token: API_TOKEN, body: {} });
    expect(session.status).toBe(201);
    openai.enqueue(
      { tool_calls: [{ id: 'call_1', name: 'memory_search', arguments: { query: 'colours' } }] },
      { content: 'nothing saved yet', chunks: 2 },
    );
    const logs = await openSse(gw.url, '/api/v1/logs?follow=true', { headers: { 'x-api-token': ADMIN_TOKEN } });
    closers.push(() => logs.close());
    expect(logs.status).toBe(200);

    const message = await openSse(gw.url, `/api/v1/sessions/${encodeURIComponent(session.body.id)}/messages`, {
      method: 'POST',
      headers: { 'x-api-token': API_TOKEN },
      body: { content: 'what did I save?' },
    });
    await message.ended;
    const streamed = message.events();
    expect(streamed.map((e) => e.event)).toEqual(['accepted', 'tool_call', 'tool_result', 'delta', 'delta', 'done']);
    expectValid(check, 'messageStream', streamed);
    const eventId = (streamed[0]!.data as { event_id: string }).event_id;

    const turn = await readSse(gw.url, `/api/v1/turns/${eventId}/events`, { token: API_TOKEN });
    expect(turn.events.map((e) => e.event)).toContain('status');
    expectValid(check, 'turnEvents', turn.events);

    expect((await call(gw.url, 'GET', '/api/v1/turns/evt_missing', { token: ADMIN_TOKEN })).status).toBe(404);
    const entries = await logs.until((e) => e.length > 0, 5_000, 'a log entry');
    for (const e of entries) expect(e.id).toMatch(/^[0-9a-f]+-\d+$/);
    expectValid(check, 'logFollow', entries);
  });

  it('WebSocket frames, sent and received, match the AsyncAPI schemas', async () => {
    const { gw, openai } = await start();
    const check = await asyncApi(gw.url);
    openai.enqueue(
      { tool_calls: [{ id: 'call_1', name: 'memory_search', arguments: { query: 'plans' } }] },
      { content: 'no plans found', chunks: 2 },
    );
    const ws = new WebSocket(`${gw.url.replace(/^http/, 'ws')}/api/v1/ws`);
    closers.push(() => ws.terminate());
    const frames: Array<Record<string, unknown> & { type: string }> = [];
    const arrived = (pred: (f: (typeof frames)[number]) => boolean, what: string) =>
      within(
        new Promise<void>((resolve) => {
          const look = (): void => {
            if (frames.some(pred)) {
              ws.off('message', look);
              resolve();
            }
          };
          ws.on('message', look);
          look();
        }),
        10_000,
        what,
      );
    ws.on('message', (raw) => frames.push(JSON.parse(text(raw)) as (typeof frames)[number]));
    await within(new Promise((resolve) => ws.once('open', resolve)), 5_000, 'the socket to open');

    const sent = [
      { type: 'auth', token: ADMIN_TOKEN, user_id: 'frames', chat_id: 'frames' },
      { type: 'subscribe', topics: ['turns'] },
      { type: 'message', text: 'any plans?', ref: 'm1' },
      { type: 'ping' },
      { type: 'interrupt', event_id: 'evt_not_running' },
      { type: 'unsubscribe', topics: ['turns'] },
    ];
    for (const frame of sent) expect(check.errors('websocket', frame.type, frame), frame.type).toEqual([]);
    ws.send(JSON.stringify(sent[0]));
    await arrived((f) => f.type === 'auth_ok', 'auth_ok');
    ws.send(JSON.stringify(sent[1]));
    await arrived((f) => f.type === 'subscribed', 'subscribed');
    ws.send(JSON.stringify(sent[2]));
    await arrived((f) => f.type === 'final', 'final');
    for (const frame of sent.slice(3)) ws.send(JSON.stringify(frame));
    ws.send('{"type": "message"}'); // invalid: answered with an error frame
    await arrived((f) => f.type === 'unsubscribed', 'unsubscribed');
    await arrived((f) => f.type === 'error' && (f.error as { code: string }).code === 'BAD_REQUEST', 'an error frame');

    const types = new Set(frames.map((f) => f.type));
    for (const type of ['auth_ok', 'subscribed', 'accepted', 'tool_call', 'tool_result', 'delta', 'final', 'event'])
      expect(types, type).toContain(type);
    expect(types).toContain('pong');
    for (const frame of frames) expect(check.errors('websocket', frame.type, frame), JSON.stringify(frame)).toEqual([]);
  });
});
