/**
 * Event subscriptions (DECISIONS §20): the API, the address rules, Standard Webhooks signatures, retries on the
 * injected clock, the dead letter and its manual retry, and the outbox written in the turn's commit — against
 * an in-process gateway on real SQLite and a real HTTP receiver on 127.0.0.1.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { StoreFaults } from '../../src/store/index.js';
import { adminHeaders, startHarness, type Harness } from '../helpers/harness.js';
import { until } from '../helpers/until.js';
import { startReceiver, verifyDelivery, type Receiver } from './receiver.js';

const OPEN = { gateway: { auth: { mode: 'open' } } };
const PRIVATE_OK = { subscriptions: { allow_private_targets: true, allow_http: true } };

/** A delivery as the API lists it. */
interface Delivery {
  id: string;
  event_type: string;
  status: string;
  attempts: number;
  next_attempt_at: string;
  last_status: number | null;
  last_error: string | null;
}

/** The answers of the admin routes, read loosely by the assertions. */
interface Answer {
  id: string;
  secret: string;
  items: Delivery[];
  stats: unknown;
  error: { code: string; details: Array<{ path: string; message: string }> };
  [field: string]: unknown;
}

let harness: Harness | null = null;
let receiver: Receiver | null = null;

afterEach(async () => {
  await harness?.close();
  await receiver?.close();
  harness = null;
  receiver = null;
});

async function open(config: Record<string, unknown> = {}, faults?: StoreFaults): Promise<Harness> {
  harness = await startHarness({
    clock: Date.now(),
    config: { ...OPEN, ...PRIVATE_OK, ...config },
    ...(faults ? { storeFaults: faults } : {}),
  });
  return harness;
}

async function admin(h: Harness, method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: unknown) {
  const res = await h.inject({
    method,
    url: `/api/v1${url}`,
    headers: adminHeaders,
    ...(payload !== undefined ? { payload: payload as Record<string, unknown> } : {}),
  });
  return { status: res.statusCode, body: res.json<Answer>(), text: res.body };
}

async function subscribe(h: Harness, url: string, events: string[] = ['*']) {
  const res = await admin(h, 'POST', '/subscriptions', { url, events, description: 'test receiver' });
  expect(res.status).toBe(201);
  return res.body as { id: string; secret: string };
}

async function deliveries(h: Harness, id: string, status?: string) {
  const res = await admin(h, 'GET', `/subscriptions/${id}/deliveries${status ? `?status=${status}` : ''}`);
  expect(res.status).toBe(200);
  return res.body.items;
}

async function turn(h: Harness, text: string, chat = 'c1'): Promise<string> {
  const res = await h.message({ platform: 'api', user_id: 'u1', chat_id: chat, text, wait: true });
  expect(res.statusCode).toBe(200);
  const body = res.json<{ event_id: string; status: string }>();
  expect(body.status).toBe('completed');
  return body.event_id;
}

