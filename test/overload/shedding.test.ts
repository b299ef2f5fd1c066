/**
 * Load shedding (`limits.overload`, ADR 0043) in one gateway: the memory
 * watermark refuses new work on every entry point (REST, webhook, WebSocket)
 * with 503 and Retry-After while health and metrics answer and report it, and
 * takes work again once the sample drops; the turn queue refuses a turn that
 * would wait too long, while a keyed retry of an accepted one is still answered.
 * Memory is read through an injected probe and sampled by ManualTimers; the
 * queue's waits run on a ManualClock.
 */
import http from 'node:http';
import type { LightMyRequestResponse } from 'fastify';
import { describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import type { LoadProbes } from '../../src/overload/index.js';
import { echoReply } from '../helpers/fake-openai.js';
import { API_TOKEN, apiHeaders, useHarness, type Harness } from '../helpers/harness.js';
import { ManualTimers } from '../helpers/manual-timers.js';
import { until } from '../helpers/until.js';

const MB = 1024 * 1024;
/** How often the load probes are sampled (ms). */
const SAMPLE_MS = 500;

/** A memory probe the test sets; `sample(mb)` sets it and runs the next sample. */
function memoryProbe(): { probes: LoadProbes; sample(mb: number): void } {
  let bytes = 40 * MB;
  const timers = new ManualTimers();
  return {
    probes: { memory: () => bytes, timers, now: () => 0 },
    sample: (mb) => {
      bytes = mb * MB;
      timers.advance(SAMPLE_MS);
    },
  };
}

/** POST /api/v1/message from user u1 in chat `chat` (`query`: e.g. `?wait=true`). */
const send = (h: Harness, chat: string, text = 'hi', headers: Record<string, string> = {}, query?: string) =>
  h.message({ platform: 'api', user_id: 'u1', chat_id: chat, text }, headers, query);

/** Asserts a shed answer: 503 with Retry-After `seconds`, and the error it carries when `error` is given. */
function expectShed(res: LightMyRequestResponse, seconds: number, error?: Record<string, unknown>): void {
  expect(res.statusCode).toBe(503);
  expect(res.headers['retry-after']).toBe(String(seconds));
  if (error) expect(res.json().error).toMatchObject(error);
}

const getHealth = (h: Harness) => h.inject({ method: 'GET', url: '/api/v1/health' });
const getMetrics = (h: Harness) => h.inject({ method: 'GET', url: '/metrics', headers: apiHeaders });

/** Sends one message frame on an authenticated WebSocket and answers the first frame about it. */
async function wsMessage(wsUrl: string, text: string): Promise<Record<string, unknown>> {
  const socket = new WebSocket(wsUrl, { headers: { 'x-api-token': API_TOKEN } });
  const frames: Array<Record<string, unknown>> = [];
  let wake: (() => void) | null = null;
  socket.on('message', (data: Buffer) => {
    frames.push(JSON.parse(data.toString('utf8')) as Record<string, unknown>);
    wake?.();
  });
  const next = async (): Promise<Record<string, unknown>> => {
    while (frames.length === 0) await new Promise<void>((resolve) => (wake = resolve));
    return frames.shift()!;
  };
  try {
    await new Promise<void>((resolve, reject) => {
      socket.once('open', () => resolve());
      socket.once('error', reject);
    });
    expect(await next()).toMatchObject({ type: 'auth_ok' });
    socket.send(JSON.stringify({ type: 'message', ref: 'r1', text }));
    return await next();
  } finally {
    socket.terminate();
  }
}

describe('overload: the memory watermark', () => {
  const memory = memoryProbe();
  const h = useHarness({
    config: {
      limits: { overload: { memory_measure: 'rss', memory_watermark_mb: 100 } },
      channels: { webhook: { enabled: true, host: '127.0.0.1', port: 0 } },
    },
    limits: { overload: memory.probes },
  });

  it('refuses new work on REST, webhook and WebSocket with 503 and Retry-After; health and metrics report it; recovers', async () => {
    const base = await h.gateway.listen();
    const webhook = h.internals.webhook!.address!;
    const postWebhook = (text: string) =>
      fetch(`${webhook}/webhook`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ sender_id: 'u1', chat_id: 'c1', text }),
      });

    // Under the watermark: work is taken.
    expect((await send(h, 'c1')).statusCode).toBe(202);
    let health = await getHealth(h);
    expect(health.json().components.memory).toEqual({
      status: 'ok',
      measure: 'rss',
      value_mb: 40,
      watermark_mb: 100,
      shedding: false,
    });

    // Above it, from the next sample on.
    memory.sample(150);

    expectShed(await send(h, 'c2', 'hi', {}, '?wait=true'), 2, {
      code: 'UNAVAILABLE',
      details: { reason: 'memory', retry_after_seconds: 2 },
    });
    expectShed(await send(h, 'c3', 'hi', { 'idempotency-key': 'k-memory-1' }), 2);

    const hook = await postWebhook('hello');
    expect(hook.status).toBe(503);
    expect(hook.headers.get('retry-after')).toBe('2');
    expect(((await hook.json()) as { error: { code: string } }).error.code).toBe('UNAVAILABLE');

    const frame = await wsMessage(`${base.replace('http', 'ws')}/api/v1/ws`, 'hello');
    expect(frame).toMatchObject({
      type: 'error',
      ref: 'r1',
      error: { code: 'UNAVAILABLE', details: { reason: 'memory', retry_after_seconds: 2 } },
    });

    // Reads still answer: health (degraded, not unhealthy) and metrics.
    health = await getHealth(h);
    expect(health.statusCode).toBe(200);
    expect(health.json().status).toBe('degraded');
    expect(health.json().components.memory).toMatchObject({ status: 'degraded', value_mb: 150, shedding: true });
    const metrics = await getMetrics(h);
    expect(metrics.statusCode).toBe(200);
    expect(metrics.body).toContain(`gatehouse_memory_bytes{measure="rss"} ${150 * MB}`);
    expect(metrics.body).toContain(`gatehouse_memory_watermark_bytes{measure="rss"} ${100 * MB}`);
    expect(metrics.body).toContain('gatehouse_shedding 1');
    expect(metrics.body).toMatch(/gatehouse_shed_total\{reason="memory"\} 4\b/);

    // The sample drops: work is taken again at once.
    memory.sample(60);
    expect((await send(h, 'c2')).statusCode).toBe(202);
    expect((await postWebhook('again')).status).toBe(202);
    health = await getHealth(h);
    expect(health.json().components.memory).toMatchObject({ status: 'ok', shedding: false });
    const after = await getMetrics(h);
    expect(after.body).toContain('gatehouse_shedding 0');
  });

  it('keeps the connection of a small refused request open, and closes it after a large one', async () => {
    const base = new URL(await h.gateway.listen());
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    /** POSTs a message of about `bytes` over the agent's one socket: status, Connection, and whether it reused it. */
    const post = (bytes: number) =>
      new Promise<{ status: number; connection: string | undefined; reused: boolean }>((resolve, reject) => {
        const body = JSON.stringify({ platform: 'api', user_id: 'u1', chat_id: 'ka', text: 'x'.repeat(bytes) });
        const request = http.request(
          {
            host: base.hostname,
            port: base.port,
            path: '/api/v1/message',
            method: 'POST',
            agent,
            headers: { ...apiHeaders, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
          },
          (res) => {
            res.resume();
            res.on('end', () =>
              resolve({ status: res.statusCode!, connection: res.headers.connection, reused: request.reusedSocket }),
            );
          },
        );
        request.on('error', reject);
        request.end(body);
      });
    try {
      memory.sample(150);
      // Refused from its headers, before the body is read: a small body is read and dropped, the socket kept.
      expect(await post(100)).toEqual({ status: 503, connection: 'keep-alive', reused: false });
      expect(await post(100)).toEqual({ status: 503, connection: 'keep-alive', reused: true });
      // A large one is not read: the connection closes after the answer.
      expect(await post(200 * 1024)).toMatchObject({ status: 503, connection: 'close' });
      expect((await post(100)).reused).toBe(false);
    } finally {
      memory.sample(60);
      agent.destroy();
    }
  });
});

