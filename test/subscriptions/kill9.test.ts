/**
 * kill -9 between a delivery's commit and its delivery (DECISIONS §20): the built gateway over real sockets,
 * killed while its first attempt is in flight (the receiver holds the request unanswered); after a restart on
 * the same data dir the delivery is made, and answered 2xx once, with the same webhook-id.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { killAllNow } from '../../bench/processes.js';
import type { FakeOpenAI } from '../helpers/fake-openai.js';
import {
  ADMIN_TOKEN,
  call,
  e2eHome,
  killNow,
  postMessage,
  removeE2EHomes,
  startGateway,
  stopGateway,
  type Running,
} from '../e2e/helpers.js';
import { freshPgDatabase } from '../helpers/pg-databases.js';
import { testBackends } from '../helpers/stores.js';
import { until } from '../helpers/until.js';
import { startReceiver, verifyDelivery, type Receiver } from './receiver.js';

/** The echo provider needs no model server: the home's provider block is replaced. */
const NO_FAKE = { url: 'http://127.0.0.1:9' } as FakeOpenAI;

let receiver: Receiver | null = null;
const running: Running[] = [];
const databases: Array<ReturnType<typeof freshPgDatabase>> = [];

afterEach(async () => {
  killAllNow();
  await receiver?.close();
  receiver = null;
  running.length = 0;
  removeE2EHomes();
  for (const database of databases.splice(0)) await database.drop().catch(() => undefined);
});

/** The store block of a backend: SQLite in the data dir, or a fresh PostgreSQL database. */
async function storageOf(name: string): Promise<Record<string, unknown>> {
  if (name === 'sqlite') return {};
  const database = freshPgDatabase('gh_subs_k9');
  databases.push(database);
  await database.create();
  return { storage: { driver: 'postgres', url: database.url } };
}

describe.each(testBackends())('a gateway killed with -9 between the commit and the delivery ($name)', (backend) => {
  it.skipIf(backend.skip)(
    'delivers after the restart, answered once',
    async () => {
      receiver = await startReceiver();
      const home = e2eHome(NO_FAKE, {
        ...(await storageOf(backend.name)),
        provider: { type: 'echo' },
        gateway: { port: 0, auth: { mode: 'open', api_tokens: ['e2e-api'], admin_tokens: [ADMIN_TOKEN] } },
        subscriptions: { allow_private_targets: true, allow_http: true },
      });
      let gateway = await startGateway(home);
      running.push(gateway);
      const created = await call<{ id: string; secret: string }>(gateway.url, 'POST', '/api/v1/subscriptions', {
        token: ADMIN_TOKEN,
        body: { url: receiver.url, events: ['turn.completed'] },
      });
      expect(created.status).toBe(201);

      // The first attempt is held unanswered, and the gateway dies with it in flight.
      receiver.script = ['hang'];
      const killed = new Promise<void>((resolve) => {
        receiver!.onRequest = () => {
          receiver!.onRequest = null;
          void killNow(gateway).then(() => resolve());
        };
      });
      const answer = await postMessage<{ status: string; event_id: string }>(gateway.url, {
        platform: 'api',
        user_id: 'u1',
        chat_id: 'k9',
        text: 'survive me',
        wait: true,
      });
      expect(answer.status).toBe(200);
      expect(answer.body.status).toBe('completed');
      await killed;
      expect(receiver.received).toHaveLength(1);
      const deliveryId = receiver.received[0]!.id;

      gateway = await startGateway(home);
      running.push(gateway);
      await until('delivered after the restart', () => receiver!.received.some((r) => r.answered === 200), 10_000);
      await new Promise((resolve) => setTimeout(resolve, 1_500)); // nothing more arrives
      expect(receiver.received.map((r) => r.id)).toEqual([deliveryId, deliveryId]);
      expect(receiver.received.filter((r) => r.answered === 200)).toHaveLength(1);
      const delivered = receiver.received[1]!;
      const event = verifyDelivery(created.body.secret, delivered, Number(delivered.timestamp) * 1000) as {
        type: string;
        data: { event_id: string };
      };
      expect(event).toMatchObject({ type: 'turn.completed', data: { event_id: answer.body.event_id } });

      const list = await call<{ items: Array<{ id: string; status: string; attempts: number }> }>(
        gateway.url,
        'GET',
        `/api/v1/subscriptions/${created.body.id}/deliveries`,
        { token: ADMIN_TOKEN },
      );
      expect(list.body.items).toEqual([expect.objectContaining({ id: deliveryId, status: 'delivered', attempts: 1 })]);
      expect(await stopGateway(gateway, 'SIGTERM')).toBe(0);
    },
    60_000,
  );
});
