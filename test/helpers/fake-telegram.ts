/**
 * A fake Telegram Bot API over real HTTP (node:http on 127.0.0.1, port 0),
 * for the Telegram channel through grammY's own client (`api_root`):
 * `getMe`, `getUpdates` (long poll with `timeout`, offset semantics: an
 * offset confirms, and forgets, every update before it), `sendMessage`,
 * `editMessageText`, `setWebhook`, `deleteWebhook`. Every call is recorded;
 * a test injects updates, failures (429 with `parameters.retry_after`, 5xx)
 * per method, and redeliveries. An unknown method or a wrong token is
 * answered as Telegram does (404/401) and recorded as unexpected.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/** One recorded Bot API call. */
export interface TelegramCall {
  method: string;
  params: Record<string, unknown>;
  /** When it was answered (ms, Date.now). */
  at: number;
  /** The HTTP status it was answered with. */
  status: number;
}

/** A message the bot sent, with its edits. */
export interface SentMessage {
  chatId: string;
  messageId: number;
  /** The text now shown. */
  text: string;
  /** Every text it showed, in order (the send first, then each edit). */
  versions: string[];
}

/** A scripted failure of the next call(s) of a method. */
export type TelegramFailure = { status: 429; retryAfter: number } | { status: 500 | 502 | 503; description?: string };

/** What a test builds an update from. */
export interface TextUpdateInput {
  chatId: number;
  userId: number;
  text: string;
  chatType?: 'private' | 'group' | 'supergroup';
  /** Entities of the text (mentions, commands); a leading `/command` gets a bot_command entity by default. */
  entities?: Array<{ type: string; offset: number; length: number }>;
  /** The message replies to this message of the bot. */
  replyToBotMessage?: number;
  isBot?: boolean;
}

export interface FakeTelegram {
  /** The `api_root` for grammY: `http://127.0.0.1:PORT`. */
  url: string;
  token: string;
  bot: { id: number; username: string };
  calls: TelegramCall[];
  /** Messages the bot sent, in order. */
  sent: SentMessage[];
  /** Adds a text-message update (a fresh update_id); answers it. */
  pushText(input: TextUpdateInput): Record<string, unknown>;
  /** Queues an update again as it was (a redelivery: same update_id), even if already confirmed. */
  redeliver(update: Record<string, unknown>): void;
  /** The next `count` calls of `method` fail with `failure`. */
  fail(method: string, failure: TelegramFailure, count?: number): void;
  /** Drops every scripted failure not yet used. */
  clearFailures(): void;
  /** Updates not yet confirmed by an offset. */
  pending(): number;
  /** The highest offset a getUpdates carried (0 when none). */
  confirmedOffset(): number;
  /** Calls of one method. */
  callsOf(method: string): TelegramCall[];
  /** The offset of every getUpdates as it arrived (null: none given), before it is answered. */
  pollOffsets: Array<number | null>;
  /** Unknown methods or wrong tokens seen. */
  unexpected: string[];
  /** The webhook registered by setWebhook, or null. */
  webhook: { url: string; secret_token?: string } | null;
  /** Answers every pending long poll with no updates (e.g. before a process is killed). */
  releasePolls(): void;
  close(): Promise<void>;
}

/** A parameter as text (Bot API parameters are strings or numbers). */
const asText = (value: unknown): string =>
  typeof value === 'string' ? value : typeof value === 'number' ? String(value) : '';

const DEFAULT_TOKEN = '123456:TEST-token-not-a-real-one';

