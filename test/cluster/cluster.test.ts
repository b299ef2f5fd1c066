/**
 * The cluster tier (`npm run test:cluster`, ADR 0029): two and three built gateway processes on one fresh
 * PostgreSQL database, once with a Redis bus and once with a NATS bus. What the database decides holds
 * across processes (keyed retries, pairing lockouts), one session's turns never overlap wherever they are
 * accepted, waits and follows reach `done` through the bus, a `kill -9` of one gateway hands its accepted
 * turns to a survivor within the takeover time and ends its running one `interrupted`, a restarted gateway
 * takes its own turns back at once, and a bus cut mid-load loses and doubles nothing.
 */
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { killAllNow } from '../../bench/processes.js';
import { signXSignature } from '../../src/channels/webhook/webhook.signature.js';
import { testBusServers, testNamespace, type TestBusServer } from '../helpers/bus-servers.js';
import { deferred } from '../helpers/deferred.js';
import { echoReply, lastUserText, startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai.js';
import { openSse } from '../helpers/sse-client.js';
import { freshPgDatabase, withPgClient } from '../helpers/pg-databases.js';
import { testBackends } from '../helpers/stores.js';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.js';
import {
  ADMIN_TOKEN,
  API_TOKEN,
  call,
  type E2EHome,
  e2eHome,
  killNow,
  removeE2EHomes,
  type Running,
  startGateway,
  stopGateway,
} from '../e2e/helpers.js';

const postgres = testBackends().find((backend) => backend.name === 'postgres')!;
const WEBHOOK_SECRET = 'cluster-webhook-secret';

/** A loopback port free right now (the webhook's port must be known before its gateway starts). */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** POSTs a signed webhook message; answers status and parsed body. */
async function hook(port: number, body: Record<string, unknown>, key: string) {
  const text = JSON.stringify(body);
  const res = await fetch(`http://127.0.0.1:${port}/webhook`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-signature': signXSignature(WEBHOOK_SECRET, text),
      'idempotency-key': key,
    },
    body: text,
    signal: AbortSignal.timeout(20_000),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

/** The takeover time of these gateways: short, so a dead one's turns move within the test's patience. */
const TAKEOVER_MS = 2_000;

interface LedgerRow {
  event_id: string;
  seq: number;
  status: string;
  owner: string | null;
  termination_reason: string | null;
  started_at: string | null;
  finished_at: string | null;
}

/** A fresh database for one describe block; `ledger` reads its turns table directly. */
function freshDatabase() {
  const database = freshPgDatabase('gh_cluster');
  return {
    ...database,
    ledger: (sessionKey: string) =>
      withPgClient(database.url, async (client) => {
        const result = await client.query<LedgerRow>(
          `select event_id, seq::int as seq, status, owner, termination_reason, started_at, finished_at
             from turns where session_key = $1 order by seq`,
          [sessionKey],
        );
        return result.rows;
      }),
  };
}

/** POST /message to `base`; answers the parsed response. */
function send(base: string, chat: string, text: string, extra: { wait?: boolean; key?: string } = {}) {
  return call(base, 'POST', '/api/v1/message', {
    token: API_TOKEN,
    body: { platform: 'cli', user_id: 'u', chat_id: chat, text, ...(extra.wait ? { wait: true } : {}) },
    ...(extra.key ? { headers: { 'idempotency-key': extra.key } } : {}),
    timeoutMs: 30_000,
  });
}

/** Waits (bounded) until every turn of `sessionKey` in the database is terminal; answers the rows. */
async function settled(db: ReturnType<typeof freshDatabase>, sessionKey: string, count: number, timeout = 20_000) {
  return vi.waitFor(
    async () => {
      const rows = await db.ledger(sessionKey);
      const open = rows.filter((row) => row.finished_at === null);
      if (rows.length < count || open.length > 0) {
        throw new Error(`${sessionKey}: ${rows.length}/${count} turns, ${open.length} open`);
      }
      return rows;
    },
    { timeout, interval: 25 },
  );
}

/** Checks that the turns never overlap and started in arrival order. */
function expectOneAtATime(rows: LedgerRow[]): void {
  for (let i = 1; i < rows.length; i++) {
    const previous = rows[i - 1]!;
    const row = rows[i]!;
    expect(row.seq).toBeGreaterThan(previous.seq);
    expect(
      Date.parse(row.started_at!),
      `${row.event_id} started before ${previous.event_id} ended`,
    ).toBeGreaterThanOrEqual(Date.parse(previous.finished_at!));
  }
}

function clusterConfig(
  database: string,
  server: TestBusServer,
  namespace: string,
  busPort: number,
  takeoverMs: number,
) {
  const busUrl = new URL(server.url);
  busUrl.port = String(busPort);
  return {
    storage: { driver: 'postgres', url: database },
    bus: { driver: server.driver, url: busUrl.toString(), namespace },
    cluster: { takeover_after_ms: takeoverMs },
    // The load of these tests stays far below the limits; their sharing has its own test (e2e/cluster-limits).
    security: { rate_limits: { read: 100_000, write: 100_000 } },
  };
}

for (const server of testBusServers()) {
  const skip = postgres.skip || server.skip;
  const reason = postgres.skipReason ?? server.skipReason;
  const title = `three gateways on one PostgreSQL, bus ${server.driver}`;
  describe.skipIf(skip)(skip ? `${title} (skipped: ${reason})` : title, () => {
    const db = freshDatabase();
    let fake: FakeOpenAI;
    let proxy: TcpProxy;
    const homes: E2EHome[] = [];
    const gateways: Running[] = [];
    const webhookPorts: number[] = [];

    beforeAll(async () => {
      await db.create();
      fake = await startFakeOpenAI();
      fake.always(echoReply);
      proxy = await startTcpProxy(server);
      const namespace = testNamespace();
      // C reaches the bus through a proxy the last test cuts.
      for (const port of [server.port, server.port, proxy.port]) {
        const webhookPort = await freePort();
        webhookPorts.push(webhookPort);
        const home = e2eHome(fake, {
          ...clusterConfig(db.url, server, namespace, port, TAKEOVER_MS),
          channels: { webhook: { enabled: true, host: '127.0.0.1', port: webhookPort, secret: WEBHOOK_SECRET } },
        });
        homes.push(home);
        gateways.push(await startGateway(home));
      }
      // Every gateway sees the others as peers before the tests begin.
      await vi.waitFor(
        async () => {
          for (const gw of gateways) {
            const health = (await call(gw.url, 'GET', '/api/v1/health', { token: ADMIN_TOKEN })).body;
            expect((health.peers as unknown[]).length).toBe(2);
          }
        },
        { timeout: 15_000, interval: 100 },
      );
    }, 60_000);

    afterAll(async () => {
      killAllNow();
      await proxy?.close();
      await fake?.close();
      await db.drop();
      removeE2EHomes();
    });

    it('a keyed retry to another gateway replays the same turn: same event id and body, one model call', async () => {
      const [a, b] = gateways;
      const before = fake.requests.length;
      const first = await send(a!.url, 'keyed', 'once only', { wait: true, key: 'k-cluster-1' });
      expect(first.status).toBe(200);
      const retry = await send(b!.url, 'keyed', 'once only', { wait: true, key: 'k-cluster-1' });
      expect(retry.status).toBe(200);
      expect(retry.body).toEqual(first.body);
      expect(fake.requests.length - before).toBe(1);
    });

    it('a waited message on B for a turn accepted on A answers within 1 s of its end, and an SSE follow on B ends with done', async () => {
      const [a, b] = gateways;
      const gate = deferred();
      fake.enqueue({ after: gate.promise, then: { content: 'across' } });
      const accepted = await send(a!.url, 'across', 'run on A');
      expect(accepted.status).toBe(202);
      const eventId = accepted.body.event_id as string;
      const stream = await openSse(b!.url, `/api/v1/turns/${eventId}/events`, {
        headers: { 'x-api-token': ADMIN_TOKEN },
      });
      const retried = send(b!.url, 'across', 'run on A', { wait: true });
      gate.resolve();
      const events = await stream.until((all) => all.some((event) => event.event === 'done'), 10_000, 'done');
      const doneAt = Date.now();
      expect(events.at(-1)?.event).toBe('done');
      const rows = await settled(db, accepted.body.session_key as string, 2);
      expect(doneAt - Date.parse(rows[0]!.finished_at!)).toBeLessThan(1_000);
      expect((await retried).status).toBe(200);
    });

    it('a webhook wait on A and its retry on B answer the same turn, run once', async () => {
      const gate = deferred();
      fake.enqueue({ after: gate.promise, then: { content: 'hooked once' } });
      const before = fake.requests.length;
      const body = { sender_id: 'hooker', chat_id: 'hook', text: 'webhook across', wait: true };
      const first = hook(webhookPorts[0]!, body, 'hook-key-1');
      await vi.waitFor(() => expect(fake.requests.length).toBe(before + 1), { timeout: 5_000, interval: 10 });
      const retry = hook(webhookPorts[1]!, body, 'hook-key-1');
      gate.resolve();
      const [a, b] = await Promise.all([first, retry]);
      expect(a.status).toBe(200);
      expect(b.status).toBe(200);
      expect(b.body.event_id).toBe(a.body.event_id);
      expect(a.body).toMatchObject({ response: 'hooked once' });
      expect(b.body).toEqual(a.body);
      expect(fake.requests.length - before).toBe(1);
    });

    it('one session’s turns never overlap, in arrival order, wherever accepted; two sessions run in parallel', async () => {
      fake.always({ delayMs: 80, then: echoReply });
      try {
        const sends: Array<Promise<{ body: Record<string, unknown> }>> = [];
        let order = '';
        for (let i = 0; i < 9; i++) {
          const gw = gateways[i % gateways.length]!;
          // Sent one after another: each is acknowledged (durable, in the ledger) before the next goes out.
          const res = await send(gw.url, 'order', `order ${i}`);
          expect(res.status).toBe(202);
          order = res.body.session_key as string;
          sends.push(send(gw.url, `parallel-${i % 3}`, `side ${i}`));
        }
        const sideKeys = new Set((await Promise.all(sends)).map((res) => res.body.session_key as string));
        expect(sideKeys.size).toBe(3);
        const rows = await settled(db, order, 9, 30_000);
        expect(rows.map((row) => row.status)).toEqual(Array(9).fill('completed'));
        expectOneAtATime(rows);
        expect(new Set(rows.map((row) => row.owner)).size).toBe(3);
        // The model saw the session's messages in arrival order.
        const texts = fake.requests.map((request) => lastUserText(request.body)).filter((t) => t.startsWith('order '));
        expect(texts).toEqual(Array.from({ length: 9 }, (_, i) => `order ${i}`));
        // Other sessions were not held up behind it: some ran while it did.
        const side = (await Promise.all([...sideKeys].map((key) => settled(db, key, 3)))).flat();
        const overlaps = side.some((s) =>
          rows.some(
            (r) =>
              Date.parse(s.started_at!) < Date.parse(r.finished_at!) &&
              Date.parse(r.started_at!) < Date.parse(s.finished_at!),
          ),
        );
        expect(overlaps).toBe(true);
      } finally {
        fake.always(echoReply);
      }
    });

    // Decided in the database, whatever the bus: waiting for a minute boundary once is enough.
    if (server.driver === 'redis') {
      it('a cron job due every minute runs once per due minute across three gateways', async () => {
        const [a, b, c] = gateways;
        const prompt = `cron across ${server.driver} ${randomBytes(3).toString('hex')}`;
        const created = await call(a!.url, 'POST', '/api/v1/cron', {
          token: ADMIN_TOKEN,
          body: { schedule: '* * * * *', prompt },
        });
        expect(created.status).toBe(201);
        const id = created.body.id as string;
        expect((await call(b!.url, 'POST', `/api/v1/cron/${id}/authorize`, { token: ADMIN_TOKEN })).status).toBe(200);
        type Run = { scheduled_at: string; status: string; event_id: string | null; triggered_by: string };
        const runs = async () =>
          ((await call(c!.url, 'GET', `/api/v1/cron/${id}/runs?limit=100`, { token: ADMIN_TOKEN })).body.items ??
            []) as Run[];
        // The next minute boundary (at most a minute away), then a few seconds for every scheduler to have looked.
        const first = await vi.waitFor(
          async () => {
            const done = (await runs()).filter((run) => run.event_id !== null);
            if (done.length === 0) throw new Error('no cron run yet');
            return done[0]!;
          },
          { timeout: 75_000, interval: 250 },
        );
        await new Promise((resolve) => setTimeout(resolve, 3_000));
        const all = (await runs()).filter((run) => run.scheduled_at === first.scheduled_at);
        expect(all).toHaveLength(1);
        await vi.waitFor(
          () =>
            expect(fake.requests.filter((request) => JSON.stringify(request.body).includes(prompt))).toHaveLength(1),
          { timeout: 10_000, interval: 50 },
        );
        expect((await call(a!.url, 'DELETE', `/api/v1/cron/${id}`, { token: ADMIN_TOKEN })).status).toBeLessThan(300);
      });
    }

    it('pairing lockout is shared: wrong codes on different gateways add up', async () => {
      const platform = `p${randomBytes(3).toString('hex')}`;
      let locked = 0;
      for (let i = 0; i < 7; i++) {
        const gw = gateways[i % gateways.length]!;
        const res = await call(gw.url, 'POST', '/api/v1/pair/verify', {
          token: API_TOKEN,
          body: { platform, user_id: 'guesser', code: '000000' },
        });
        expect([401, 429]).toContain(res.status);
        if (res.status === 429) locked++;
      }
      expect(locked).toBeGreaterThanOrEqual(2);
    });

    it('a bus cut mid-load: every acknowledged message runs once, none lost, none doubled', async () => {
      const [a, , c] = gateways;
      const acked: string[] = [];
      const sessions = new Set<string>();
      const sendSome = async (from: number, to: number) => {
        for (let i = from; i < to; i++) {
          const gw = i % 2 === 0 ? a! : c!;
          const res = await send(gw.url, `cut-${i % 4}`, `cut ${i}`, { key: `cut-key-${i}` });
          expect(res.status).toBe(202);
          acked.push(res.body.event_id as string);
          sessions.add(res.body.session_key as string);
        }
      };
      const before = fake.requests.length;
      await sendSome(0, 10);
      proxy.cut({ hold: true });
      await sendSome(10, 20);
      proxy.restore();
      await sendSome(20, 30);
      expect(sessions.size).toBe(4);
      const bySession = await Promise.all([...sessions].map((key) => settled(db, key, 0, 30_000)));
      const mine = bySession.flat().filter((row) => acked.includes(row.event_id));
      expect(mine).toHaveLength(30);
      expect(mine.every((row) => row.status === 'completed')).toBe(true);
      const texts = fake.requests.slice(before).map((request) => lastUserText(request.body));
      expect(texts.filter((t) => t.startsWith('cut ')).sort()).toEqual(
        Array.from({ length: 30 }, (_, i) => `cut ${i}`).sort(),
      );
      for (const rows of bySession) expectOneAtATime(rows);
    });

    it('kill -9 of A: a survivor runs its accepted turns within the takeover time, its running one ends interrupted', async () => {
      const [a, b] = gateways;
      const gate = deferred();
      fake.enqueue({ after: gate.promise, then: { content: 'never seen' } });
      const running = await send(a!.url, 'takeover', 'hangs on A');
      expect(running.status).toBe(202);
      const session = running.body.session_key as string;
      await vi.waitFor(async () => expect((await db.ledger(session))[0]?.status).toBe('running'), {
        timeout: 5_000,
        interval: 10,
      });
      for (let i = 0; i < 3; i++) expect((await send(a!.url, 'takeover', `queued ${i}`)).status).toBe(202);
      const killedAt = Date.now();
      a!.gw.process.kill('SIGKILL');
      const rows = await settled(db, session, 4, TAKEOVER_MS + 10_000);
      const tookMs = Math.max(...rows.map((row) => Date.parse(row.finished_at!))) - killedAt;
      console.log(`[cluster ${server.driver}] takeover: all of A's turns settled ${tookMs} ms after kill -9`);
      gate.resolve();
      expect(rows[0]).toMatchObject({ status: 'interrupted', termination_reason: 'process_restart' });
      expect(rows.slice(1).map((row) => row.status)).toEqual(['completed', 'completed', 'completed']);
      expect(rows.slice(1).every((row) => row.owner !== rows[0]!.owner)).toBe(true);
      expect(tookMs).toBeLessThan(TAKEOVER_MS + 2_000);
      expectOneAtATime(rows.slice(1));
      // B answers for them as for its own.
      const turn = await call(b!.url, 'GET', `/api/v1/turns/${rows[3]!.event_id}`, { token: ADMIN_TOKEN });
      expect(turn.body).toMatchObject({ status: 'completed', response: 'fake: queued 2' });
    });
  });
}

describe.skipIf(postgres.skip)('a gateway restarted on PostgreSQL', () => {
  const db = freshDatabase();
  let fake: FakeOpenAI;

  beforeAll(async () => {
    await db.create();
    fake = await startFakeOpenAI();
    fake.always(echoReply);
  });

  afterEach(async () => {
    killAllNow();
  });

  afterAll(async () => {
    await fake?.close();
    await db.drop();
    removeE2EHomes();
  });

  it('takes its own turns back at once after kill -9: running ones interrupted, accepted ones run once', async () => {
    // A long takeover time: only the restarted gateway itself can take them back this fast.
    const home = e2eHome(fake, {
      storage: { driver: 'postgres', url: db.url },
      cluster: { takeover_after_ms: 60_000 },
    });
    const first = await startGateway(home);
    const gate = deferred();
    fake.enqueue({ after: gate.promise, then: { content: 'never seen' } });
    const hangs = await send(first.url, 'restart', 'hangs');
    expect(hangs.status).toBe(202);
    const session = hangs.body.session_key as string;
    await vi.waitFor(async () => expect((await db.ledger(session))[0]?.status).toBe('running'), {
      timeout: 5_000,
      interval: 10,
    });
    for (let i = 0; i < 2; i++) expect((await send(first.url, 'restart', `queued ${i}`)).status).toBe(202);
    const killed = killNow(first);
    gate.resolve();
    const startedAt = Date.now();
    const second = await startGateway(home); // at once: no wait for the reaping of the first
    expect(await killed).toBe('SIGKILL');
    const rows = await settled(db, session, 3, 10_000);
    const tookMs = Math.max(...rows.map((row) => Date.parse(row.finished_at!))) - startedAt;
    console.log(`[cluster restart] own turns settled ${tookMs} ms after the restart began`);
    expect(rows.map((row) => row.status)).toEqual(['interrupted', 'completed', 'completed']);
    expect(rows[0]!.termination_reason).toBe('process_restart');
    expect(tookMs).toBeLessThan(5_000);
    const sameName = new Set(rows.map((row) => row.owner));
    expect(sameName.size).toBe(1);
    expect(await stopGateway(second, 'SIGTERM')).toBe(0);
  });

  it('refuses to start a second process under the same name from one data dir while the first runs', async () => {
    const home = e2eHome(fake, { storage: { driver: 'postgres', url: db.url } });
    const first = await startGateway(home);
    const second = startGateway(home);
    await expect(second).rejects.toThrow(/another gateway \(pid \d+\) runs as instance gw_[0-9a-f]+/);
    expect(await stopGateway(first, 'SIGTERM')).toBe(0);
  });
});
