/**
 * A flood against the built gateway process (ADR 0043): a slow fake model,
 * two turn slots and a short turn queue, offered far more waited turns, 202
 * acceptances and WebSocket messages than it can run. What it cannot take is
 * refused with 503 and Retry-After (or 429 with a retry hint on the
 * WebSocket's per-connection bound); nothing else fails; every acknowledged
 * message ends as a completed turn; accepted waited turns finish; health
 * answers throughout; and the gateway takes work again once the flood ends.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { killAllNow } from '../../bench/processes.js';
import { echoReply, startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai.js';
import { until } from '../helpers/until.js';
import {
  API_TOKEN,
  call,
  e2eHome,
  getTurn,
  pollUntil,
  removeE2EHomes,
  startGateway,
  stopGateway,
  type Running,
} from '../e2e/helpers.js';

let fake: FakeOpenAI | null = null;
afterEach(async () => {
  killAllNow();
  await fake?.close();
  fake = null;
  removeE2EHomes();
});

interface Answer {
  status: number;
  retryAfter: string | null;
  body: Record<string, unknown>;
}

async function post(running: Running, path: string, body: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(`${running.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-token': API_TOKEN, ...headers },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(60_000),
  });
  const text = await res.text();
  const answer: Answer = {
    status: res.status,
    retryAfter: res.headers.get('retry-after'),
    body: (text ? JSON.parse(text) : {}) as Record<string, unknown>,
  };
  return answer;
}

/** A WebSocket client that sends message frames and resolves each with its final or error frame. */
async function wsClient(running: Running): Promise<{
  send(ref: string): Promise<Record<string, unknown>>;
  close(): void;
}> {
  const socket = new WebSocket(`${running.url.replace('http', 'ws')}/api/v1/ws`, {
    headers: { 'x-api-token': API_TOKEN },
  });
  const waiting = new Map<string, (frame: Record<string, unknown>) => void>();
  /** Event id → ref: the final frame names the event, not the ref. */
  const refs = new Map<string, string>();
  let authed!: () => void;
  const ready = new Promise<void>((resolve) => (authed = resolve));
  socket.on('message', (data: Buffer) => {
    const frame = JSON.parse(data.toString('utf8')) as Record<string, unknown>;
    if (frame.type === 'auth_ok') authed();
    if (frame.type === 'accepted') refs.set(frame.event_id as string, frame.ref as string);
    const ref = (frame.ref as string | undefined) ?? refs.get(frame.event_id as string);
    if (ref !== undefined && (frame.type === 'final' || frame.type === 'error')) {
      waiting.get(ref)?.(frame);
      waiting.delete(ref);
    }
  });
  await new Promise<void>((resolve, reject) => {
    socket.once('open', () => resolve());
    socket.once('error', reject);
  });
  await ready;
  return {
    send: (ref) =>
      new Promise((resolve) => {
        waiting.set(ref, resolve);
        socket.send(JSON.stringify({ type: 'message', ref, text: `ws ${ref}`, session_key: `gateway:ws:${ref}` }));
      }),
    close: () => socket.terminate(),
  };
}

