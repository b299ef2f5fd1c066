import { afterEach, describe, expect, it } from 'vitest';
import { slackSignature, startFakeSlack, type FakeSlack } from '../../../test/helpers/fake-slack.js';
import { adminHeaders, startHarness, type Harness } from '../../../test/helpers/harness.js';
import { until } from '../../../test/helpers/until.js';

/**
 * The Slack channel in an in-process gateway (real SQLite, echo provider)
 * against the fake Slack over real HTTP, through Slack's own clients; the
 * Events API requests are injected into the API server, signed as Slack
 * signs them.
 */

let fake: FakeSlack | null = null;
let harness: Harness | null = null;

afterEach(async () => {
  await harness?.close();
  harness = null;
  await fake?.close();
  fake = null;
});

async function open(
  slack: Record<string, unknown> | ((f: FakeSlack) => Record<string, unknown>) = {},
  auth: Record<string, unknown> = { mode: 'open' },
) {
  fake = await startFakeSlack();
  const extra = typeof slack === 'function' ? slack(fake) : slack;
  harness = await startHarness({
    config: {
      gateway: { auth },
      channels: {
        slack: {
          enabled: true,
          bot_token: fake.botToken,
          signing_secret: fake.signingSecret,
          api_url: fake.url,
          ...extra,
        },
      },
    },
  });
  await until('the channel connected', async () => {
    const view = (await harness!.adminGet('/api/v1/channels/slack')).json<{ connected?: boolean }>();
    return view.connected === true;
  });
  return { fake, harness };
}

/** POSTs an envelope to /slack/events as Slack does (signed now), optionally as a retry. */
function post(h: Harness, f: FakeSlack, envelope: unknown, options: { retryNum?: number; secret?: string } = {}) {
  const body = JSON.stringify(envelope);
  const timestamp = Math.floor(Date.now() / 1000);
  return h.inject({
    method: 'POST',
    url: '/slack/events',
    headers: {
      'content-type': 'application/json',
      'x-slack-request-timestamp': String(timestamp),
      'x-slack-signature': slackSignature(options.secret ?? f.signingSecret, timestamp, body),
      ...(options.retryNum !== undefined ? { 'x-slack-retry-num': String(options.retryNum) } : {}),
    },
    payload: body,
  });
}

async function turnsOf(h: Harness, chatId: string) {
  const res = await h.adminGet(`/api/v1/sessions/${encodeURIComponent(`gateway:slack:${chatId}`)}/turns`);
  return res.statusCode === 200 ? res.json<{ items: Array<{ event_id: string; status: string }> }>().items : [];
}

const eventOf = (envelope: Record<string, unknown>) => envelope.event as { ts: string; channel: string };

