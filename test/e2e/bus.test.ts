/**
 * Two gateways on one PostgreSQL database and one bus (ADR 0025), once over
 * Redis and once over NATS: what happens on A reaches B's live feed, B's SSE
 * follow of a turn run on A streams it and ends within a second of the
 * ledger's end, and a wait on B answers as soon as A's turn ends. B's bus
 * goes through a forwarder the test cuts: health turns degraded with the bus
 * failing, turns still end on B through the ledger, and after the
 * reconnection health is healthy again and the bus is the fast path again.
 * In-process gateways on real sockets (each its own bus connections,
 * instance id and database pool).
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import WebSocket from 'ws';
import { killAllNow, spawnGateway } from '../../bench/processes.js';
import { closedPort, testBusServers, testNamespace } from '../helpers/bus-servers.js';
import { deferred } from '../helpers/deferred.js';
import { echoReply, startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai.js';
import { ADMIN_TOKEN, adminHeaders, apiHeaders, startHarness, type Harness } from '../helpers/harness.js';
import { openSse } from '../helpers/sse-client.js';
import { freshPgDatabase } from '../helpers/pg-databases.js';
import { testBackends } from '../helpers/stores.js';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.js';
import { e2eHome, removeE2EHomes } from './helpers.js';

const postgres = testBackends().find((backend) => backend.name === 'postgres')!;

type Frame = { type: string; topic?: string; event?: string; data?: Record<string, unknown> };

/** An admin WebSocket subscribed to `topics`, keeping every frame, with a bounded wait for one that matches. */
async function subscriber(base: string, topics: string[]) {
  const ws = new WebSocket(`${base.replace('http', 'ws')}/api/v1/ws`, { headers: { 'x-api-token': ADMIN_TOKEN } });
  const frames: Frame[] = [];
  ws.on('message', (raw: Buffer) => frames.push(JSON.parse(raw.toString('utf8')) as Frame));
  const waitFor = (pred: (frame: Frame) => boolean, what: string) =>
    vi.waitFor(
      () => {
        const found = frames.find(pred);
        if (!found) throw new Error(`no frame yet: ${what}`);
        return found;
      },
      { timeout: 5_000, interval: 5 },
    );
  await waitFor((f) => f.type === 'auth_ok', 'auth_ok');
  ws.send(JSON.stringify({ type: 'subscribe', topics }));
  await waitFor((f) => f.type === 'subscribed', 'subscribed');
  return { ws, frames, waitFor };
}

/** One JSON request to a listening gateway. */
async function call(base: string, method: string, path: string, body?: unknown, headers = apiHeaders) {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { ...headers, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    signal: AbortSignal.timeout(10_000),
  });
  const text = await res.text();
  return { status: res.status, body: (text ? JSON.parse(text) : {}) as Record<string, unknown> };
}

/** Sends a message to `base` without waiting; answers its event id. */
async function accept(base: string, chat: string, text: string): Promise<string> {
  const res = await call(base, 'POST', '/api/v1/message', { platform: 'cli', user_id: 'u', chat_id: chat, text });
  expect(res.status).toBe(202);
  return res.body.event_id as string;
}

/** The ledger's end of a turn, in epoch ms (waits, bounded, until there is one). */
async function finishedAt(base: string, eventId: string): Promise<number> {
  return vi.waitFor(
    async () => {
      const res = await call(base, 'GET', `/api/v1/turns/${eventId}`, undefined, adminHeaders);
      const at = res.body.finished_at;
      if (typeof at !== 'string') throw new Error(`turn ${eventId} not finished: ${JSON.stringify(res.body)}`);
      return Date.parse(at);
    },
    { timeout: 10_000, interval: 20 },
  );
}