describe('overload: a flood against the gateway process', () => {
  it('sheds with 503 + Retry-After, loses no acknowledged message, finishes accepted turns, and recovers', async () => {
    fake = await startFakeOpenAI();
    fake.always({ delayMs: 50, then: echoReply });
    const home = e2eHome(fake, {
      security: { rate_limits: { read: 100_000, write: 100_000 } },
      agent: { max_concurrent_turns: 2, max_queued_turns: 20 },
      limits: { overload: { max_queue_wait_ms: 200 } },
    });
    const running = await startGateway(home);
    const clients = await Promise.all([wsClient(running), wsClient(running), wsClient(running)]);

    // One waited turn is running when the flood starts: it must finish.
    const first = post(running, '/api/v1/message?wait=true', {
      platform: 'api',
      user_id: 'u',
      chat_id: 'first',
      text: 'x',
    });
    await until('the first turn reached the model', () => fake!.requests.length > 0);
    const waited: Array<Promise<Answer>> = [first];
    // And one acknowledged message: it must end as a completed turn.
    const firstAck = await post(
      running,
      '/api/v1/message',
      { platform: 'api', user_id: 'u', chat_id: 'first-ack', text: 'x' },
      { 'idempotency-key': 'flood-first' },
    );
    expect(firstAck.status).toBe(202);
    const acked: Array<Promise<Answer>> = [Promise.resolve(firstAck)];
    const frames: Array<Promise<Record<string, unknown>>> = [];
    const healthStatuses: number[] = [];
    // Ten waves, each far more than two slots and a queue of twenty can hold.
    for (let wave = 0; wave < 10; wave++) {
      for (let i = 0; i < 15; i++) {
        const n = `${wave}-${i}`;
        waited.push(
          post(running, '/api/v1/message?wait=true', { platform: 'api', user_id: 'u', chat_id: `w${n}`, text: n }),
        );
        acked.push(
          post(
            running,
            '/api/v1/message',
            { platform: 'api', user_id: 'u', chat_id: `k${n}`, text: n },
            { 'idempotency-key': `flood-${n}` },
          ),
        );
        frames.push(clients[i % clients.length]!.send(`r${n}`));
      }
      healthStatuses.push((await call(running.url, 'GET', '/api/v1/health')).status);
    }
    const answers = [...(await Promise.all(waited)), ...(await Promise.all(acked))];

    // Only 200, 202 and 503; every 503 in the envelope with Retry-After.
    for (const answer of answers) {
      expect([200, 202, 503]).toContain(answer.status);
      if (answer.status === 503) {
        expect(answer.retryAfter).toMatch(/^\d+$/);
        expect((answer.body.error as { code: string }).code).toBe('UNAVAILABLE');
      }
    }
    expect(answers.some((a) => a.status === 503)).toBe(true);
    expect(healthStatuses.every((status) => status === 200)).toBe(true);

    // Accepted waited turns finished.
    const finished = (await Promise.all(waited)).filter((a) => a.status === 200);
    expect(finished.length).toBeGreaterThan(0);
    for (const answer of finished) expect(answer.body.status).toBe('completed');

    // Every acknowledged message ends as a completed turn.
    const ids = (await Promise.all(acked)).filter((a) => a.status === 202).map((a) => a.body.event_id as string);
    expect(ids.length).toBeGreaterThan(0);
    await pollUntil(
      'every acknowledged message completed',
      async () => {
        const turns = await Promise.all(ids.map((id) => getTurn(running.url, id)));
        return turns.every((turn) => turn.body.status === 'completed') ? true : undefined;
      },
      { timeoutMs: 30_000, intervalMs: 250 },
    );

    // WebSocket messages: a final, or an error frame with a retry hint.
    for (const frame of await Promise.all(frames)) {
      if (frame.type === 'final') continue;
      const error = frame.error as { code: string; details?: { retry_after_seconds?: number } };
      expect(['UNAVAILABLE', 'RATE_LIMITED']).toContain(error.code);
      if (error.code === 'UNAVAILABLE') expect(error.details?.retry_after_seconds).toBeGreaterThan(0);
    }
    for (const client of clients) client.close();

    // The flood is over: work is taken again.
    await until('a message is taken again', async () => {
      const answer = await post(running, '/api/v1/message', {
        platform: 'api',
        user_id: 'u',
        chat_id: 'after',
        text: 'x',
      });
      return answer.status === 202;
    });
    const metrics = await fetch(`${running.url}/metrics`, { headers: { 'x-api-token': API_TOKEN } });
    expect(await metrics.text()).toMatch(/gatehouse_shed_total\{reason="(queue_wait|queue_full)"\} [1-9]/);
    expect(await stopGateway(running, 'SIGTERM')).toBe(0);
  }, 90_000);
});
