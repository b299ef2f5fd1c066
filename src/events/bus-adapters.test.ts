/**
 * The cross-process bus over its real servers (ADR 0025): the same contract
 * for Redis and NATS — two processes' buses hear each other and never
 * themselves, namespaces stay apart, the size cap holds both ways,
 * heartbeats list and forget peers, a cut connection is reported and comes
 * back with its subscriptions, close leaves nothing open, and an unreachable
 * server is refused at start-up with a message that names it without
 * credentials.
 */
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { closedPort, testBusServers, testNamespace, type TestBusServer } from '../../test/helpers/bus-servers.js';
import { ManualTimers } from '../../test/helpers/manual-timers.js';
import { startTcpProxy, type TcpProxy } from '../../test/helpers/tcp-proxy.js';
import { ManualClock, systemClock, type Clock } from '../lib/clock.js';
import type { BusAdapter } from './bus-adapter.js';
import { BusUnavailableError } from './bus-adapter.js';
import { natsBusAdapter } from './bus-nats.js';
import { redisBusAdapter } from './bus-redis.js';
import { openClusterBus } from './bus.js';
import { busSubjects, type BusDropReason, type BusTurnEvent, type ClusterBus } from './cluster-bus.js';
import type { BusEvent } from './event-bus.js';

/** One process's bus and everything it heard, counted and logged. */
interface Node {
  id: string;
  bus: ClusterBus;
  feed: BusEvent[];
  turns: BusTurnEvent[];
  wakes: string[];
  dropped: Record<BusDropReason, number>;
  reconnects: number;
  lags: number[];
  sent: number;
  logs: string[];
}

const opened: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const item of opened.splice(0).reverse()) await item.close();
});

/** The URL of `server` through `proxy` (or directly), with optional credentials. */
function urlOf(server: TestBusServer, proxy?: TcpProxy): string {
  const url = new URL(server.url);
  if (proxy) url.port = String(proxy.port);
  return url.toString();
}

async function node(
  server: TestBusServer,
  namespace: string,
  options: { url?: string; clock?: Clock; timers?: ManualTimers; maxMessageBytes?: number } = {},
): Promise<Node> {
  const id = `gw_${randomBytes(5).toString('hex')}`;
  const dropped: Record<BusDropReason, number> = { too_large: 0, not_connected: 0, invalid: 0 };
  const heard = { feed: [] as BusEvent[], turns: [] as BusTurnEvent[], wakes: [] as string[] };
  const counters = { reconnects: 0, sent: 0, lags: [] as number[], logs: [] as string[] };
  const bus = await openClusterBus({
    config: {
      driver: server.driver,
      url: options.url ?? server.url,
      namespace,
      max_message_bytes: options.maxMessageBytes ?? 262_144,
    },
    instanceId: id,
    version: '9.9.9',
    clock: options.clock ?? systemClock,
    logger: {
      info: (_fields, message) => void counters.logs.push(message),
      warn: (_fields, message) => void counters.logs.push(message),
    },
    observer: {
      lag: (seconds) => void counters.lags.push(seconds),
      dropped: (reason) => void dropped[reason]++,
      reconnected: () => void counters.reconnects++,
      sent: () => void counters.sent++,
    },
    ...(options.timers ? { timers: options.timers } : {}),
  });
  opened.push(bus);
  bus.receive({
    feed: (event) => void heard.feed.push(event),
    turn: (event) => void heard.turns.push(event),
    wake: (eventId) => void heard.wakes.push(eventId),
  });
  return {
    id,
    bus,
    ...heard,
    dropped,
    get reconnects() {
      return counters.reconnects;
    },
    get sent() {
      return counters.sent;
    },
    lags: counters.lags,
    logs: counters.logs,
  };
}

/** A bare adapter on `server` that publishes raw text (what a broken or foreign peer might send). */
async function rawPublisher(server: TestBusServer): Promise<BusAdapter> {
  const options = { url: server.url, name: `raw_${randomBytes(4).toString('hex')}` };
  const adapter = server.driver === 'redis' ? redisBusAdapter(options) : natsBusAdapter(options);
  await adapter.connect(
    [],
    () => undefined,
    () => undefined,
  );
  opened.push(adapter);
  return adapter;
}

const envelope = (body: Record<string, unknown>) => JSON.stringify({ v: 1, from: 'gw_raw', at: Date.now(), ...body });

/** Polls `check` until it passes (bounded). */
const eventually = (check: () => void, timeout = 5_000) => vi.waitFor(check, { timeout, interval: 10 });

/** Waits until every bus has heard the others' heartbeats: none sends turn events or feed events before (ADR 0046). */
const meet = (...nodes: Node[]) =>
  eventually(() => {
    for (const one of nodes) expect(one.bus.peerList()).toHaveLength(nodes.length - 1);
  });

