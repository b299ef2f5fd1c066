/**
 * Every event source writes its deliveries (DECISIONS §20): tasks (`task.completed` in the task's completing
 * commit), cron (`cron.fired` in the run's claim), channels (`channel.state_changed` in a transaction of its
 * own), the message path (`message.received`, `session.created`, `turn.completed`), each body the resource as
 * the API shows it, signed, and the delivery series on GET /metrics.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai.js';
import { adminHeaders, startHarness, type Harness } from '../helpers/harness.js';
import { recordingTool } from '../routes/builders.js';
import { until } from '../helpers/until.js';
import { startReceiver, verifyDelivery, type Receiver } from './receiver.js';

let harness: Harness | null = null;
let receiver: Receiver | null = null;
let fake: FakeOpenAI | null = null;

afterEach(async () => {
  await harness?.close();
  await receiver?.close();
  await fake?.close();
  harness = null;
  receiver = null;
  fake = null;
});

async function setUp(events: string[]): Promise<{ h: Harness; secret: string }> {
  harness = await startHarness({
    clock: Date.now(),
    config: {
      gateway: { auth: { mode: 'open' } },
      security: { profile: 'minimal' },
      subscriptions: { allow_private_targets: true, allow_http: true },
    },
  });
  receiver = await startReceiver();
  const res = await harness.inject({
    method: 'POST',
    url: '/api/v1/subscriptions',
    headers: adminHeaders,
    payload: { url: receiver.url, events },
  });
  expect(res.statusCode).toBe(201);
  return { h: harness, secret: res.json<{ secret: string }>().secret };
}

const post = (h: Harness, url: string, payload?: Record<string, unknown>) =>
  h.inject({ method: 'POST', url: `/api/v1${url}`, headers: adminHeaders, ...(payload ? { payload } : {}) });

function received(type: string) {
  return until(`a ${type} delivery`, () => receiver!.received.find((r) => r.json.type === type));
}

describe('event sources', () => {
  it('task.completed, with the task as the API shows it', async () => {
    const { h, secret } = await setUp(['task.completed']);
    const created = await post(h, '/tasks', { title: 'write a haiku', assignee: 'agent' });
    expect(created.statusCode).toBe(201);
    const taskId = created.json<{ task: { id: string } }>().task.id;
    const delivery = await received('task.completed');
    expect(delivery.json.data).toMatchObject({ id: taskId, status: 'completed' });
    const shown = await h.inject({ method: 'GET', url: `/api/v1/tasks/${taskId}`, headers: adminHeaders });
    expect(delivery.json.data).toEqual(shown.json<{ task: unknown }>().task ?? shown.json());
    verifyDelivery(secret, delivery, Number(delivery.timestamp) * 1000);
    expect(receiver!.received.every((r) => r.json.type === 'task.completed')).toBe(true);
  });

  it('task.completed when a person completes a task with PATCH, once', async () => {
    const { h } = await setUp(['task.completed']);
    const created = await post(h, '/tasks', { title: 'file the report', assignee: 'alice' });
    expect(created.statusCode).toBe(201);
    const taskId = created.json<{ task: { id: string } }>().task.id;
    const patch = (status: string) =>
      h.inject({ method: 'PATCH', url: `/api/v1/tasks/${taskId}`, headers: adminHeaders, payload: { status } });
    expect((await patch('running')).statusCode).toBe(200);
    expect((await patch('completed')).statusCode).toBe(200);
    const delivery = await received('task.completed');
    expect(delivery.json.data).toMatchObject({ id: taskId, status: 'completed', progress: 1 });
    expect((await patch('completed')).statusCode).toBe(200); // the same status: no change, nothing reported

    const get = (url: string) => h.inject({ method: 'GET', url: `/api/v1${url}`, headers: adminHeaders });
    const subscription = (await get('/subscriptions')).json<{ items: Array<{ id: string }> }>().items[0]!;
    const deliveries = await get(`/subscriptions/${subscription.id}/deliveries`);
    expect(deliveries.json<{ items: Array<{ event_type: string }> }>().items.map((d) => d.event_type)).toEqual([
      'task.completed',
    ]);
  });

  it('cron.fired, written with the run it reports', async () => {
    const { h } = await setUp(['cron.fired']);
    const job = await post(h, '/cron', { schedule: '0 3 * * *', prompt: 'nightly' });
    expect(job.statusCode).toBe(201);
    const id = job.json<{ id: string }>().id;
    const run = await post(h, `/cron/${id}/trigger`);
    expect(run.statusCode).toBe(200);
    const delivery = await received('cron.fired');
    expect(delivery.json.data).toMatchObject({ cron_id: id, id: run.json<{ id: string }>().id });
  });

  it('session.created for POST /sessions, with the session as the API shows it', async () => {
    const { h } = await setUp(['session.created']);
    const res = await post(h, '/sessions', { channel: 'api', metadata: { from: 'test' } });
    expect(res.statusCode).toBe(201);
    const delivery = await received('session.created');
    expect(delivery.json.data).toEqual(res.json());
  });

  it('channel.state_changed, in a transaction of its own', async () => {
    const { h } = await setUp(['channel.state_changed']);
    const disabled = await post(h, '/channels/websocket/disable');
    expect(disabled.statusCode).toBe(200);
    const delivery = await received('channel.state_changed');
    expect(delivery.json.data).toMatchObject({ name: 'websocket', enabled: false, change: 'disabled' });
  });

  it('message.received, session.created and turn.completed for one message; the delivery metrics', async () => {
    const { h } = await setUp(['message.received', 'session.created', 'turn.completed']);
    const res = await h.message({ platform: 'api', user_id: 'u9', chat_id: 'fresh', text: 'first words', wait: true });
    expect(res.statusCode).toBe(200);
    const eventId = res.json<{ event_id: string }>().event_id;
    const session = await received('session.created');
    const message = await received('message.received');
    const completed = await received('turn.completed');
    expect(message.json.data).toMatchObject({ event_id: eventId, text: 'first words' });
    expect(session.json.data.id).toBe(message.json.data.session_key);
    expect(completed.json.data).toMatchObject({ event_id: eventId, status: 'completed', response: expect.any(String) });
    const turnView = await h.inject({ method: 'GET', url: `/api/v1/turns/${eventId}`, headers: adminHeaders });
    expect(completed.json.data).toEqual(turnView.json());
    // A second message in the same session creates no session.
    await h.message({ platform: 'api', user_id: 'u9', chat_id: 'fresh', text: 'again', wait: true });
    await until(
      'the second turn',
      () => receiver!.received.filter((r) => r.json.type === 'turn.completed').length === 2,
    );
    expect(receiver!.received.filter((r) => r.json.type === 'session.created')).toHaveLength(1);

    await until('every delivery recorded', async () => {
      const metrics = await h.inject({ method: 'GET', url: '/metrics', headers: adminHeaders });
      return /gatehouse_subscription_attempts_total\{result="delivered"\} 5/.test(metrics.body);
    });
    const metrics = await h.inject({ method: 'GET', url: '/metrics', headers: adminHeaders });
    expect(metrics.body).toMatch(/gatehouse_subscription_oldest_pending_seconds 0/);
    expect(metrics.body).toMatch(/gatehouse_subscription_failures_total 0/);
  });

  it('turn.failed and turn.waiting_approval, with the turn as the API shows it', async () => {
    fake = await startFakeOpenAI();
    harness = await startHarness({
      clock: Date.now(),
      fake,
      tools: [recordingTool('risky')],
      config: {
        gateway: { auth: { mode: 'open' } },
        agent: { approval_required: ['risky'] },
        subscriptions: { allow_private_targets: true, allow_http: true },
      },
    });
    const h = harness;
    receiver = await startReceiver();
    const created = await post(h, '/subscriptions', {
      url: receiver.url,
      events: ['turn.failed', 'turn.waiting_approval', 'turn.completed'],
    });
    expect(created.statusCode).toBe(201);

    fake.enqueue({ status: 500 });
    const failed = await h.message({ platform: 'api', user_id: 'u', chat_id: 'f', text: 'break', wait: true });
    expect(failed.statusCode).toBe(502);
    const failedId = failed.json<{ error: { details: { event_id: string } } }>().error.details.event_id;
    expect(failedId).toMatch(/^evt_/);
    const failure = await received('turn.failed');
    expect(failure.json.data).toMatchObject({ event_id: failedId, status: 'failed' });

    fake.enqueue({ tool_calls: [{ name: 'risky', arguments: {} }] });
    const paused = await h.message({ platform: 'api', user_id: 'u', chat_id: 'p', text: 'risk it', wait: true });
    expect(paused.json<{ status: string }>().status).toBe('waiting_approval');
    const waiting = await received('turn.waiting_approval');
    expect(waiting.json.data).toMatchObject({ status: 'waiting_approval', current_tool: 'risky' });
    expect(receiver.received.filter((r) => r.json.type === 'turn.completed')).toEqual([]);
  });
});
