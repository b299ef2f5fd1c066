import { afterEach, describe, expect, it } from 'vitest';
import { startFakeTelegram, type FakeTelegram } from '../../../test/helpers/fake-telegram.js';
import { adminHeaders, startHarness, type Harness } from '../../../test/helpers/harness.js';
import { until } from '../../../test/helpers/until.js';
import { createLogger } from '../../logs/index.js';
import type { ModelProvider } from '../../runtime/index.js';
import { createTelegramTransport } from './telegram.transport.js';
import { handleTelegramWebhook, TELEGRAM_SECRET_HEADER } from './telegram.webhook.js';

/**
 * The Telegram channel in an in-process gateway (real SQLite, echo
 * provider) against the fake Bot API over real HTTP, through grammY.
 */

let fake: FakeTelegram | null = null;
let harness: Harness | null = null;

afterEach(async () => {
  await harness?.close();
  harness = null;
  await fake?.close();
  fake = null;
});

async function open(auth: Record<string, unknown> = { mode: 'open' }, telegram: Record<string, unknown> = {}) {
  fake = await startFakeTelegram();
  harness = await startHarness({
    config: {
      gateway: { auth },
      channels: { telegram: { enabled: true, bot_token: fake.token, api_root: fake.url, ...telegram } },
    },
  });
  await until('the channel connected', async () => {
    const view = (await harness!.adminGet('/api/v1/channels/telegram')).json<{ connected?: boolean }>();
    return view.connected === true;
  });
  return { fake, harness };
}

async function turnsOf(h: Harness, chatId: number) {
  const res = await h.adminGet(`/api/v1/sessions/${encodeURIComponent(`gateway:telegram:${chatId}`)}/turns`);
  return res.statusCode === 200 ? res.json<{ items: Array<{ event_id: string; status: string }> }>().items : [];
}