describe('overload: the heap measure and no watermark', () => {
  const memory = memoryProbe();
  const h = useHarness({
    config: { limits: { overload: { memory_measure: 'heap', memory_watermark_mb: null } } },
    limits: { overload: memory.probes },
  });

  it('never sheds for memory without a watermark, and reports the heap', async () => {
    memory.sample(10_000);
    expect((await send(h, 'c1')).statusCode).toBe(202);
    const health = await getHealth(h);
    expect(health.json().components.memory).toEqual({
      status: 'ok',
      measure: 'heap',
      value_mb: 10_000,
      watermark_mb: null,
      shedding: false,
    });
    const metrics = await getMetrics(h);
    expect(metrics.body).toContain(`gatehouse_memory_bytes{measure="heap"} ${10_000 * MB}`);
    expect(metrics.body).not.toContain('gatehouse_memory_watermark_bytes{');
  });
});

describe('overload: the event loop delay', () => {
  let nowMs = 0;
  const timers = new ManualTimers();
  const h = useHarness({
    config: { limits: { overload: { max_event_loop_delay_ms: 200 } } },
    limits: { overload: { memory: () => 40 * MB, timers, now: () => nowMs } },
  });
  /** Runs the next sample as though the clock read `at` ms when it ran. */
  const sampleAt = (at: number): void => {
    nowMs = at;
    timers.advance(SAMPLE_MS);
  };

  it('refuses writes once two samples in a row ran late, reads pass, and recovers at the next sample on time', async () => {
    // The sample due at 500 ms runs at 900 ms: 400 ms late. One stall alone sheds nothing.
    sampleAt(900);
    expect((await send(h, 'c0')).statusCode).toBe(202);
    // The next, due at 1400 ms, runs at 1700 ms: late again.
    sampleAt(1700);
    expectShed(await send(h, 'c1'), 1, { details: { reason: 'event_loop', retry_after_seconds: 1 } });
    expect((await getHealth(h)).statusCode).toBe(200);
    expect((await h.inject({ method: 'GET', url: '/api/v1/sessions', headers: apiHeaders })).statusCode).toBe(200);

    // The next sample (due at 2200 ms) is on time.
    sampleAt(2200);
    expect((await send(h, 'c1')).statusCode).toBe(202);
  });
});