/** Starts the fake; `close()` it in afterEach. */
export async function startFakeTelegram(options: { token?: string } = {}): Promise<FakeTelegram> {
  const token = options.token ?? DEFAULT_TOKEN;
  const bot = { id: Number(token.split(':')[0]), username: 'gatehouse_test_bot' };
  const calls: TelegramCall[] = [];
  const sent: SentMessage[] = [];
  const unexpected: string[] = [];
  const pollOffsets: Array<number | null> = [];
  let queue: Array<Record<string, unknown>> = [];
  let nextUpdateId = 1000;
  let nextMessageId = 1;
  let confirmed = 0;
  const failures = new Map<string, TelegramFailure[]>();
  const polls = new Set<() => void>();
  let webhook: FakeTelegram['webhook'] = null;
  const sockets = new Set<Socket>();

  const reply = (res: ServerResponse, status: number, body: unknown): void => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  };
  const record = (method: string, params: Record<string, unknown>, status: number): void => {
    calls.push({ method, params, at: Date.now(), status });
  };
  const wakePolls = (): void => {
    for (const wake of [...polls]) wake();
  };

  const readParams = async (req: IncomingMessage): Promise<Record<string, unknown>> => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    if (!text) return {};
    const type = req.headers['content-type'] ?? '';
    if (type.includes('application/json')) return JSON.parse(text) as Record<string, unknown>;
    return Object.fromEntries(new URLSearchParams(text));
  };

  const server = createServer((req, res) => {
    void (async () => {
      const match = /^\/bot([^/]+)\/(\w+)$/.exec(req.url ?? '');
      const params = await readParams(req);
      if (!match) {
        unexpected.push(`path ${req.url}`);
        return reply(res, 404, { ok: false, error_code: 404, description: 'Not Found' });
      }
      const [, givenToken, method] = match as unknown as [string, string, string];
      if (givenToken !== token) {
        unexpected.push(`token for ${method}`);
        record(method, params, 401);
        return reply(res, 401, { ok: false, error_code: 401, description: 'Unauthorized' });
      }
      const scripted = failures.get(method);
      const failure = scripted?.shift();
      if (failure) {
        record(method, params, failure.status);
        if (failure.status === 429) {
          return reply(res, 429, {
            ok: false,
            error_code: 429,
            description: `Too Many Requests: retry after ${failure.retryAfter}`,
            parameters: { retry_after: failure.retryAfter },
          });
        }
        return reply(res, failure.status, {
          ok: false,
          error_code: failure.status,
          description: failure.description ?? 'Internal Server Error',
        });
      }
      switch (method) {
        case 'getMe':
          record(method, params, 200);
          return reply(res, 200, {
            ok: true,
            result: { id: bot.id, is_bot: true, first_name: 'Test', username: bot.username },
          });
        case 'deleteWebhook':
          webhook = null;
          record(method, params, 200);
          return reply(res, 200, { ok: true, result: true });
        case 'setWebhook':
          webhook = {
            url: asText(params.url),
            ...(params.secret_token ? { secret_token: asText(params.secret_token) } : {}),
          };
          record(method, params, 200);
          return reply(res, 200, { ok: true, result: true });
        case 'getUpdates': {
          pollOffsets.push(params.offset === undefined ? null : Number(params.offset));
          const offset = params.offset === undefined ? 0 : Number(params.offset);
          if (offset > confirmed) confirmed = offset;
          // An offset confirms every update before it: Telegram forgets them.
          queue = queue.filter((u) => Number(u.update_id) >= offset || offset === 0);
          const timeoutMs = Number(params.timeout ?? 0) * 1000;
          const limit = Number(params.limit ?? 100);
          const take = () => queue.filter((u) => Number(u.update_id) >= offset).slice(0, limit);
          let ready = take();
          if (ready.length === 0 && timeoutMs > 0) {
            await new Promise<void>((resolve) => {
              const timer = setTimeout(done, timeoutMs);
              function done(): void {
                clearTimeout(timer);
                polls.delete(done);
                resolve();
              }
              polls.add(done);
              req.once('close', done);
            });
            ready = take();
          }
          record(method, params, 200);
          if (res.destroyed) return;
          return reply(res, 200, { ok: true, result: ready });
        }
        case 'sendMessage': {
          const chatId = asText(params.chat_id);
          const text = asText(params.text);
          if (text.length === 0 || text.length > 4096) {
            record(method, params, 400);
            return reply(res, 400, { ok: false, error_code: 400, description: 'Bad Request: message text is invalid' });
          }
          const message = { chatId, messageId: nextMessageId++, text, versions: [text] };
          sent.push(message);
          record(method, params, 200);
          return reply(res, 200, {
            ok: true,
            result: {
              message_id: message.messageId,
              date: Math.floor(Date.now() / 1000),
              chat: { id: Number(chatId), type: 'private' },
              from: { id: bot.id, is_bot: true, first_name: 'Test', username: bot.username },
              text,
            },
          });
        }
        case 'editMessageText': {
          const chatId = asText(params.chat_id);
          const messageId = Number(params.message_id);
          const text = asText(params.text);
          const message = sent.find((m) => m.chatId === chatId && m.messageId === messageId);
          if (!message) {
            record(method, params, 400);
            return reply(res, 400, {
              ok: false,
              error_code: 400,
              description: 'Bad Request: message to edit not found',
            });
          }
          if (message.text === text) {
            record(method, params, 400);
            return reply(res, 400, {
              ok: false,
              error_code: 400,
              description: 'Bad Request: message is not modified',
            });
          }
          if (text.length === 0 || text.length > 4096) {
            record(method, params, 400);
            return reply(res, 400, { ok: false, error_code: 400, description: 'Bad Request: message text is invalid' });
          }
          message.text = text;
          message.versions.push(text);
          record(method, params, 200);
          return reply(res, 200, { ok: true, result: true });
        }
        default:
          unexpected.push(`method ${method}`);
          record(method, params, 404);
          return reply(res, 404, { ok: false, error_code: 404, description: 'Not Found: method not found' });
      }
    })().catch((err: unknown) => {
      unexpected.push(`crash ${(err as Error).message}`);
      if (!res.headersSent) reply(res, 500, { ok: false, error_code: 500, description: 'fake crashed' });
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}`,
    token,
    bot,
    calls,
    sent,
    unexpected,
    pollOffsets,
    get webhook() {
      return webhook;
    },
    pushText(input) {
      const text = input.text;
      const entities =
        input.entities ??
        (/^\/\w+/.test(text) ? [{ type: 'bot_command', offset: 0, length: /^\/\S+/.exec(text)![0].length }] : []);
      const update: Record<string, unknown> = {
        update_id: nextUpdateId++,
        message: {
          message_id: nextMessageId++,
          date: Math.floor(Date.now() / 1000),
          chat: { id: input.chatId, type: input.chatType ?? 'private' },
          from: { id: input.userId, is_bot: input.isBot ?? false, first_name: `user${input.userId}` },
          text,
          ...(entities.length ? { entities } : {}),
          ...(input.replyToBotMessage !== undefined
            ? {
                reply_to_message: {
                  message_id: input.replyToBotMessage,
                  date: Math.floor(Date.now() / 1000),
                  chat: { id: input.chatId, type: input.chatType ?? 'private' },
                  from: { id: bot.id, is_bot: true, first_name: 'Test', username: bot.username },
                  text: 'earlier',
                },
              }
            : {}),
        },
      };
      queue.push(update);
      wakePolls();
      return update;
    },
    redeliver(update) {
      queue.push(structuredClone(update));
      queue.sort((a, b) => Number(a.update_id) - Number(b.update_id));
      wakePolls();
    },
    fail(method, failure, count = 1) {
      const list = failures.get(method) ?? [];
      for (let i = 0; i < count; i++) list.push(failure);
      failures.set(method, list);
    },
    pending: () => queue.filter((u) => Number(u.update_id) >= confirmed).length,
    confirmedOffset: () => confirmed,
    callsOf: (method) => calls.filter((c) => c.method === method),
    releasePolls: wakePolls,
    clearFailures: () => failures.clear(),
    async close() {
      wakePolls();
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