for (const server of testBusServers()) {
  const skip = postgres.skip || server.skip;
  const reason = postgres.skipReason ?? server.skipReason;
  const title = `two gateways on one PostgreSQL, bus ${server.driver}`;
  describe.skipIf(skip)(skip ? `${title} (skipped: ${reason})` : title, () => {
    const database = freshPgDatabase('gh_bus');
    let fake: FakeOpenAI;
    let proxy: TcpProxy;
    let a: Harness;
    let b: Harness;
    let baseA: string;
    let baseB: string;

    beforeAll(async () => {
      await database.create();
      fake = await startFakeOpenAI();
      fake.always(echoReply);
      proxy = await startTcpProxy(server);
      const namespace = testNamespace();
      const busUrl = (port: number) => {
        const parsed = new URL(server.url);
        parsed.port = String(port);
        return parsed.toString();
      };
      const config = (port: number) => ({
        storage: { driver: 'postgres', url: database.url },
        bus: { driver: server.driver, url: busUrl(port), namespace },
      });
      a = await startHarness({ fake, config: config(server.port) });
      b = await startHarness({ fake, config: config(proxy.port) });
      baseA = await a.gateway.listen();
      baseB = await b.gateway.listen();
    });

    afterAll(async () => {
      await b?.close();
      await a?.close();
      await proxy?.close();
      await fake?.close();
      await database.drop();
    });

    it('B’s live feed shows what A does (sessions, turns), once each; A’s own feed shows it once too', async () => {
      const onB = await subscriber(baseB, ['sessions', 'turns']);
      const onA = await subscriber(baseA, ['turns']);
      try {
        const created = await call(baseA, 'POST', '/api/v1/sessions', { channel: 'web' });
        expect(created.status).toBe(201);
        const id = created.body.id as string;
        await onB.waitFor((f) => f.topic === 'sessions' && f.event === 'created' && f.data?.id === id, 'created');

        const first = await accept(baseA, 'feed-1', 'hello');
        await onB.waitFor((f) => f.topic === 'sessions' && f.data?.event_id === first, 'sessions updated');
        const done = await onB.waitFor(
          (f) => f.topic === 'turns' && f.event === 'done' && f.data?.event_id === first,
          'done',
        );
        expect(done.data).toMatchObject({ status: 'completed', message: { content: 'fake: hello' } });

        // After a second turn's end arrived everywhere, the first one's events were each seen once.
        const second = await accept(baseA, 'feed-1', 'again');
        for (const side of [onA, onB]) {
          await side.waitFor((f) => f.topic === 'turns' && f.event === 'done' && f.data?.event_id === second, 'done 2');
        }
        const turnFrames = (frames: Frame[]) =>
          frames.filter((f) => f.topic === 'turns' && f.data?.event_id === first).map((f) => Number(f.data?.seq));
        for (const frames of [onA.frames, onB.frames]) {
          const seqs = turnFrames(frames);
          expect(seqs.length).toBeGreaterThanOrEqual(2);
          expect(new Set(seqs).size).toBe(seqs.length);
        }
        expect(turnFrames(onB.frames)).toEqual(turnFrames(onA.frames));
      } finally {
        onA.ws.close();
        onB.ws.close();
      }
    });

    it('an SSE follow on B of a turn run on A streams its deltas and ends within 1 s of the ledger', async () => {
      const gate = deferred();
      fake.enqueue({ after: gate.promise, then: { content: 'one two three', chunks: 3 } });
      const eventId = await accept(baseA, 'sse-1', 'stream please');
      const sse = await openSse(baseB, `/api/v1/turns/${eventId}/events`, { headers: apiHeaders });
      try {
        expect(sse.status).toBe(200);
        await sse.until((events) => events.some((e) => e.event === 'status'), 5_000, 'the running status');
        gate.resolve();
        const events = await sse.until((all) => all.some((e) => e.event === 'done'), 10_000, 'done');
        const doneAt = Date.now();
        const deltas = events.filter((e) => e.event === 'delta').map((e) => (e.data as { content: string }).content);
        expect(deltas.join('')).toBe('one two three');
        expect(events.at(-1)).toMatchObject({ event: 'done', data: { content: 'one two three' } });
        const ids = events.map((e) => Number(e.id));
        expect(ids).toEqual([...ids].sort((x, y) => x - y));
        expect(new Set(ids).size).toBe(ids.length);
        expect(doneAt - (await finishedAt(baseB, eventId))).toBeLessThan(1_000);
      } finally {
        sse.close();
      }
    });

    it('a wait on B for a turn run on A answers as soon as it ends', async () => {
      const gate = deferred();
      fake.enqueue({ after: gate.promise, then: { content: 'waited for' } });
      const eventId = await accept(baseA, 'wait-1', 'wait for me');
      const waiting = b.internals.messages.waitFor(eventId, 15_000);
      gate.resolve();
      const turn = await waiting;
      const answeredAt = Date.now();
      expect(turn).toMatchObject({ eventId, status: 'completed', response: 'waited for' });
      // B's ledger poll is 5 s while its bus is connected: only the bus can answer this fast.
      expect(answeredAt - (await finishedAt(baseA, eventId))).toBeLessThan(1_000);
    });

    it('B’s bus cut: health degraded with the bus failing, turns still end through the ledger; back: healthy', async () => {
      const health = async () => (await call(baseB, 'GET', '/api/v1/health')).body;
      const before = await health();
      expect(before).toMatchObject({ status: 'healthy', components: { bus: { status: 'ok' } } });
      expect(before.instance_id).toBe(b.internals.messages.owner);
      await vi.waitFor(
        async () =>
          expect((await health()).peers).toEqual([
            expect.objectContaining({ instance_id: a.internals.messages.owner }),
          ]),
        { timeout: 10_000, interval: 50 },
      );

      proxy.cut({ hold: true });
      const down = await vi.waitFor(
        async () => {
          const report = await health();
          expect(report.status).toBe('degraded');
          return report;
        },
        { timeout: 10_000, interval: 20 },
      );
      expect(down.components).toMatchObject({ bus: { status: 'failing' } });
      expect((down.components as { bus: { message: string } }).bus.message).toMatch(
        new RegExp(`^${server.driver}: connection lost .*; reconnecting`),
      );
      expect(down.message).toMatch(/^bus: /);
      // At most once: what B publishes meanwhile is dropped (counted), not queued. (Every gateway listens to
      // `tasks`: its task runner does.)
      expect((await call(baseB, 'POST', '/api/v1/tasks', { title: 'while cut' }, adminHeaders)).status).toBe(201);

      // Meanwhile a turn on A still reaches a waiter on B, through the ledger (1 s poll while the bus is down).
      const eventId = await accept(baseA, 'cut-1', 'while cut');
      const turn = await b.internals.messages.waitFor(eventId, 10_000);
      expect(turn).toMatchObject({ status: 'completed', response: 'fake: while cut' });

      proxy.restore();
      await vi.waitFor(async () => expect((await health()).status).toBe('healthy'), { timeout: 10_000, interval: 20 });
      const text = await (
        await fetch(`${baseB}/metrics`, { headers: adminHeaders, signal: AbortSignal.timeout(5_000) })
      ).text();
      expect(text).toMatch(/^gatehouse_bus_reconnects_total 1$/m);
      expect(text).toMatch(/^gatehouse_bus_lag_seconds_count [1-9]/m);
      expect(text).toMatch(/^gatehouse_bus_dropped_total\{reason="not_connected"\} [1-9]/m);

      // The bus is the fast path again: the subscriptions came back with the connection.
      const gate = deferred();
      fake.enqueue({ after: gate.promise, then: { content: 'after the cut' } });
      const next = await accept(baseA, 'cut-1', 'after');
      const waiting = b.internals.messages.waitFor(next, 15_000);
      gate.resolve();
      expect(await waiting).toMatchObject({ status: 'completed' });
      expect(Date.now() - (await finishedAt(baseA, next))).toBeLessThan(1_000);
    });
  });
}