describe('overload: the turn queue', () => {
  const h = useHarness({
    fake: true,
    clock: Date.parse('2026-11-21T10:00:00.000Z'),
    config: { agent: { max_concurrent_turns: 1 }, limits: { overload: { max_queue_wait_ms: 1000 } } },
  });

  it('refuses a turn that would wait past the budget (503, Retry-After), answers keyed retries, and takes work once the queue drains', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    h.fake.enqueue({ after: gate, then: echoReply });
    h.fake.always(echoReply);

    // One turn runs (the only slot); a second, of another session, waits for the slot.
    expect((await send(h, 'a', 'one')).statusCode).toBe(202);
    const second = await send(h, 'b', 'two', { 'idempotency-key': 'k-queue-2' });
    expect(second.statusCode).toBe(202);
    // A queue no deeper than 8 sessions is always taken, however long it has waited.
    h.clock.advance(150);
    for (const chat of ['c', 'e', 'f', 'g', 'h', 'i', 'j']) {
      expect((await send(h, chat, 'more')).statusCode).toBe(202);
    }

    // Now 8 wait, and the turn first in line has waited longer than the budget (50 ms before any turn has ended).
    expectShed(await send(h, 'd', 'four', {}, '?wait=true'), 1, {
      code: 'UNAVAILABLE',
      details: { reason: 'queue_wait', retry_after_seconds: 1, max_wait_ms: 50 },
    });

    // A retry of an accepted message is answered from its original, not refused.
    const retry = await send(h, 'b', 'two', { 'idempotency-key': 'k-queue-2' });
    expect(retry.statusCode).toBe(202);
    expect(retry.json().event_id).toBe(second.json().event_id);

    // The queue drains: new work is taken again.
    release();
    const { gauges } = h.internals.messages;
    await until('the queue drained', () => gauges.queued() === 0 && gauges.running() === 0);
    const taken = await send(h, 'd', 'four');
    expect(taken.json()).toMatchObject({ status: 'accepted' });
    const metrics = await getMetrics(h);
    expect(metrics.body).toMatch(/gatehouse_shed_total\{reason="queue_wait"\} 1\b/);
  });
});
