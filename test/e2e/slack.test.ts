/**
 * The Slack channel in the built server (DECISIONS §16) against a fake
 * Slack over real HTTP (Slack's own Web API and Socket Mode clients pointed
 * at it through `api_url`) and the fake OpenAI server: Events API requests
 * signed as Slack signs them, streamed replies in the message's thread,
 * retries without a second turn or reply, the signature check, pairing and
 * the allowlist, 429, the channel actions, Socket Mode, and the stats of
 * GET /channels against what the fake recorded.
 */
import { describe, expect, it } from 'vitest';
import { echoReply, startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai.js';
import { slackSignature, startFakeSlack, type FakeSlack, type PostedSlackMessage } from '../helpers/fake-slack.js';
import { ADMIN_TOKEN, call, pollUntil, startGateway, type E2EHome, type Running } from './helpers.js';
import {
  channelConnected,
  channelView,
  chatTurns,
  closeAfterEach,
  platformHome,
  type ChannelView,
} from './platform-helpers.js';

const fakes = closeAfterEach();

async function bothFakes(): Promise<{ openai: FakeOpenAI; slack: FakeSlack }> {
  const openai = await startFakeOpenAI();
  const slack = await startFakeSlack();
  fakes.push(openai, slack);
  return { openai, slack };
}

/** A home whose gateway runs Slack against the fake (Events API unless `extra` sets app_token). */
const home = (
  openai: FakeOpenAI,
  slack: FakeSlack,
  auth: Record<string, unknown> = {},
  extra: Record<string, unknown> = {},
): E2EHome =>
  platformHome(
    openai,
    {
      slack: {
        enabled: true,
        bot_token: slack.botToken,
        signing_secret: slack.signingSecret,
        api_url: slack.url,
        ...extra,
      },
    },
    auth,
  );

const channel = (url: string): Promise<ChannelView> => channelView(url, 'slack');
const connected = (running: Running): Promise<void> => channelConnected(running, 'slack');
const turnsOf = (url: string, chatId: string) => chatTurns(url, 'slack', chatId);

/** The text as a Slack user reads it (the three escaped characters read back). */
const shown = (m: PostedSlackMessage): string =>
  m.text.replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&');

const threadOf = (envelope: Record<string, unknown>) => {
  const event = envelope.event as { channel: string; ts: string };
  return { channel: event.channel, ts: event.ts, chatId: `${event.channel}/${event.ts}` };
};

/** Waits for a message in `channel` whose text includes `text`. */
function replyIn(slack: FakeSlack, channelId: string, text: string): Promise<PostedSlackMessage> {
  return pollUntil(`a reply in ${channelId} with "${text}"`, async () =>
    slack.posted.find((m) => m.channel === channelId && shown(m).includes(text)),
  );
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('slack channel in the built server', () => {
  it('streams one threaded reply to a DM; a retried event adds nothing; GET /channels matches the fake', async () => {
    const { openai, slack } = await bothFakes();
    openai.always((body) => ({ ...(echoReply as (b: typeof body) => { content: string })(body), chunks: 4 }));
    const gw = await startGateway(home(openai, slack));
    await connected(gw);
    const events = `${gw.url}/slack/events`;

    const dm = slack.envelope({ user: 'U1', text: 'stream me please' });
    const first = threadOf(dm);
    const acked = await slack.deliver(events, dm);
    expect(acked.status).toBe(200);
    expect(acked.ms).toBeLessThan(3000); // Slack's three seconds
    const reply = await replyIn(slack, first.channel, 'fake: stream me please');
    expect(reply.threadTs).toBe(first.ts);
    await pollUntil('the final text', async () => (shown(reply) === 'fake: stream me please' ? true : undefined));

    // Slack retries the same event (its ack looked late): no second turn, no second reply.
    const retried = await slack.deliver(events, dm, { retryNum: 1 });
    expect(retried.status).toBe(200);

    const other = slack.envelope({ user: 'U2', text: 'second chat' });
    expect((await slack.deliver(events, other)).status).toBe(200);
    await replyIn(slack, threadOf(other).channel, 'fake: second chat');
    await pause(500);

    expect(await turnsOf(gw.url, first.chatId)).toHaveLength(1);
    expect(slack.posted.filter((m) => m.channel === first.channel)).toHaveLength(1);
    // Every call of the reply went to its one message, at least a second apart.
    const replyCalls = slack.calls.filter(
      (c) => (c.method === 'chat.postMessage' || c.method === 'chat.update') && c.params.channel === first.channel,
    );
    expect(replyCalls[0]!.method).toBe('chat.postMessage');
    expect(replyCalls[0]!.params.thread_ts).toBe(first.ts);
    for (const c of replyCalls.slice(1)) expect(c.params.ts).toBe(reply.ts);
    for (let i = 1; i < replyCalls.length; i++) {
      expect(replyCalls[i]!.at - replyCalls[i - 1]!.at).toBeGreaterThanOrEqual(900);
    }

    const view = await channel(gw.url);
    const accepted = new Set(slack.posted.map((m) => `${m.channel}/${m.threadTs}`)).size;
    expect(view).toMatchObject({ name: 'slack', enabled: true, connected: true, error: null });
    expect(view.messages_today).toBe(accepted);
    expect(view.messages_today).toBe(slack.callsOf('chat.postMessage').length);
    expect(view.last_message_at).not.toBeNull();
    expect(view.last_connected_at).not.toBeNull();
    expect(slack.callsOf('auth.test').length).toBeGreaterThanOrEqual(1);
    expect(slack.unexpected).toEqual([]);
    const config = await call(gw.url, 'GET', '/api/v1/config', { token: ADMIN_TOKEN });
    const text = JSON.stringify(config.body);
    for (const secret of [slack.botToken, slack.signingSecret]) expect(text).not.toContain(secret);
  });

  it('refuses missing, stale and wrong signatures with 401 (before parsing); answers url_verification', async () => {
    const { openai, slack } = await bothFakes();
    openai.always(echoReply);
    const gw = await startGateway(home(openai, slack));
    await connected(gw);
    const events = `${gw.url}/slack/events`;
    const dm = slack.envelope({ user: 'U3', text: 'forged' });
    expect((await slack.deliver(events, dm, { unsigned: true })).status).toBe(401);
    expect((await slack.deliver(events, dm, { secret: 'not-the-secret' })).status).toBe(401);
    const stale = Math.floor(Date.now() / 1000) - 301;
    expect((await slack.deliver(events, dm, { timestamp: stale })).status).toBe(401);
    // A wrong signature over a body that is not even JSON: refused for the signature, never parsed (not 400).
    expect((await slack.deliver(events, dm, { secret: 'nope', rawBody: '{not json' })).status).toBe(401);
    expect((await slack.deliver(events, dm, { rawBody: '{not json' })).status).toBe(400);
    const challenge = await slack.deliver(events, { type: 'url_verification', challenge: 'ch-42', token: 'x' });
    expect(challenge).toMatchObject({ status: 200, body: { challenge: 'ch-42' } });
    // A signature made by hand over the exact bytes passes.
    const body = JSON.stringify(dm);
    const ts = Math.floor(Date.now() / 1000);
    const res = await fetch(events, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-slack-request-timestamp': String(ts),
        'x-slack-signature': slackSignature(slack.signingSecret, ts, body),
      },
      body,
    });
    expect(res.status).toBe(200);
    await replyIn(slack, threadOf(dm).channel, 'fake: forged');
    expect(await turnsOf(gw.url, threadOf(dm).chatId)).toHaveLength(1);
  });

  it('pairing: instructions in a DM, /pair <code>, then the agent answers; the allowlist refuses others', async () => {
    const { openai, slack } = await bothFakes();
    openai.always(echoReply);
    const gw = await startGateway(home(openai, slack, { mode: 'pairing', allowed_users: ['slack:U5'] }));
    await connected(gw);
    const events = `${gw.url}/slack/events`;
    const hello = slack.envelope({ user: 'U4', text: 'hello?' });
    expect((await slack.deliver(events, hello)).status).toBe(200);
    const told = await replyIn(slack, 'DU4', '/pair <code>');
    expect(told.threadTs).toBe(threadOf(hello).ts);
    const issued = await call<{ code: string }>(gw.url, 'POST', '/api/v1/pair', {
      token: ADMIN_TOKEN,
      body: { platform: 'slack' },
    });
    expect(issued.status).toBe(201);
    await slack.deliver(events, slack.envelope({ user: 'U4', text: `/pair ${issued.body.code}` }));
    await replyIn(slack, 'DU4', 'Paired');
    const after = slack.envelope({ user: 'U4', text: 'after pairing' });
    await slack.deliver(events, after);
    await replyIn(slack, 'DU4', 'fake: after pairing');
    // On the allowlist: answered without pairing.
    await slack.deliver(events, slack.envelope({ user: 'U5', text: 'on the list' }));
    await replyIn(slack, 'DU5', 'fake: on the list');
    expect(await turnsOf(gw.url, threadOf(hello).chatId)).toHaveLength(0);
    expect(await turnsOf(gw.url, threadOf(after).chatId)).toHaveLength(1);
  });

  it('allowlist mode: a user not on it is refused in the DM, with no turn', async () => {
    const { openai, slack } = await bothFakes();
    openai.always(echoReply);
    const gw = await startGateway(home(openai, slack, { mode: 'allowlist', allowed_users: ['slack:U5'] }));
    await connected(gw);
    const events = `${gw.url}/slack/events`;
    const refused = slack.envelope({ user: 'U6', text: 'not on the list' });
    expect((await slack.deliver(events, refused)).status).toBe(200);
    await replyIn(slack, 'DU6', 'not allowed');
    // Its retry does not repeat the refusal.
    await slack.deliver(events, refused, { retryNum: 1 });
    await pause(300);
    expect(slack.posted.filter((m) => m.channel === 'DU6')).toHaveLength(1);
    expect(await turnsOf(gw.url, threadOf(refused).chatId)).toHaveLength(0);
  });

  it('honours a 429 Retry-After on chat.postMessage; a long reply is split within the thread', async () => {
    const { openai, slack } = await bothFakes();
    const long = Array.from({ length: 900 }, (_, i) => `word${i}`).join(' ');
    openai.enqueue(echoReply);
    openai.always(() => ({ content: long }));
    const gw = await startGateway(home(openai, slack));
    await connected(gw);
    const events = `${gw.url}/slack/events`;
    slack.fail('chat.postMessage', { status: 429, retryAfter: 2 });
    const dm = slack.envelope({ user: 'U7', text: 'rate me' });
    await slack.deliver(events, dm);
    await replyIn(slack, 'DU7', 'fake: rate me');
    const posts = slack.callsOf('chat.postMessage');
    expect(posts[0]!.status).toBe(429);
    expect(posts[1]!.status).toBe(200);
    expect(posts[1]!.at - posts[0]!.at).toBeGreaterThanOrEqual(1900);
    expect(slack.posted.filter((m) => m.channel === 'DU7')).toHaveLength(1);

    const big = slack.envelope({ user: 'U8', text: 'say a lot' });
    await slack.deliver(events, big);
    const pieces = await pollUntil(
      'the long reply in pieces',
      async () => {
        const inThread = slack.posted.filter((m) => m.threadTs === threadOf(big).ts);
        const joined = inThread.map((m) => m.text).join(' ');
        return inThread.length >= 2 && joined.replace(/\s+/g, ' ') === long ? inThread : undefined;
      },
      { timeoutMs: 20_000 },
    );
    for (const piece of pieces) expect(piece.text.length).toBeLessThanOrEqual(4000);
  });

  it('reconnect, disable and enable act on the connection; events while disabled are retried by Slack', async () => {
    const { openai, slack } = await bothFakes();
    openai.always(echoReply);
    const gw = await startGateway(home(openai, slack));
    await connected(gw);
    const events = `${gw.url}/slack/events`;

    const checks = slack.callsOf('auth.test').length;
    const reconnected = await call<ChannelView>(gw.url, 'POST', '/api/v1/channels/slack/reconnect', {
      token: ADMIN_TOKEN,
    });
    expect(reconnected.body).toMatchObject({ enabled: true, connected: true });
    expect(slack.callsOf('auth.test').length).toBe(checks + 1);

    const disabled = await call<ChannelView>(gw.url, 'POST', '/api/v1/channels/slack/disable', {
      token: ADMIN_TOKEN,
    });
    expect(disabled.body).toMatchObject({ enabled: false, connected: false });
    const dm = slack.envelope({ user: 'U9', text: 'while off' });
    expect((await slack.deliver(events, dm)).status).toBe(503);
    await pause(300);
    expect(slack.posted).toHaveLength(0);
    const enabled = await call<ChannelView>(gw.url, 'POST', '/api/v1/channels/slack/enable', { token: ADMIN_TOKEN });
    expect(enabled.body).toMatchObject({ enabled: true, connected: true });
    expect((await slack.deliver(events, dm, { retryNum: 1 })).status).toBe(200);
    await replyIn(slack, 'DU9', 'fake: while off');
    expect((await channel(gw.url)).messages_today).toBe(1);
  });

  it('Socket Mode: an event over the socket is acked and answered once; its redelivery adds nothing', async () => {
    const { openai, slack } = await bothFakes();
    openai.always(echoReply);
    const gw = await startGateway(home(openai, slack, {}, { app_token: slack.appToken }));
    await connected(gw);
    await pollUntil('a socket open', async () => (slack.sockets() === 1 ? true : undefined));
    expect(slack.callsOf('apps.connections.open')[0]!.token).toBe(slack.appToken);

    const dm = slack.envelope({ user: 'U10', text: 'over the socket' });
    const id = slack.push(dm);
    await pollUntil('the ack', async () => (slack.acks.includes(id) ? true : undefined));
    const reply = await replyIn(slack, 'DU10', 'fake: over the socket');
    expect(reply.threadTs).toBe(threadOf(dm).ts);
    const again = slack.push(dm, 1);
    await pollUntil('the redelivery acked', async () => (slack.acks.includes(again) ? true : undefined));
    await pause(500);
    expect(slack.posted.filter((m) => m.channel === 'DU10')).toHaveLength(1);
    expect(await turnsOf(gw.url, threadOf(dm).chatId)).toHaveLength(1);
    expect((await channel(gw.url)).messages_today).toBe(1);

    // Disabled: the socket closes; enabled: a new one opens.
    await call(gw.url, 'POST', '/api/v1/channels/slack/disable', { token: ADMIN_TOKEN });
    await pollUntil('the socket closed', async () => (slack.sockets() === 0 ? true : undefined));
    await call(gw.url, 'POST', '/api/v1/channels/slack/enable', { token: ADMIN_TOKEN });
    await pollUntil('a socket again', async () => (slack.sockets() === 1 ? true : undefined));
    expect(slack.callsOf('apps.connections.open')).toHaveLength(2);
  });
});