describe('subscriptions API', () => {
  it('creates, reads, lists, updates and deletes; the secret is shown once', async () => {
    const h = await open({ logs: { level: 'debug' } });
    receiver = await startReceiver();
    const created = await admin(h, 'POST', '/subscriptions', { url: receiver.url, events: ['turn.completed'] });
    expect(created.status).toBe(201);
    expect(created.body.secret).toMatch(/^whsec_[A-Za-z0-9+/]+=*$/);
    expect(created.body).toMatchObject({
      url: receiver.url,
      events: ['turn.completed'],
      enabled: true,
      description: null,
    });
    const id = created.body.id;

    const one = await admin(h, 'GET', `/subscriptions/${id}`);
    expect(one.status).toBe(200);
    expect(one.body.stats).toEqual({ pending: 0, failed: 0, delivered: 0 });
    const list = await admin(h, 'GET', '/subscriptions');
    expect(list.body.items.map((s: { id: string }) => s.id)).toEqual([id]);
    for (const text of [one.text, list.text]) expect(text).not.toContain(created.body.secret);

    const patched = await admin(h, 'PATCH', `/subscriptions/${id}`, {
      events: ['*'],
      enabled: false,
      description: 'd',
    });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({ events: ['*'], enabled: false, description: 'd' });
    expect(patched.text).not.toContain(created.body.secret);

    // The secret reached no log line and no audit line either.
    expect(h.logs.length).toBeGreaterThan(0);
    expect(h.logs.join('\n')).not.toContain(created.body.secret);
    const auditFile = join(h.config.data_dir, 'gateway_auth', 'audit.jsonl');
    expect(existsSync(auditFile) ? readFileSync(auditFile, 'utf8') : '').not.toContain(created.body.secret);

    const deleted = await admin(h, 'DELETE', `/subscriptions/${id}`);
    expect(deleted).toMatchObject({ status: 200, body: { id, deleted: true } });
    expect((await admin(h, 'GET', `/subscriptions/${id}`)).status).toBe(404);
    expect((await admin(h, 'DELETE', `/subscriptions/${id}`)).status).toBe(404);
    expect((await admin(h, 'POST', '/deliveries/msg_nope/retry')).status).toBe(404);
  });

  it('keeps a given secret and refuses a malformed one', async () => {
    const h = await open();
    const secret = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;
    const ok = await admin(h, 'POST', '/subscriptions', { url: 'http://127.0.0.1:9/x', events: ['*'], secret });
    expect(ok.status).toBe(201);
    expect(ok.body.secret).toBe(secret);
    const bad = await admin(h, 'POST', '/subscriptions', {
      url: 'http://127.0.0.1:9/x',
      events: ['*'],
      secret: 'hunter2',
    });
    expect(bad.status).toBe(400);
    expect(bad.body.error.details).toEqual([expect.objectContaining({ path: 'body.secret' })]);
    expect(bad.text).not.toContain('hunter2');
  });

  it('answers 400 naming the field for an unknown event', async () => {
    const h = await open();
    const res = await admin(h, 'POST', '/subscriptions', {
      url: 'http://127.0.0.1:9/',
      events: ['turn.completed', 'turn.exploded'],
    });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('BAD_REQUEST');
    expect(res.body.error.details).toEqual([expect.objectContaining({ path: 'body.events.1' })]);
    const empty = await admin(h, 'POST', '/subscriptions', { url: 'http://127.0.0.1:9/', events: [] });
    expect(empty.status).toBe(400);
    const status = await admin(h, 'POST', '/subscriptions', { url: 'http://127.0.0.1:9/', events: ['*'] });
    expect((await admin(h, 'GET', `/subscriptions/${status.body.id}/deliveries?status=lost`)).status).toBe(400);
  });

  it('refuses a private or loopback URL with the reason, and never connects to it', async () => {
    const h = await open({ subscriptions: { allow_private_targets: false, allow_http: true } });
    receiver = await startReceiver();
    for (const [url, reason] of [
      [receiver.url, 'loopback'],
      [`http://localhost:${receiver.port}/hook`, 'loopback'],
      ['http://10.1.2.3/hook', 'private'],
      ['http://169.254.169.254/latest/meta-data', 'cloud metadata'],
      ['http://[::ffff:127.0.0.1]:9/', 'loopback'],
    ] as const) {
      const res = await admin(h, 'POST', '/subscriptions', { url, events: ['*'] });
      expect(res.status, url).toBe(400);
      expect(res.body.error.details[0]).toMatchObject({ path: 'body.url' });
      expect(res.body.error.details[0]!.message).toContain(reason);
    }
    expect((await admin(h, 'GET', '/subscriptions')).body.items).toEqual([]);
    expect(receiver.received).toHaveLength(0);
  });

  it('refuses http unless allow_http, and a private target on PATCH too', async () => {
    const h = await open({ subscriptions: { allow_private_targets: true, allow_http: false } });
    const res = await admin(h, 'POST', '/subscriptions', { url: 'http://127.0.0.1:9/hook', events: ['*'] });
    expect(res.status).toBe(400);
    expect(res.body.error.details[0]!.message).toContain('https');
    const ftp = await admin(h, 'POST', '/subscriptions', { url: 'ftp://127.0.0.1/', events: ['*'] });
    expect(ftp.status).toBe(400);
    const ok = await admin(h, 'POST', '/subscriptions', { url: 'https://127.0.0.1:9/hook', events: ['*'] });
    expect(ok.status).toBe(201);
    const patched = await admin(h, 'PATCH', `/subscriptions/${ok.body.id}`, { url: 'http://127.0.0.1:9/hook' });
    expect(patched.status).toBe(400);
  });
});