describe('telegram channel (in process)', () => {
  it('answers a direct message with one streamed reply and confirms the update only after acceptance', async () => {
    const { fake, harness } = await open();
    const update = fake.pushText({ chatId: 501, userId: 77, text: 'hello there' });
    const message = await until('the reply', () =>
      fake.sent.find((m) => m.chatId === '501' && m.text.includes('hello there')),
    );
    expect(fake.sent.filter((m) => m.chatId === '501')).toHaveLength(1);
    expect(message.versions.at(-1)).toContain('hello there');
    await until('the offset past the update', () => fake.confirmedOffset() > Number(update.update_id));
    const turns = await turnsOf(harness, 501);
    expect(turns).toHaveLength(1);
    const channel = (await harness.adminGet('/api/v1/channels/telegram')).json<Record<string, unknown>>();
    expect(channel).toMatchObject({ name: 'telegram', enabled: true, connected: true, messages_today: 1, error: null });
    expect(channel.last_message_at).not.toBeNull();
    expect(fake.unexpected).toEqual([]);
  });

  it('streams: the first words are sent, later ones edit that same message', async () => {
    fake = await startFakeTelegram();
    const f = fake;
    // A model that says its first words, waits until they are shown in the chat, then finishes.
    const provider: ModelProvider = {
      type: 'echo',
      model: 'gated',
      complete: async (request) => {
        request.onDelta?.('Hello');
        await until('the first words shown', () => f.sent.some((m) => m.text === 'Hello'));
        request.onDelta?.(' world');
        return {
          content: 'Hello world',
          tool_calls: [],
          usage: { input_tokens: 1, output_tokens: 2 },
          model: 'gated',
          finish_reason: 'stop',
        };
      },
    };
    harness = await startHarness({
      provider,
      config: {
        gateway: { auth: { mode: 'open' } },
        channels: { telegram: { enabled: true, bot_token: f.token, api_root: f.url } },
      },
    });
    f.pushText({ chatId: 530, userId: 1, text: 'say hello' });
    const message = await until('the whole reply', () =>
      f.sent.find((m) => m.chatId === '530' && m.text === 'Hello world'),
    );
    expect(message.versions).toEqual(['Hello', 'Hello world']);
    expect(f.sent.filter((m) => m.chatId === '530')).toHaveLength(1);
    const [send, edit] = f.calls.filter((c) => c.method === 'sendMessage' || c.method === 'editMessageText');
    expect(send!.method).toBe('sendMessage');
    expect(edit!.method).toBe('editMessageText');
    expect(edit!.at - send!.at).toBeGreaterThanOrEqual(900); // throttled: about one call a second
  });

  it('honours a 429 on getUpdates without reporting the connection lost', async () => {
    const { fake, harness } = await open();
    fake.fail('getUpdates', { status: 429, retryAfter: 1 });
    fake.releasePolls();
    await until('the 429 answered', () => fake.callsOf('getUpdates').some((c) => c.status === 429));
    const view = (await harness.adminGet('/api/v1/channels/telegram')).json<{ connected: boolean; error: unknown }>();
    expect(view).toMatchObject({ connected: true, error: null });
    const at = fake.callsOf('getUpdates').find((c) => c.status === 429)!.at;
    fake.pushText({ chatId: 531, userId: 1, text: 'after the wait' });
    await until('the reply', () => fake.sent.find((m) => m.chatId === '531' && m.text.includes('after the wait')));
    const next = fake.pollOffsets.length;
    expect(next).toBeGreaterThan(1);
    expect(fake.callsOf('sendMessage').find((c) => String(c.params.chat_id) === '531')!.at - at).toBeGreaterThanOrEqual(
      900,
    );
  });

  it('replays a redelivered update (same update_id): no second turn, no second reply', async () => {
    const { fake, harness } = await open();
    const update = fake.pushText({ chatId: 502, userId: 77, text: 'once only' });
    await until('the reply', () => fake.sent.find((m) => m.chatId === '502' && m.text.includes('once only')));
    await until('the offset past the update', () => fake.confirmedOffset() > Number(update.update_id));
    // A restart forgets the offset; Telegram delivers the update again (same update_id).
    await harness.restart();
    const from = fake.pollOffsets.length;
    fake.redeliver(update);
    await until('the redelivery consumed', () =>
      fake.pollOffsets.slice(from).some((offset) => offset !== null && offset > Number(update.update_id)),
    );
    await harness.internals.messages.idle(5000);
    // … without a second turn or reply.
    expect(await turnsOf(harness, 502)).toHaveLength(1);
    expect(fake.sent.filter((m) => m.chatId === '502')).toHaveLength(1);
    expect(fake.callsOf('sendMessage').filter((c) => String(c.params.chat_id) === '502')).toHaveLength(1);
  });

  it('refuses a user outside the allowlist with a notice and no turn', async () => {
    const { fake, harness } = await open({ mode: 'allowlist', allowed_users: ['telegram:1'] });
    fake.pushText({ chatId: 503, userId: 99, text: 'let me in' });
    const notice = await until('the refusal', () => fake.sent.find((m) => m.chatId === '503'));
    expect(notice.text).toContain('not allowed');
    expect(await turnsOf(harness, 503)).toHaveLength(0);
    // An allowed user is answered.
    fake.pushText({ chatId: 504, userId: 1, text: 'allowed here' });
    await until('the reply', () => fake.sent.find((m) => m.chatId === '504' && m.text.includes('allowed here')));
  });

  it('pairs through /pair <code> and locks after 5 wrong codes', async () => {
    const { fake, harness } = await open({ mode: 'pairing' });
    fake.pushText({ chatId: 505, userId: 55, text: 'hi' });
    const instructions = await until('the instructions', () => fake.sent.find((m) => m.chatId === '505'));
    expect(instructions.text).toContain('/pair <code>');

    const issued = await harness.inject({
      method: 'POST',
      url: '/api/v1/pair',
      headers: adminHeaders,
      payload: { platform: 'telegram' },
    });
    expect(issued.statusCode).toBe(201);
    const code = issued.json<{ code: string }>().code;
    fake.pushText({ chatId: 505, userId: 55, text: `/pair ${code}` });
    await until('paired', () => fake.sent.find((m) => m.chatId === '505' && m.text.startsWith('Paired')));
    fake.pushText({ chatId: 505, userId: 55, text: 'now paired' });
    await until('the reply', () => fake.sent.find((m) => m.chatId === '505' && m.text.includes('now paired')));

    // Another user: five wrong codes lock; the right code is then refused too.
    for (let i = 1; i <= 5; i++) fake.pushText({ chatId: 506, userId: 66, text: '/pair WRONGWRN' });
    await until('five answers', () => fake.sent.filter((m) => m.chatId === '506').length === 5);
    const answers = fake.sent.filter((m) => m.chatId === '506').map((m) => m.text);
    expect(answers.slice(0, 4).every((t) => t.includes('not valid'))).toBe(true);
    expect(answers[4]).toContain('Too many wrong codes');
    const second = await harness.inject({
      method: 'POST',
      url: '/api/v1/pair',
      headers: adminHeaders,
      payload: { platform: 'telegram' },
    });
    fake.pushText({ chatId: 506, userId: 66, text: `/pair ${second.json<{ code: string }>().code}` });
    await until('the lock answer', () => fake.sent.filter((m) => m.chatId === '506').length === 6);
    expect(fake.sent.filter((m) => m.chatId === '506').at(-1)!.text).toContain('Too many wrong codes');
    expect(await turnsOf(harness, 506)).toHaveLength(0);
  });

  it('ignores groups unless enabled, and then answers only mentions and replies', async () => {
    const { fake } = await open({ mode: 'open' }, { groups: true });
    const mention = `@${fake.bot.username}`;
    fake.pushText({ chatId: -700, userId: 1, text: 'just chatting', chatType: 'group' });
    fake.pushText({
      chatId: -700,
      userId: 1,
      text: `${mention} what time is it`,
      chatType: 'group',
      entities: [{ type: 'mention', offset: 0, length: mention.length }],
    });
    await until('the reply to the mention', () =>
      fake.sent.find((m) => m.chatId === '-700' && m.text.includes('what time is it')),
    );
    await until('everything consumed', () => fake.pending() === 0);
    expect(fake.sent.filter((m) => m.chatId === '-700')).toHaveLength(1);
    expect(fake.sent.find((m) => m.chatId === '-700')!.text).toContain('what time is it');
    expect(fake.sent.find((m) => m.chatId === '-700')!.text).not.toContain(mention);
  });

  it('passes /new and /status to the message path like any text, each answered once', async () => {
    const { fake, harness } = await open();
    fake.pushText({ chatId: 509, userId: 1, text: '/status' });
    await until('the status reply', () => fake.sent.find((m) => m.chatId === '509'));
    fake.pushText({ chatId: 509, userId: 1, text: '/new' });
    await until('the /new reply', () => fake.sent.filter((m) => m.chatId === '509').length === 2);
    await harness.internals.messages.idle(5000);
    expect(await turnsOf(harness, 509)).toHaveLength(2);
    expect(fake.sent.filter((m) => m.chatId === '509').every((m) => m.text.length > 0)).toBe(true);
  });

  it('stops polling on disable, and picks the update up on enable', async () => {
    const { fake, harness } = await open();
    const disabled = await harness.inject({
      method: 'POST',
      url: '/api/v1/channels/telegram/disable',
      headers: adminHeaders,
    });
    expect(disabled.json()).toMatchObject({ enabled: false, connected: false });
    const polls = fake.callsOf('getUpdates').length;
    fake.pushText({ chatId: 508, userId: 1, text: 'while disabled' });
    await new Promise((resolve) => setTimeout(resolve, 300)); // a window in which a running poller would fetch
    expect(fake.callsOf('getUpdates').length).toBeLessThanOrEqual(polls + 1);
    expect(fake.sent.filter((m) => m.chatId === '508')).toHaveLength(0);
    const enabled = await harness.inject({
      method: 'POST',
      url: '/api/v1/channels/telegram/enable',
      headers: adminHeaders,
    });
    expect(enabled.json()).toMatchObject({ enabled: true, connected: true });
    await until('the reply after enable', () => fake.sent.find((m) => m.chatId === '508'));
  });
});

