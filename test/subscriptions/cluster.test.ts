/**
 * Two gateways sharing one PostgreSQL database (DECISIONS §11, §20): each delivery attempt is made by one of
 * them. The receiver counts requests per delivery id: every delivery fails once, then succeeds, so both
 * gateways' workers race for every retry when the shared clock makes them due at once.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/lib/clock.js';
import { adminHeaders, startHarness, type Harness } from '../helpers/harness.js';
import { testBusServers, testNamespace } from '../helpers/bus-servers.js';
import { freshPgDatabase } from '../helpers/pg-databases.js';
import { testBackends } from '../helpers/stores.js';
import { until } from '../helpers/until.js';
import { startReceiver, type Receiver } from './receiver.js';

const pg = testBackends().find((backend) => backend.name === 'postgres')!;
const database = freshPgDatabase('gh_subs');
const busServer = testBusServers().find((server) => !server.skip) ?? testBusServers()[0]!;
const busDatabase = freshPgDatabase('gh_subs_bus');

describe.skipIf(pg.skip)('subscriptions on two gateways sharing PostgreSQL', () => {
  const clock = new ManualClock(Date.now());
  let a: Harness;
  let b: Harness;
  let receiver: Receiver;

  beforeAll(async () => {
    await database.create();
    const shared = (instance: string) => ({
      gateway: { auth: { mode: 'open' } },
      storage: { driver: 'postgres', url: database.url },
      cluster: { instance_id: instance },
      subscriptions: { allow_private_targets: true, allow_http: true, max_concurrent: 4 },
    });
    a = await startHarness({ clock, config: shared('gw-a') });
    b = await startHarness({ clock, config: shared('gw-b') });
    receiver = await startReceiver();
  });

  afterAll(async () => {
    await a?.close();
    await b?.close();
    await receiver?.close();
    await database.drop();
  });

  it('makes each attempt on one gateway only', async () => {
    // Every delivery's first request fails; its retry succeeds.
    const firstSeen = new Set<string>();
    receiver.fallback = 200;
    receiver.onRequest = (request) => {
      if (!firstSeen.has(request.id)) {
        firstSeen.add(request.id);
        receiver.script.unshift(500);
      }
    };
    const created = await a.inject({
      method: 'POST',
      url: '/api/v1/subscriptions',
      headers: adminHeaders,
      payload: { url: receiver.url, events: ['turn.completed'] },
    });
    expect(created.statusCode).toBe(201);
    const id = created.json<{ id: string }>().id;
    // B learns of the subscription by its periodic read of the subscriptions.
    await new Promise((resolve) => setTimeout(resolve, 2_500));

    const turns = 24;
    await Promise.all(
      Array.from({ length: turns }, (_, i) =>
        (i % 2 === 0 ? a : b).message({
          platform: 'api',
          user_id: 'u',
          chat_id: `chat-${i}`,
          text: `m${i}`,
          wait: true,
        }),
      ),
    );
    await until('every first attempt', () => firstSeen.size === turns, 15_000);
    const pendingOf = async () => {
      const res = await b.inject({
        method: 'GET',
        url: `/api/v1/subscriptions/${id}/deliveries?status=pending&limit=100`,
        headers: adminHeaders,
      });
      return res.json<{ items: Array<{ attempts: number }>; total: number }>();
    };
    await until('every first failure recorded', async () => {
      const page = await pendingOf();
      return page.total === turns && page.items.every((d) => d.attempts === 1);
    });
    // Both workers find every retry due at the same moment.
    clock.advance(5_001);
    await until(
      'every retry delivered',
      () => receiver.received.filter((r) => r.answered === 200).length >= turns,
      15_000,
    );
    await new Promise((resolve) => setTimeout(resolve, 1_500));

    const counts = [...receiver.byId().values()].map((requests) => requests.length);
    expect(counts).toHaveLength(turns);
    expect(counts.every((n) => n === 2)).toBe(true);
    const res = await a.inject({ method: 'GET', url: `/api/v1/subscriptions/${id}`, headers: adminHeaders });
    expect(res.json<{ stats: unknown }>().stats).toEqual({ pending: 0, failed: 0, delivered: turns });
  }, 60_000);
});

describe.skipIf(pg.skip || busServer.skip)(
  `subscription changes told to the other gateway over ${busServer.driver}`,
  () => {
    let a: Harness;
    let b: Harness;
    let receiver: Receiver;

    beforeAll(async () => {
      await busDatabase.create();
      const namespace = testNamespace();
      const shared = (instance: string) => ({
        gateway: { auth: { mode: 'open' } },
        storage: { driver: 'postgres', url: busDatabase.url },
        bus: { driver: busServer.driver, url: busServer.url, namespace },
        cluster: { instance_id: instance },
        subscriptions: { allow_private_targets: true, allow_http: true },
      });
      a = await startHarness({ config: shared('gw-bus-a') });
      b = await startHarness({ config: shared('gw-bus-b') });
      receiver = await startReceiver();
    });

    afterAll(async () => {
      await a?.close();
      await b?.close();
      await receiver?.close();
      await busDatabase.drop();
    });

    it('a subscription made on one gateway is wanted by the other at once', async () => {
      const heard = new Promise<void>((resolve) => {
        const stop = b.internals.bus.subscribe(['subscriptions'], () => {
          stop();
          resolve();
        });
      });
      const started = Date.now();
      const created = await a.inject({
        method: 'POST',
        url: '/api/v1/subscriptions',
        headers: adminHeaders,
        payload: { url: receiver.url, events: ['turn.completed'] },
      });
      expect(created.statusCode).toBe(201);
      await heard;
      const res = await b.message({ platform: 'api', user_id: 'u', chat_id: 'bus', text: 'right away', wait: true });
      const eventId = res.json<{ event_id: string }>().event_id;
      // Well inside the 2 s periodic read: the change came over the bus.
      expect(Date.now() - started).toBeLessThan(1_500);
      await until('the delivery of the turn on the other gateway', () =>
        receiver.received.some((r) => r.json.type === 'turn.completed' && r.json.data.event_id === eventId),
      );
    }, 30_000);
  },
);