describe('deliveries', () => {
  it('signs with Standard Webhooks and keeps webhook-id across retries: fails twice, then succeeds on the schedule', async () => {
    const h = await open();
    receiver = await startReceiver();
    receiver.script = [500, 503];
    const { id, secret } = await subscribe(h, receiver.url, ['turn.completed']);
    const eventId = await turn(h, 'hello subscribers');

    await until('the first attempt', () => receiver!.received.length === 1);
    const [pending] = await until('the retry scheduled', async () => {
      const items = await deliveries(h, id, 'pending');
      return items.length === 1 && items[0]!.attempts === 1 ? items : null;
    });
    expect(pending).toMatchObject({ event_type: 'turn.completed', status: 'pending', last_status: 500 });
    expect(Date.parse(pending!.next_attempt_at)).toBe(h.clock.now() + 5_000);

    // Not due yet: nothing is sent however long the worker polls.
    h.clock.advance(4_000);
    await new Promise((resolve) => setTimeout(resolve, 700));
    expect(receiver.received).toHaveLength(1);
    h.clock.advance(1_001);
    await until('the second attempt, after 5 s', () => receiver!.received.length === 2);
    await until('the second failure recorded', async () => (await deliveries(h, id, 'pending'))[0]?.attempts === 2);
    h.clock.advance(5 * 60_000 - 1_000);
    await new Promise((resolve) => setTimeout(resolve, 700));
    expect(receiver.received).toHaveLength(2);
    h.clock.advance(1_001);
    await until('the third attempt, after 5 min', () => receiver!.received.length === 3);
    const [done] = await until('delivered', async () => {
      const items = await deliveries(h, id, 'delivered');
      return items.length === 1 ? items : null;
    });
    expect(done).toMatchObject({ attempts: 3, last_status: 200, next_attempt_at: null, last_error: null });

    const ids = new Set(receiver.received.map((r) => r.id));
    expect(ids).toEqual(new Set([done!.id]));
    expect(new Set(receiver.received.map((r) => r.body)).size).toBe(1); // the same body every time
    for (const request of receiver.received) {
      expect(request.headers['content-type']).toBe('application/json');
      expect(request.signature).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);
      expect(request.headers.traceparent).toBeUndefined(); // tracing is off
      const verified = verifyDelivery(secret, request, Number(request.timestamp) * 1000) as {
        type: string;
        data: unknown;
      };
      expect(verified.type).toBe('turn.completed');
      expect(verified.data).toMatchObject({ event_id: eventId, status: 'completed' });
    }
    // A wrong secret does not verify.
    const other = `whsec_${Buffer.alloc(32, 1).toString('base64')}`;
    expect(() => verifyDelivery(other, receiver!.received[0]!, h.clock.now())).toThrow();
    expect((await admin(h, 'GET', `/subscriptions/${id}`)).body.stats).toEqual({ pending: 0, failed: 0, delivered: 1 });
  });

  it('retries a receiver that hangs past the timeout', async () => {
    const h = await open({ subscriptions: { allow_private_targets: true, allow_http: true, timeout_seconds: 0.5 } });
    receiver = await startReceiver();
    receiver.script = ['hang'];
    const { id } = await subscribe(h, receiver.url, ['turn.completed']);
    await turn(h, 'slow receiver');
    const [timedOut] = await until(
      'the timeout recorded',
      async () => {
        const items = await deliveries(h, id, 'pending');
        return items[0]?.attempts === 1 ? items : null;
      },
      5_000,
    );
    expect(timedOut).toMatchObject({ last_status: null });
    expect(timedOut!.last_error).toMatch(/timed out/);
    h.clock.advance(5_001);
    await until('delivered on the retry', async () => (await deliveries(h, id, 'delivered')).length === 1);
    expect(receiver.received.map((r) => r.id)).toEqual([timedOut!.id, timedOut!.id]);
  });

  it('dead-letters after the schedule, lists it as failed, and delivers it when retried by hand', async () => {
    const h = await open({
      subscriptions: { allow_private_targets: true, allow_http: true, retry_schedule: ['5s', 60] },
    });
    receiver = await startReceiver();
    receiver.fallback = 503;
    const { id, secret } = await subscribe(h, receiver.url, ['turn.completed']);
    await turn(h, 'nobody home');
    await until('attempt 1', async () => (await deliveries(h, id, 'pending'))[0]?.attempts === 1);
    h.clock.advance(5_000);
    await until('attempt 2', async () => (await deliveries(h, id, 'pending'))[0]?.attempts === 2);
    h.clock.advance(60_000);
    const [failed] = await until('failed', async () => {
      const items = await deliveries(h, id, 'failed');
      return items.length === 1 ? items : null;
    });
    expect(failed).toMatchObject({ status: 'failed', attempts: 3, last_status: 503, next_attempt_at: null });
    expect(await deliveries(h, id, 'pending')).toEqual([]);
    // Nothing more is tried, however much time passes.
    h.clock.advance(24 * 3_600_000);
    await new Promise((resolve) => setTimeout(resolve, 700));
    expect(receiver.received).toHaveLength(3);

    receiver.fallback = 204;
    const retried = await admin(h, 'POST', `/deliveries/${failed!.id}/retry`);
    expect(retried.status).toBe(200);
    expect(retried.body).toMatchObject({ id: failed!.id, status: 'pending', attempts: 0 });
    await until('delivered after the manual retry', async () => (await deliveries(h, id, 'delivered')).length === 1);
    expect(receiver.received).toHaveLength(4);
    expect(receiver.received.every((r) => r.id === failed!.id)).toBe(true);
    verifyDelivery(secret, receiver.received[3]!, Number(receiver.received[3]!.timestamp) * 1000);
  });

  it('POST /subscriptions/{id}/test sends a ping now and answers its result', async () => {
    const h = await open();
    receiver = await startReceiver();
    const { id, secret } = await subscribe(h, receiver.url, ['task.completed']);
    const ok = await admin(h, 'POST', `/subscriptions/${id}/test`);
    expect(ok.status).toBe(200);
    expect(ok.body).toMatchObject({ ok: true, status: 200, error: null });
    expect(receiver.received).toHaveLength(1);
    expect(receiver.received[0]!.json.type).toBe('subscription.ping');
    expect(receiver.received[0]!.id).toBe(ok.body.delivery_id);
    verifyDelivery(secret, receiver.received[0]!, h.clock.now());
    receiver.script = [418];
    const refused = await admin(h, 'POST', `/subscriptions/${id}/test`);
    expect(refused.body).toMatchObject({ ok: false, status: 418 });
    await receiver.close();
    const down = await admin(h, 'POST', `/subscriptions/${id}/test`);
    expect(down.body).toMatchObject({ ok: false, status: null });
    expect(down.body.error).toMatch(/ECONNREFUSED|UND_ERR_SOCKET/);
    receiver = null;
  });
});