describe('telegram webhook mode', () => {
  it('refuses to start without webhook_secret, and says why in GET /channels (health degraded)', async () => {
    fake = await startFakeTelegram();
    harness = await startHarness({
      config: {
        gateway: { auth: { mode: 'open' } },
        channels: { telegram: { enabled: true, bot_token: fake.token, api_root: fake.url, mode: 'webhook' } },
      },
    });
    const view = (await harness.adminGet('/api/v1/channels/telegram')).json<{ connected: boolean; error: string }>();
    expect(view.connected).toBe(false);
    expect(view.error).toContain('webhook_secret');
    const health = (await harness.adminGet('/api/v1/health')).json<{ status: string }>();
    expect(health.status).toBe('degraded');
  });

  it('serves /telegram/<bot id>: the secret header first, then one turn per update id, answered once', async () => {
    fake = await startFakeTelegram();
    harness = await startHarness({
      config: {
        gateway: { auth: { mode: 'open' } },
        channels: {
          telegram: {
            enabled: true,
            bot_token: fake.token,
            api_root: fake.url,
            mode: 'webhook',
            webhook_secret: 'hook-secret',
          },
        },
      },
    });
    const path = `/telegram/${fake.bot.id}`;
    const update = {
      update_id: 5001,
      message: {
        message_id: 1,
        date: 0,
        chat: { id: 520, type: 'private' },
        from: { id: 3, is_bot: false, first_name: 'u' },
        text: 'through the hook',
      },
    };
    const post = (secret: string, payload: string) =>
      harness!.inject({
        method: 'POST',
        url: path,
        headers: { 'content-type': 'application/json', 'x-telegram-bot-api-secret-token': secret },
        payload,
      });
    expect((await post('wrong', '{not json')).statusCode).toBe(401);
    expect((await post('hook-secret', '{not json')).statusCode).toBe(400);
    expect((await post('hook-secret', JSON.stringify(update))).statusCode).toBe(200);
    await until('the reply', () => fake!.sent.find((m) => m.chatId === '520' && m.text.includes('through the hook')));
    // Telegram delivers it again (no 200 seen, say): replayed, no second turn or reply.
    expect((await post('hook-secret', JSON.stringify(update))).statusCode).toBe(200);
    await harness.internals.messages.idle(5000);
    expect(await turnsOf(harness, 520)).toHaveLength(1);
    expect(fake.sent.filter((m) => m.chatId === '520')).toHaveLength(1);
    expect(fake.callsOf('getUpdates')).toHaveLength(0);
    expect(fake.pollOffsets).toHaveLength(0);
  });

  it('hands a webhook update with the right secret to the running receiver, in order', async () => {
    fake = await startFakeTelegram();
    const transport = createTelegramTransport({
      botToken: fake.token,
      mode: 'webhook',
      apiRoot: fake.url,
      logger: createLogger({ level: 'error', stdout: { write: () => undefined } }),
    });
    const abort = new AbortController();
    await transport.connect(abort.signal);
    const seen: string[] = [];
    const receiving = transport.receive(
      async (event) => void seen.push(`${event.deliveryId}:${event.text}`),
      abort.signal,
    );
    const update = {
      update_id: 77,
      message: {
        message_id: 1,
        date: 0,
        chat: { id: 9, type: 'private' },
        from: { id: 3, is_bot: false, first_name: 'u' },
        text: 'via hook',
      },
    };
    const handle = (secret: string) =>
      handleTelegramWebhook(
        { headers: { [TELEGRAM_SECRET_HEADER]: secret }, body: JSON.stringify(update) },
        { secret: 'hook-secret', deliver: transport.webhookReceiver() },
      );
    expect((await handle('wrong')).status).toBe(401);
    expect((await handle('hook-secret')).status).toBe(200);
    expect(seen).toEqual(['77:via hook']);
    abort.abort();
    await receiving;
    expect(transport.webhookReceiver()).toBeNull();
    expect(fake.callsOf('getUpdates')).toHaveLength(0);
  });
});