for (const server of testBusServers()) {
  const title = `cross-process bus over ${server.driver}`;
  describe.skipIf(server.skip)(server.skip ? `${title} (skipped: ${server.skipReason})` : title, () => {
    it('carries feed events, turn events and wake-ups to the other process, once each, never back to the sender', async () => {
      const ns = testNamespace();
      const a = await node(server, ns);
      const b = await node(server, ns);
      await meet(a, b);
      a.bus.publishFeed({ topic: 'sessions', event: 'updated', data: { id: 's1' } });
      a.bus.publishTurn({ eventId: 'evt_1', seq: 1, type: 'delta', data: { content: 'hé' } });
      a.bus.publishWake('evt_2');
      await eventually(() => expect(b.wakes).toEqual(['evt_2']));
      expect(b.feed).toEqual([{ topic: 'sessions', event: 'updated', data: { id: 's1' } }]);
      expect(b.turns).toEqual([{ eventId: 'evt_1', seq: 1, type: 'delta', data: { content: 'hé' } }]);
      expect(b.lags.length).toBeGreaterThanOrEqual(3);
      expect(b.lags.every((lag) => lag >= 0 && lag < 5)).toBe(true);

      // b answers after it heard everything: a hears the answer after anything of its own that came back.
      b.bus.publishFeed({ topic: 'tasks', event: 'created', data: { id: 't1' } });
      await eventually(() => expect(a.feed).toHaveLength(1));
      expect(a.feed[0]).toMatchObject({ topic: 'tasks', data: { id: 't1' } });
      expect(a.turns).toEqual([]);
      expect(a.wakes).toEqual([]);
      expect(a.sent).toBeGreaterThanOrEqual(3);
      expect(b.feed).toHaveLength(1);
    });

    it('keeps namespaces apart and drops what is not a valid envelope', async () => {
      const ns = testNamespace();
      const other = testNamespace();
      const b = await node(server, ns);
      const raw = await rawPublisher(server);
      const mine = busSubjects(ns);
      const theirs = busSubjects(other);
      // One connection, in this order: another cluster's event, garbage, a wrong version, then a real one.
      raw.publish(theirs.feed('sessions'), envelope({ event: 'updated', data: { id: 'not-mine' } }));
      raw.publish(mine.turn, '{"v":1,"from":');
      raw.publish(mine.turn, JSON.stringify({ v: 2, from: 'gw_raw', at: 0, event_id: 'e', seq: 1 }));
      raw.publish(mine.turn, envelope({ event_id: 'evt_bad', seq: 0, type: 'delta', data: {} }));
      raw.publish(mine.feed('sessions'), envelope({ event: 'updated', data: { id: 'mine' } }));
      await eventually(() => expect(b.feed).toHaveLength(1));
      expect(b.feed[0]!.data).toEqual({ id: 'mine' });
      expect(b.turns).toEqual([]);
      expect(b.dropped.invalid).toBe(3);
    });

    it('caps the size: a large feed event is not sent, a large turn event becomes a wake-up, a large arrival is dropped', async () => {
      const ns = testNamespace();
      const a = await node(server, ns, { maxMessageBytes: 2_048 });
      const b = await node(server, ns, { maxMessageBytes: 2_048 });
      await meet(a, b);
      const big = 'x'.repeat(3_000);
      a.bus.publishFeed({ topic: 'memory', event: 'created', data: { content: big } });
      expect(a.dropped.too_large).toBe(1);
      a.bus.publishTurn({ eventId: 'evt_big', seq: 4, type: 'done', data: { message: { content: big } } });
      expect(a.dropped.too_large).toBe(2);
      // Multi-byte characters count as bytes: 1 000 × 3 bytes is over 2 048 although the string is shorter.
      a.bus.publishFeed({ topic: 'memory', event: 'created', data: { content: '€'.repeat(1_000) } });
      expect(a.dropped.too_large).toBe(3);
      await eventually(() => expect(b.wakes).toEqual(['evt_big']));
      expect(b.turns).toEqual([]);
      expect(b.feed).toEqual([]);

      const raw = await rawPublisher(server);
      raw.publish(busSubjects(ns).feed('memory'), envelope({ event: 'created', data: { content: big } }));
      raw.publish(busSubjects(ns).feed('memory'), envelope({ event: 'deleted', data: { id: 'm1' } }));
      await eventually(() => expect(b.feed).toHaveLength(1));
      expect(b.feed[0]!.event).toBe('deleted');
      expect(b.dropped.too_large).toBe(1);
    });

    it('lists peers from their heartbeats, forgets one after three missed beats, and drops one that leaves', async () => {
      const ns = testNamespace();
      const clock = new ManualClock(Date.now());
      const timers = new ManualTimers();
      const a = await node(server, ns, { clock, timers });
      const b = await node(server, ns, { timers });
      expect(a.bus.health()).toEqual({ status: 'ok', message: `${server.driver}: connected, 0 peers seen` });
      b.bus.beat();
      await eventually(() => expect(a.bus.peerList().map((p) => p.instance_id)).toEqual([b.id]));
      expect(a.bus.peerList()[0]).toEqual({ instance_id: b.id, version: '9.9.9', last_seen_seconds: 0 });
      expect(a.bus.health().message).toBe(`${server.driver}: connected, 1 peer seen`);
      expect(timers.delays()).toEqual([5_000, 5_000]); // each beats again in 5 s

      clock.advance(14_000);
      expect(a.bus.peerList()).toEqual([{ instance_id: b.id, version: '9.9.9', last_seen_seconds: 14 }]);
      clock.advance(1_001);
      expect(a.bus.peerList()).toEqual([]);

      timers.advance(5_000); // both beat: a hears b again
      await eventually(() => expect(a.bus.peerList()).toHaveLength(1));
      await b.bus.close();
      await eventually(() => expect(a.bus.peerList()).toEqual([]));
    });

    it('reports a cut connection, drops what it cannot send, and comes back with its subscriptions', async () => {
      const ns = testNamespace();
      const proxy = await startTcpProxy(server);
      opened.push(proxy);
      const a = await node(server, ns);
      const b = await node(server, ns, { url: urlOf(server, proxy) });
      await meet(a, b);
      a.bus.publishFeed({ topic: 'cron', event: 'run', data: { n: 1 } });
      await eventually(() => expect(b.feed).toHaveLength(1));

      proxy.cut({ hold: true });
      await eventually(() => expect(b.bus.connected()).toBe(false));
      expect(b.bus.health()).toMatchObject({ status: 'failing' });
      expect(b.bus.health().message).toMatch(new RegExp(`^${server.driver}: connection lost \\(.+\\); reconnecting`));
      expect(b.logs).toContain('bus connection lost; reconnecting (turns still reach their end through the store)');
      b.bus.publishFeed({ topic: 'cron', event: 'run', data: { n: 2 } });
      expect(b.dropped.not_connected).toBe(1);

      proxy.restore();
      await eventually(() => expect(b.bus.connected()).toBe(true), 10_000);
      expect(b.reconnects).toBe(1);
      expect(b.bus.health()).toMatchObject({ status: 'ok' });
      expect(b.logs).toContain('bus connection restored');
      // Subscriptions are back: a's next event reaches b, and b's reaches a.
      a.bus.publishFeed({ topic: 'cron', event: 'run', data: { n: 3 } });
      await eventually(() => expect(b.feed.map((e) => e.data.n)).toEqual([1, 3]));
      b.bus.publishWake('evt_back');
      await eventually(() => expect(a.wakes).toEqual(['evt_back']));
    });

    if (server.driver === 'redis') {
      it('comes back after Redis kills its subscriber connection (CLIENT KILL)', async () => {
        const ns = testNamespace();
        const a = await node(server, ns);
        const b = await node(server, ns);
        await meet(a, b);
        const admin = new Redis(server.url, { lazyConnect: true });
        opened.push({ close: () => admin.quit().then(() => undefined) });
        await admin.connect();
        const list = (await admin.client('LIST')) as string;
        const line = list.split('\n').find((entry) => entry.includes(`name=${b.id}:sub `));
        expect(line).toBeDefined();
        const id = /\bid=(\d+)/.exec(line!)![1]!;
        expect(await admin.client('KILL', 'ID', id)).toBe(1);
        await eventually(() => expect(b.reconnects).toBe(1), 10_000);
        a.bus.publishTurn({ eventId: 'evt_after', seq: 7, type: 'status', data: { status: 'running' } });
        await eventually(() => expect(b.turns.map((t) => t.eventId)).toEqual(['evt_after']));
      });
    }

    it('close stops the heartbeat, sends nothing more and leaves no connection; it is idempotent', async () => {
      const ns = testNamespace();
      const proxy = await startTcpProxy(server);
      opened.push(proxy);
      const timers = new ManualTimers();
      const b = await node(server, ns, { url: urlOf(server, proxy), timers });
      expect(proxy.connections()).toBeGreaterThan(0);
      expect(timers.size).toBe(1);
      await b.bus.close();
      expect(timers.size).toBe(0);
      await eventually(() => expect(proxy.connections()).toBe(0));
      expect(b.bus.publishInterrupt('evt_1', 'cancelled')).toBe(false);
      expect(b.dropped.not_connected).toBe(1);
      expect(b.bus.connected()).toBe(false);
      expect(b.bus.health()).toEqual({ status: 'failing', message: `${server.driver}: closed` });
      await b.bus.close();
    });

    it('refuses to start on an unreachable server, naming it without credentials, with the fix', async () => {
      const port = await closedPort();
      const url = `${server.driver}://someone:s3cret-word@127.0.0.1:${port}`;
      const started = Date.now();
      const error = await node(server, testNamespace(), { url }).then(
        () => null,
        (err: unknown) => err,
      );
      expect(error).toBeInstanceOf(BusUnavailableError);
      const message = (error as Error).message;
      expect(message).toContain(`cannot reach the ${server.driver} bus at ${server.driver}://127.0.0.1:${port} (`);
      expect(message).toContain('ECONNREFUSED');
      expect(message).toContain('correct bus.url');
      expect(message).toContain('set bus.driver: local');
      expect(message).not.toContain('s3cret');
      expect(message).not.toContain('someone');
      expect((error as Error).stack).toBe(`BusUnavailableError: ${message}`);
      expect(Date.now() - started).toBeLessThan(5_000);
    });
  });
}