describe('the outbox in the turn commit', () => {
  it('an acknowledged message reaching turn.completed: exactly one delivery per matching subscription', async () => {
    const h = await open();
    receiver = await startReceiver();
    const all = await subscribe(h, receiver.url, ['*']);
    const completed = await subscribe(h, receiver.url, ['turn.completed', 'turn.failed']);
    const tasks = await subscribe(h, receiver.url, ['task.completed']);
    const ack = await h.message({ platform: 'api', user_id: 'u1', chat_id: 'acked', text: 'ack me' });
    expect(ack.statusCode).toBe(202);
    const eventId = ack.json<{ event_id: string }>().event_id;
    const ended = (r: { json: { type: string; data: Record<string, unknown> } }) =>
      r.json.type === 'turn.completed' && r.json.data.event_id === eventId;
    await until('both turn.completed deliveries', () => receiver!.received.filter(ended).length === 2);
    await new Promise((resolve) => setTimeout(resolve, 700));
    const mine = receiver.received.filter(ended);
    expect(mine).toHaveLength(2);
    expect(new Set(mine.map((r) => r.id)).size).toBe(2);
    const completedOf = async (sub: { id: string }) =>
      (await deliveries(h, sub.id)).filter((d) => d.event_type === 'turn.completed');
    expect(await completedOf(all)).toHaveLength(1);
    expect(await completedOf(completed)).toHaveLength(1);
    expect(await deliveries(h, tasks.id)).toEqual([]);
    // `*` also got the message and the session it created, written with the acceptance.
    const types = (await deliveries(h, all.id)).map((d) => d.event_type).sort();
    expect(types).toEqual(['message.received', 'session.created', 'turn.completed']);
    const received = receiver.received.find((r) => r.json.type === 'message.received')!;
    expect(received.json.data).toMatchObject({ event_id: eventId, text: 'ack me', session_key: expect.any(String) });
  });

  it('no subscription: the turn commit writes no delivery and runs no statement on the outbox', async () => {
    const faults = new StoreFaults();
    const h = await open({}, faults);
    receiver = await startReceiver();
    // A subscription to something else, one to turn events that is disabled, one deleted: no one wants turns.
    await subscribe(h, receiver.url, ['task.completed']);
    const disabled = await subscribe(h, receiver.url, ['turn.completed']);
    expect((await admin(h, 'PATCH', `/subscriptions/${disabled.id}`, { enabled: false })).status).toBe(200);
    const deleted = await subscribe(h, receiver.url, ['*']);
    expect((await admin(h, 'DELETE', `/subscriptions/${deleted.id}`)).status).toBe(200);
    // Any write to the outbox fails from now on; the turn's commit would fail with it.
    faults.inject('all', { match: /subscription_deliveries/i });
    await turn(h, 'nobody listens', 'quiet-1');
    await turn(h, 'still nobody', 'quiet-2');
    expect(faults.refused).toBe(0);
    faults.heal();
    const rows = await h.internals.store.db.selectFrom('subscription_deliveries').selectAll().execute();
    expect(rows).toEqual([]);
  });
});

describe('bounds', () => {
  it('keeps the newest keep_deliveries finished deliveries, and cuts a body over max_body_bytes', async () => {
    const h = await open({
      subscriptions: { allow_private_targets: true, allow_http: true, keep_deliveries: 2, max_body_bytes: 600 },
    });
    receiver = await startReceiver();
    const { id, secret } = await subscribe(h, receiver.url, ['turn.completed']);
    for (let i = 0; i < 4; i++) await turn(h, `turn ${i} ${'x'.repeat(i === 3 ? 2_000 : 1)}`, `keep-${i}`);
    await until('four deliveries', () => receiver!.received.filter((r) => r.answered === 200).length === 4);
    const kept = await until('pruned to two', async () => {
      const items = await deliveries(h, id);
      return items.length === 2 ? items : null;
    });
    expect(kept.every((d) => d.status === 'delivered')).toBe(true);
    const last = receiver.received[3]!;
    expect(Buffer.byteLength(last.body)).toBeLessThanOrEqual(600);
    expect(last.json.data).toMatchObject({ truncated: true, event_id: expect.stringMatching(/^evt_/) });
    verifyDelivery(secret, last, Number(last.timestamp) * 1000);
  });
});
