/**
 * The Telegram channel in the built server (DECISIONS §16) against a fake
 * Bot API over real HTTP (grammY pointed at it through `api_root`) and the
 * fake OpenAI server: streamed replies, redelivery and kill -9 without a
 * lost or doubled message, pairing and its lockout, the allowlist, 429,
 * the channel actions, and the stats of GET /channels against what the fake
 * recorded.
 */
import { describe, expect, it } from 'vitest';
import { echoReply, startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai.js';
import { startFakeTelegram, type FakeTelegram, type SentMessage } from '../helpers/fake-telegram.js';
import {
  ADMIN_TOKEN,
  call,
  type E2EHome,
  killNow,
  pollUntil,
  type Running,
  startGateway,
  stopGateway,
} from './helpers.js';
import {
  channelConnected,
  channelView,
  chatTurns,
  closeAfterEach,
  platformHome,
  type ChannelView,
} from './platform-helpers.js';

const fakes = closeAfterEach();

async function fakes2(): Promise<{ openai: FakeOpenAI; telegram: FakeTelegram }> {
  const openai = await startFakeOpenAI();
  const telegram = await startFakeTelegram();
  fakes.push(openai, telegram);
  return { openai, telegram };
}

/** A home whose gateway runs Telegram against the fake, with `auth` (mode open unless given). */
const home = (openai: FakeOpenAI, telegram: FakeTelegram, auth: Record<string, unknown> = {}): E2EHome =>
  platformHome(openai, { telegram: { enabled: true, bot_token: telegram.token, api_root: telegram.url } }, auth);

const channel = (url: string): Promise<ChannelView> => channelView(url, 'telegram');
const connected = (running: Running): Promise<void> => channelConnected(running, 'telegram');
const turnsOf = (url: string, chatId: number) => chatTurns(url, 'telegram', chatId);

const inChat = (telegram: FakeTelegram, chatId: number): SentMessage[] =>
  telegram.sent.filter((m) => m.chatId === String(chatId));

/** Waits for a message to `chatId` whose text includes `text`. */
function replyIn(telegram: FakeTelegram, chatId: number, text: string): Promise<SentMessage> {
  return pollUntil(
    `a reply in ${chatId} with "${text}"`,
    async () => inChat(telegram, chatId).find((m) => m.text.includes(text)),
    { describe: () => `the chat holds ${JSON.stringify(inChat(telegram, chatId).map((m) => m.text))}` },
  );
}

describe('telegram channel in the built server', () => {
  it('streams one reply to a direct message by editing it; GET /channels matches what the fake saw', async () => {
    const { openai, telegram } = await fakes2();
    openai.always((body) => ({ ...(echoReply as (b: typeof body) => { content: string })(body), chunks: 4 }));
    const gw = await startGateway(home(openai, telegram));
    await connected(gw);
    telegram.pushText({ chatId: 10, userId: 1, text: 'stream me please' });
    const reply = await replyIn(telegram, 10, 'fake: stream me please');
    telegram.pushText({ chatId: 11, userId: 2, text: 'second chat' });
    await replyIn(telegram, 11, 'fake: second chat');
    expect(inChat(telegram, 10)).toHaveLength(1);
    expect(reply.text).toBe('fake: stream me please');
    // Every edit was to the one message; throttled: at least 1 s between calls of one reply.
    const calls = telegram.calls.filter(
      (c) => (c.method === 'sendMessage' || c.method === 'editMessageText') && String(c.params.chat_id) === '10',
    );
    expect(calls[0]!.method).toBe('sendMessage');
    for (const c of calls.slice(1)) expect(Number(c.params.message_id)).toBe(reply.messageId);
    for (let i = 1; i < calls.length; i++) expect(calls[i]!.at - calls[i - 1]!.at).toBeGreaterThanOrEqual(900);

    const view = await channel(gw.url);
    expect(view).toMatchObject({ name: 'telegram', enabled: true, connected: true, error: null, messages_today: 2 });
    expect(view.last_message_at).not.toBeNull();
    expect(view.last_connected_at).not.toBeNull();
    expect(telegram.callsOf('getMe').length).toBeGreaterThanOrEqual(1);
    expect(telegram.unexpected).toEqual([]);
    const health = await call<{ components: { channels: { status: string } } }>(gw.url, 'GET', '/api/v1/health');
    expect(JSON.stringify(health.body)).not.toContain(telegram.token);
    const logs = await call(gw.url, 'GET', '/api/v1/logs?limit=1000', { token: ADMIN_TOKEN });
    expect(logs.status).toBe(200);
    expect(JSON.stringify(logs.body)).not.toContain(telegram.token.split(':')[1]);
    const config = await call(gw.url, 'GET', '/api/v1/config', { token: ADMIN_TOKEN });
    expect(config.status).toBe(200);
    expect(JSON.stringify(config.body)).not.toContain(telegram.token.split(':')[1]);
  });

  it('kill -9 after acceptance: the running turn is told once, the queued one answered once, none lost; a redelivery adds nothing', async () => {
    const { openai, telegram } = await fakes2();
    openai.enqueue({ hang: true }); // the first turn stays running in the model
    openai.always(echoReply);
    const h = home(openai, telegram);
    const first = await startGateway(h);
    await connected(first);
    const a = telegram.pushText({ chatId: 20, userId: 1, text: 'first message' });
    const b = telegram.pushText({ chatId: 20, userId: 1, text: 'second message' });
    // Both accepted (B waits behind A in the session's lane); A's model call is in flight.
    await pollUntil('A running and B accepted', async () => {
      const turns = await turnsOf(first.url, 20);
      const statuses = turns.map((t) => t.status).sort();
      return statuses.length === 2 && statuses[0] === 'accepted' && statuses[1] === 'running' ? true : undefined;
    });
    // A's call reached the model (and hangs there): the scripted hang is spent before the kill.
    await pollUntil('A at the model', async () =>
      openai.requests.some((r) => JSON.stringify(r).includes('first message')) ? true : undefined,
    );
    expect(inChat(telegram, 20)).toHaveLength(0);
    const killed = killNow(first);
    telegram.releasePolls();

    const second = await startGateway(h);
    expect(await killed).toBe('SIGKILL');
    await connected(second);
    // Telegram delivers both updates again (the process may have died before confirming them).
    telegram.redeliver(a);
    telegram.redeliver(b);
    const told = await replyIn(telegram, 20, 'interrupted');
    const answered = await replyIn(telegram, 20, 'fake: second message');
    await pollUntil('both updates consumed again', async () =>
      telegram.pollOffsets.some((o) => o !== null && o > Number(b.update_id)) ? true : undefined,
    );
    const turns = await turnsOf(second.url, 20);
    expect(turns).toHaveLength(2);
    expect(turns.map((t) => t.status).sort()).toEqual(['completed', 'interrupted']);
    // Exactly one message per turn: nothing doubled by the restart or the redelivery.
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(
      inChat(telegram, 20)
        .map((m) => m.messageId)
        .sort(),
    ).toEqual([told.messageId, answered.messageId].sort());
  });

  it('kill -9 after the outcome, before the reply is posted: the restart posts it once', async () => {
    const { openai, telegram } = await fakes2();
    openai.always(echoReply);
    const h = home(openai, telegram);
    const first = await startGateway(h);
    await connected(first);
    // Telegram holds every send back for a minute, so the reply is still owed when the turn completes.
    telegram.fail('sendMessage', { status: 429, retryAfter: 60 }, 5);
    telegram.pushText({ chatId: 25, userId: 1, text: 'answer me once' });
    await pollUntil('the turn completed', async () =>
      (await turnsOf(first.url, 25)).some((t) => t.status === 'completed') ? true : undefined,
    );
    expect(inChat(telegram, 25)).toHaveLength(0);
    const killedAgain = killNow(first);
    telegram.releasePolls();
    telegram.clearFailures(); // Telegram answers again

    const second = await startGateway(h);
    expect(await killedAgain).toBe('SIGKILL');
    await connected(second);
    const reply = await replyIn(telegram, 25, 'fake: answer me once');
    expect(await turnsOf(second.url, 25)).toHaveLength(1);
    // Once: a third start owes nothing, and nothing else reaches the chat.
    await stopGateway(second, 'SIGTERM');
    const third = await startGateway(h);
    await connected(third);
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(inChat(telegram, 25).map((m) => m.messageId)).toEqual([reply.messageId]);
  });

  it('pairing: instructions, /pair <code>, then the lockout after 5 wrong codes', async () => {
    const { openai, telegram } = await fakes2();
    openai.always(echoReply);
    const gw = await startGateway(home(openai, telegram, { mode: 'pairing' }));
    await connected(gw);
    telegram.pushText({ chatId: 30, userId: 3, text: 'hello?' });
    await replyIn(telegram, 30, '/pair <code>');
    const issued = await call<{ code: string }>(gw.url, 'POST', '/api/v1/pair', {
      token: ADMIN_TOKEN,
      body: { platform: 'telegram' },
    });
    expect(issued.status).toBe(201);
    telegram.pushText({ chatId: 30, userId: 3, text: `/pair ${issued.body.code}` });
    await replyIn(telegram, 30, 'Paired');
    telegram.pushText({ chatId: 30, userId: 3, text: 'after pairing' });
    await replyIn(telegram, 30, 'fake: after pairing');

    for (let i = 0; i < 5; i++) telegram.pushText({ chatId: 31, userId: 4, text: '/pair ZZZZZZZZ' });
    await pollUntil('five answers', async () => (inChat(telegram, 31).length === 5 ? true : undefined));
    expect(inChat(telegram, 31).at(-1)!.text).toContain('Too many wrong codes');
    const audit = await call<{ items?: unknown[] }>(gw.url, 'GET', '/api/v1/security/audit', { token: ADMIN_TOKEN });
    expect(audit.status).toBeLessThan(500);
    expect(await turnsOf(gw.url, 31)).toHaveLength(0);
  });

  it('allowlist: a user not on it gets a refusal and no turn', async () => {
    const { openai, telegram } = await fakes2();
    openai.always(echoReply);
    const gw = await startGateway(home(openai, telegram, { mode: 'allowlist', allowed_users: ['telegram:5'] }));
    await connected(gw);
    telegram.pushText({ chatId: 40, userId: 6, text: 'not on the list' });
    await replyIn(telegram, 40, 'not allowed');
    telegram.pushText({ chatId: 41, userId: 5, text: 'on the list' });
    await replyIn(telegram, 41, 'fake: on the list');
    expect(await turnsOf(gw.url, 40)).toHaveLength(0);
    expect(await turnsOf(gw.url, 41)).toHaveLength(1);
  });

  it('honours a 429 retry_after on sendMessage', async () => {
    const { openai, telegram } = await fakes2();
    openai.always(echoReply);
    const gw = await startGateway(home(openai, telegram));
    await connected(gw);
    telegram.fail('sendMessage', { status: 429, retryAfter: 2 });
    telegram.pushText({ chatId: 50, userId: 1, text: 'rate me' });
    await replyIn(telegram, 50, 'fake: rate me');
    const sends = telegram.callsOf('sendMessage');
    expect(sends[0]!.status).toBe(429);
    expect(sends[1]!.status).toBe(200);
    expect(sends[1]!.at - sends[0]!.at).toBeGreaterThanOrEqual(1900);
    expect(inChat(telegram, 50)).toHaveLength(1);
  });

  it('reconnect, disable and enable act on the connection; a lost connection is degraded, then restored', async () => {
    const { openai, telegram } = await fakes2();
    openai.always(echoReply);
    const gw = await startGateway(home(openai, telegram));
    await connected(gw);

    const getMes = telegram.callsOf('getMe').length;
    const reconnected = await call<ChannelView>(gw.url, 'POST', '/api/v1/channels/telegram/reconnect', {
      token: ADMIN_TOKEN,
    });
    expect(reconnected.body).toMatchObject({ enabled: true, connected: true });
    expect(telegram.callsOf('getMe').length).toBe(getMes + 1);

    const disabled = await call<ChannelView>(gw.url, 'POST', '/api/v1/channels/telegram/disable', {
      token: ADMIN_TOKEN,
    });
    expect(disabled.body).toMatchObject({ enabled: false, connected: false });
    const polls = telegram.pollOffsets.length;
    telegram.pushText({ chatId: 60, userId: 1, text: 'while off' });
    await new Promise((resolve) => setTimeout(resolve, 500)); // a running poller would fetch at once
    expect(telegram.pollOffsets.length).toBe(polls);
    expect(inChat(telegram, 60)).toHaveLength(0);
    const enabled = await call<ChannelView>(gw.url, 'POST', '/api/v1/channels/telegram/enable', { token: ADMIN_TOKEN });
    expect(enabled.body).toMatchObject({ enabled: true, connected: true });
    await replyIn(telegram, 60, 'fake: while off');

    // The Bot API fails twice: the channel reports the loss (health degraded), then reconnects by itself.
    telegram.fail('getUpdates', { status: 502, description: 'Bad Gateway' }, 2);
    telegram.releasePolls();
    await pollUntil('the loss reported', async () => {
      const view = await channel(gw.url);
      const health = await call<{ status: string }>(gw.url, 'GET', '/api/v1/health');
      return !view.connected && view.error && health.body.status === 'degraded' ? true : undefined;
    });
    await pollUntil('reconnected', async () => ((await channel(gw.url)).connected ? true : undefined), {
      timeoutMs: 15_000,
    });
    expect((await channel(gw.url)).error).toBeNull();
    telegram.pushText({ chatId: 61, userId: 1, text: 'after the outage' });
    await replyIn(telegram, 61, 'fake: after the outage');
  });
});