describe('the built gateway with a bus it cannot reach', () => {
  let fake: FakeOpenAI | undefined;
  afterAll(async () => {
    killAllNow();
    await fake?.close();
    removeE2EHomes();
  });

  for (const driver of ['redis', 'nats'] as const) {
    it(`${driver}: stops at start-up with exit 1 and a message naming the URL without credentials, and the fix`, async () => {
      fake ??= await startFakeOpenAI();
      const port = await closedPort();
      const home = e2eHome(fake, { bus: { driver, url: `${driver}://ops:hunter2-secret@127.0.0.1:${port}` } });
      const gw = spawnGateway(['--config', home.configFile], { startTimeoutMs: 10_000 });
      const started = Date.now();
      expect(await gw.exited).toBe(1);
      expect(Date.now() - started).toBeLessThan(10_000);
      const stderr = gw.stderr.join('\n');
      expect(stderr).toContain(
        `gatehouse: fatal: BusUnavailableError: cannot reach the ${driver} bus at ${driver}://127.0.0.1:${port} (`,
      );
      expect(stderr).toContain('correct bus.url');
      expect(stderr).toContain('set bus.driver: local to run a single gateway without a shared bus');
      const everything = `${stderr}\n${gw.stdout.join('\n')}`;
      expect(everything).not.toContain('hunter2');
      expect(everything).not.toMatch(/\n\s+at /); // an operator's error: no stack trace
    });
  }
});