describe('slack channel (in process)', () => {
  it('answers a direct message with one reply in its thread, acked once accepted', async () => {
    const { fake, harness } = await open();
    const envelope = fake.envelope({ user: 'U1', text: 'hello there' });
    const { ts, channel } = eventOf(envelope);
    const res = await post(harness, fake, envelope);
    expect(res.statusCode).toBe(200);
    expect(await turnsOf(harness, `${channel}/${ts}`)).toHaveLength(1); // durably accepted before the ack
    const reply = await until('the reply', () => fake.posted.find((m) => m.text.includes('hello there')));
    expect(reply).toMatchObject({ channel, threadTs: ts });
    expect(fake.posted).toHaveLength(1);
    const view = (await harness.adminGet('/api/v1/channels/slack')).json<Record<string, unknown>>();
    expect(view).toMatchObject({ name: 'slack', enabled: true, connected: true, messages_today: 1, error: null });
    expect(fake.callsOf('auth.test').length).toBeGreaterThanOrEqual(1);
    expect(fake.unexpected).toEqual([]);
    expect(harness.logs.join('\n')).not.toContain(fake.botToken);
  });

  it('with the webhook server on, the Events API is served on its port, not on the API port', async () => {
    fake = await startFakeSlack();
    harness = await startHarness({
      config: {
        gateway: { auth: { mode: 'open' } },
        channels: {
          webhook: { enabled: true, host: '127.0.0.1', port: 0, secret: 'slack-beside-webhook' },
          slack: { enabled: true, bot_token: fake.botToken, signing_secret: fake.signingSecret, api_url: fake.url },
        },
      },
    });
    const f = fake;
    const h = harness;
    await until('the channel connected', async () => {
      const view = (await h.adminGet('/api/v1/channels/slack')).json<{ connected?: boolean }>();
      return view.connected === true;
    });
    const envelope = f.envelope({ user: 'U7', text: 'on the webhook port' });
    const body = JSON.stringify(envelope);
    const timestamp = Math.floor(Date.now() / 1000);
    const headers = {
      'content-type': 'application/json',
      'x-slack-request-timestamp': String(timestamp),
      'x-slack-signature': slackSignature(f.signingSecret, timestamp, body),
    };
    expect((await post(h, f, envelope)).statusCode).toBe(404);
    const res = await fetch(`${h.internals.webhook!.address}/slack/events`, { method: 'POST', headers, body });
    expect(res.status).toBe(200);
    await until('the reply', () => f.posted.find((m) => m.text.includes('on the webhook port')));
    expect(f.posted).toHaveLength(1);
  });

  it('a retried event (same event_id, X-Slack-Retry-Num) gives no second turn or reply, even after a restart', async () => {
    const { fake, harness } = await open();
    const envelope = fake.envelope({ user: 'U2', text: 'once only' });
    const { ts, channel } = eventOf(envelope);
    const [a, b] = await Promise.all([post(harness, fake, envelope), post(harness, fake, envelope, { retryNum: 1 })]);
    expect([a.statusCode, b.statusCode]).toEqual([200, 200]);
    await until('the reply', () => fake.posted.find((m) => m.text.includes('once only')));
    expect((await post(harness, fake, envelope, { retryNum: 2 })).statusCode).toBe(200);
    await harness.restart();
    await until(
      'reconnected',
      async () => (await harness.adminGet('/api/v1/channels/slack')).json<{ connected?: boolean }>().connected,
    );
    expect((await post(harness, fake, envelope, { retryNum: 3 })).statusCode).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await turnsOf(harness, `${channel}/${ts}`)).toHaveLength(1);
    expect(fake.callsOf('chat.postMessage')).toHaveLength(1);
  });

  it('refuses missing, stale and wrong signatures with 401 before parsing; answers the url challenge', async () => {
    const { fake, harness } = await open();
    const unsigned = await harness.inject({
      method: 'POST',
      url: '/slack/events',
      headers: { 'content-type': 'application/json' },
      payload: '{not json',
    });
    expect(unsigned.statusCode).toBe(401);
    const stale = Math.floor(Date.now() / 1000) - 600;
    const staleRes = await harness.inject({
      method: 'POST',
      url: '/slack/events',
      headers: {
        'content-type': 'application/json',
        'x-slack-request-timestamp': String(stale),
        'x-slack-signature': slackSignature(fake.signingSecret, stale, '{}'),
      },
      payload: '{}',
    });
    expect(staleRes.statusCode).toBe(401);
    const wrong = await post(harness, fake, fake.envelope({ user: 'U3', text: 'forged' }), { secret: 'nope' });
    expect(wrong.statusCode).toBe(401);
    const challenge = await post(harness, fake, { type: 'url_verification', challenge: 'abc', token: 't' });
    expect(challenge.json()).toEqual({ challenge: 'abc' });
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(fake.callsOf('chat.postMessage')).toHaveLength(0);
  });

  it('channels: off unless groups; then mentions and replies in threads the bot is in start turns', async () => {
    const { fake, harness } = await open({ groups: true });
    const plain = fake.envelope({ user: 'U4', text: 'chatter', channel: 'C9', channelType: 'channel' });
    expect((await post(harness, fake, plain)).statusCode).toBe(200);
    const mention = fake.envelope({ user: 'U4', text: `<@${fake.botUserId}> ping`, channel: 'C9', mention: true });
    const { ts } = eventOf(mention);
    expect((await post(harness, fake, mention)).statusCode).toBe(200);
    await until('the reply in the thread', () => fake.posted.find((m) => m.threadTs === ts && m.text.includes('ping')));
    const follow = fake.envelope({ user: 'U5', text: 'and more', channel: 'C9', channelType: 'channel', threadTs: ts });
    expect((await post(harness, fake, follow)).statusCode).toBe(200);
    await until('the follow-up reply', () => fake.posted.find((m) => m.threadTs === ts && m.text.includes('and more')));
    expect(await turnsOf(harness, `C9/${ts}`)).toHaveLength(2);
    expect(await turnsOf(harness, `C9/${eventOf(plain).ts}`)).toHaveLength(0);
    // A bot's message and an edit start nothing.
    await post(harness, fake, fake.envelope({ user: 'U6', text: 'bot', botId: 'B2' }));
    await post(harness, fake, fake.envelope({ user: 'U6', text: 'edit', subtype: 'message_changed' }));
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(fake.posted).toHaveLength(2);
  });

  it('groups off: a mention in a channel starts nothing', async () => {
    const { fake, harness } = await open();
    const mention = fake.envelope({ user: 'U4', text: `<@${fake.botUserId}> ping`, channel: 'C8', mention: true });
    expect((await post(harness, fake, mention)).statusCode).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(await turnsOf(harness, `C8/${eventOf(mention).ts}`)).toHaveLength(0);
    expect(fake.posted).toHaveLength(0);
  });

  it('disabled: events are refused with 503 (Slack retries); enabled again, the retry is answered', async () => {
    const { fake, harness } = await open();
    const off = await harness.inject({ method: 'POST', url: '/api/v1/channels/slack/disable', headers: adminHeaders });
    expect(off.json()).toMatchObject({ enabled: false, connected: false });
    const envelope = fake.envelope({ user: 'U7', text: 'while off' });
    expect((await post(harness, fake, envelope)).statusCode).toBe(503);
    const on = await harness.inject({ method: 'POST', url: '/api/v1/channels/slack/enable', headers: adminHeaders });
    expect(on.json()).toMatchObject({ enabled: true, connected: true });
    expect((await post(harness, fake, envelope, { retryNum: 1 })).statusCode).toBe(200);
    await until('the reply', () => fake.posted.find((m) => m.text.includes('while off')));
  });

  it('Socket Mode: an event over the socket is acked after acceptance and answered once; a redelivery adds nothing', async () => {
    const { fake: f, harness: h } = await open((slack) => ({ app_token: slack.appToken }));
    await until('a socket', () => f.sockets() === 1);
    expect(f.callsOf('apps.connections.open')).toHaveLength(1);
    expect(f.callsOf('apps.connections.open')[0]!.token).toBe(f.appToken);
    const envelope = f.envelope({ user: 'U8', text: 'over the socket' });
    const { ts, channel } = eventOf(envelope);
    const id = f.push(envelope);
    await until('the ack', () => f.acks.includes(id));
    expect(await turnsOf(h, `${channel}/${ts}`)).toHaveLength(1);
    await until('the reply', () => f.posted.find((m) => m.text.includes('over the socket') && m.threadTs === ts));
    const again = f.push(envelope, 1);
    await until('the second ack', () => f.acks.includes(again));
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await turnsOf(h, `${channel}/${ts}`)).toHaveLength(1);
    expect(f.callsOf('chat.postMessage')).toHaveLength(1);
  });

  it('Socket Mode: a lost socket is reported, then reconnected by the channel with a new connection', async () => {
    const { fake: f, harness: h } = await open((slack) => ({ app_token: slack.appToken }));
    await until('a socket', () => f.sockets() === 1);
    f.dropSockets();
    await until('the loss reported', async () => {
      const view = (await h.adminGet('/api/v1/channels/slack')).json<{ connected?: boolean; error?: string | null }>();
      return view.connected === false && view.error ? view : null;
    });
    await until('reconnected', async () => {
      const view = (await h.adminGet('/api/v1/channels/slack')).json<{ connected?: boolean; error?: string | null }>();
      return view.connected === true && view.error === null && f.sockets() === 1;
    });
    expect(f.callsOf('apps.connections.open')).toHaveLength(2);
    const envelope = f.envelope({ user: 'U9', text: 'after the drop' });
    const id = f.push(envelope);
    await until('the ack', () => f.acks.includes(id));
    await until('the reply', () => f.posted.find((m) => m.text.includes('after the drop')));
  });
});
