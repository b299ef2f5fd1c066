/**
 * Cluster-wide limits (ADR 0028): two built gateway processes on one
 * PostgreSQL database share one token's rate limit and the webhook's
 * `max_pending`. Each process alone would admit the whole limit; together
 * they admit it once (the requests here are spaced by more than one exchange
 * interval, so the documented overshoot does not show).
 */
import { createServer } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { killAllNow } from '../../bench/processes.js';
import { deferred } from '../helpers/deferred.js';
import { echoReply, startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai.js';
import { freshPgDatabase } from '../helpers/pg-databases.js';
import { testBackends } from '../helpers/stores.js';
import {
  ADMIN_TOKEN,
  API_TOKEN,
  call,
  e2eHome,
  pollUntil,
  removeE2EHomes,
  type Running,
  startGateway,
  stopGateway,
} from './helpers.js';

const postgres = testBackends().find((backend) => backend.name === 'postgres')!;

/** Longer than one exchange (250 ms) plus its statements: the others' counts are known after it. */
const SETTLE_MS = 700;
/**
 * A gateway whose last read found no other process reads the others only every 2 s (ADR 0028): the first one
 * up learns of the second within that long after the second's start. Counting across both begins after it.
 */
const JOIN_MS = 2_500;
const READ_LIMIT = 6;
const MAX_PENDING = 2;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A TCP port free right now on 127.0.0.1. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

/** Waits, if needed, so that the next few seconds stay inside one rate-limit minute. */
async function awayFromMinuteEdge(needMs: number): Promise<void> {
  const left = 60_000 - (Date.now() % 60_000);
  if (left < needMs) await sleep(left + 50);
}

/** POSTs an unsigned webhook message. */
async function hook(port: number, chat: string, text: string) {
  const res = await fetch(`http://127.0.0.1:${port}/webhook`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ sender_id: 'u1', chat_id: chat, text }),
    signal: AbortSignal.timeout(10_000),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

describe.skipIf(postgres.skip)(
  postgres.skip ? `cluster-wide limits (skipped: ${postgres.skipReason})` : 'cluster-wide limits',
  () => {
    const database = freshPgDatabase('gh_limits');
    let fake: FakeOpenAI;
    const ports: number[] = [];
    const gateways: Running[] = [];
    let startedAt = 0;

    beforeAll(async () => {
      await database.create();
      fake = await startFakeOpenAI();
      for (let i = 0; i < 2; i++) {
        const port = await freePort();
        ports.push(port);
        const home = e2eHome(fake, {
          gateway: { port: 0, auth: { mode: 'open', api_tokens: [API_TOKEN], admin_tokens: [ADMIN_TOKEN] } },
          storage: { driver: 'postgres', url: database.url },
          security: { rate_limits: { read: READ_LIMIT } },
          channels: { webhook: { enabled: true, host: '127.0.0.1', port, secret: null, max_pending: MAX_PENDING } },
        });
        gateways.push(await startGateway(home));
      }
      startedAt = Date.now();
    }, 30_000);

    afterAll(async () => {
      await Promise.allSettled(gateways.map((g) => stopGateway(g, 'SIGTERM', 5_000)));
      killAllNow();
      await fake?.close();
      await database.drop();
      removeE2EHomes();
    }, 30_000);

    it('one token gets 429 once it spent its read limit across both gateways', async () => {
      await sleep(Math.max(0, startedAt + JOIN_MS - Date.now()));
      await awayFromMinuteEdge(2 * READ_LIMIT * SETTLE_MS + 3_000);
      const statuses: number[] = [];
      const remaining: string[] = [];
      for (let i = 0; i < 2 * READ_LIMIT; i++) {
        const res = await call(gateways[i % 2]!.url, 'GET', '/api/v1/sessions', { token: API_TOKEN });
        statuses.push(res.status);
        remaining.push(res.headers.get('x-ratelimit-remaining') ?? '');
        await sleep(SETTLE_MS);
      }
      // Alone, each gateway would have admitted all of its six; together they admit six.
      expect(statuses).toEqual([...Array<number>(READ_LIMIT).fill(200), ...Array<number>(READ_LIMIT).fill(429)]);
      expect(remaining.slice(0, READ_LIMIT)).toEqual(['5', '4', '3', '2', '1', '0']);
      // Another token is counted apart.
      const admin = await call(gateways[1]!.url, 'GET', '/api/v1/sessions', { token: ADMIN_TOKEN });
      expect(admin.status).toBe(200);
    }, 30_000);

    it('the webhook max_pending bound counts the turns pending on both gateways', async () => {
      const gate = deferred();
      fake.enqueue({ after: gate.promise, then: echoReply }, { after: gate.promise, then: echoReply });
      fake.always(echoReply);
      const [portA, portB] = ports as [number, number];
      expect((await hook(portA, 'p1', 'one')).status).toBe(202);
      await sleep(SETTLE_MS);
      expect((await hook(portB, 'p2', 'two')).status).toBe(202);
      await sleep(SETTLE_MS);
      // Each holds one pending turn: the cluster holds max_pending.
      const refusedA = await hook(portA, 'p3', 'three');
      const refusedB = await hook(portB, 'p4', 'four');
      expect(refusedA.status).toBe(429);
      expect(refusedA.body).toMatchObject({ error: { code: 'RATE_LIMITED' } });
      expect(refusedB.status).toBe(429);
      // Once the turns reach their outcome, the slots are free on both.
      gate.resolve();
      await pollUntil(
        'a slot free again on B',
        async () => {
          const res = await hook(portB, `p5-${Date.now()}`, 'five');
          return res.status === 202 ? true : undefined;
        },
        { timeoutMs: 10_000, intervalMs: 300 },
      );
    }, 30_000);
  },
);
