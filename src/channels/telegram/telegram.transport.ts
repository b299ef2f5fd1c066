import { Api, GrammyError, HttpError } from 'grammy';
import type { Update } from 'grammy/types';
import type { Logger } from '../../lib/logger.js';
import {
  PlatformAuthError,
  PlatformRateLimitedError,
  type PlatformEventHandler,
  type PlatformTransport,
  type PostedMessage,
} from '../platform/platform.transport.js';
import { realWait, type Wait } from '../platform/reply-stream.js';
import { backoffMs } from '../platform/platform.rules.js';
import { botOf, eventOf, TELEGRAM, type TelegramBot } from './telegram.update.js';

/** Telegram's longest message text. */
export const TELEGRAM_MAX_MESSAGE = 4096;
/** One edit a second per chat keeps a streamed reply within Telegram's limits (about one message a second a chat). */
export const TELEGRAM_EDIT_INTERVAL_MS = 1000;
/** Long-poll wait of one `getUpdates`, in seconds. */
export const TELEGRAM_POLL_SECONDS = 30;
/** Updates fetched per `getUpdates`: a bounded batch. */
const POLL_LIMIT = 100;

/** What the Telegram transport is built from (`channels.telegram`). */
export interface TelegramTransportOptions {
  botToken: string;
  mode: 'polling' | 'webhook';
  /** Bot API root (`api_root`); null: Telegram's. */
  apiRoot: string | null;
  logger: Logger;
  wait?: Wait;
  /** Long-poll seconds (tests shorten it). */
  pollSeconds?: number;
}

/**
 * An error of a Bot API call as text without secrets: the method and
 * Telegram's description, never a URL (the token is part of every URL).
 */
export function describeTelegramError(err: unknown): string {
  if (err instanceof GrammyError) return `telegram ${err.method}: ${err.error_code} ${err.description}`;
  if (err instanceof HttpError) return 'telegram: network request failed';
  return err instanceof Error ? err.message : String(err);
}

/** grammY's Node build types signals with its own shim; a standard `AbortSignal` works at run time. */
type GrammySignal = NonNullable<Parameters<Api['getMe']>[0]>;
const grammySignal = (signal: AbortSignal): GrammySignal => signal as unknown as GrammySignal;

/** Maps a Bot API failure: 429 → `PlatformRateLimitedError` (`retry_after`), else an error without secrets. */
function mapError(err: unknown): Error {
  if (err instanceof GrammyError && err.error_code === 429) {
    const seconds = err.parameters.retry_after ?? 1;
    return new PlatformRateLimitedError(seconds * 1000, describeTelegramError(err));
  }
  return new Error(describeTelegramError(err));
}

/** The Telegram transport plus what its webhook route needs. */
export interface TelegramTransport extends PlatformTransport {
  /** Hands one webhook update to the running receiver; null while none runs (webhook mode only). */
  webhookReceiver(): ((update: unknown) => Promise<void>) | null;
  /** The update id the next `getUpdates` starts after (polling), for tests and logs. */
  offset(): number | undefined;
}

/**
 * Telegram over grammY's Bot API client (DECISIONS §16). Polling: one
 * `getUpdates` long poll at a time; each update is handed on in order and
 * the offset moves past it only once the handler resolved (durably
 * accepted), so Telegram confirms, and forgets, only accepted updates: after
 * a crash the rest come again and replay by their update id. A handler
 * that cannot decide now (store down) stops the batch; it is fetched again
 * after a backoff from the same offset. Webhook mode: updates arrive through
 * `webhookReceiver()`, mounted on the webhook server's port.
 */
export function createTelegramTransport(options: TelegramTransportOptions): TelegramTransport {
  const api = new Api(options.botToken, options.apiRoot ? { apiRoot: options.apiRoot } : {});
  const wait = options.wait ?? realWait;
  const pollSeconds = options.pollSeconds ?? TELEGRAM_POLL_SECONDS;
  const log = options.logger;
  let bot: TelegramBot | null = null;
  let offset: number | undefined;
  let receiver: ((update: unknown) => Promise<void>) | null = null;

  const deliverOne = async (update: Update, handle: PlatformEventHandler): Promise<void> => {
    const event = bot ? eventOf(update, bot) : null;
    if (event) await handle(event);
  };

  const poll = async (handle: PlatformEventHandler, signal: AbortSignal): Promise<void> => {
    let stalled = 0;
    while (!signal.aborted) {
      let updates: Update[];
      try {
        updates = await api.getUpdates(
          {
            ...(offset !== undefined ? { offset } : {}),
            timeout: pollSeconds,
            limit: POLL_LIMIT,
            allowed_updates: ['message'],
          },
          grammySignal(signal),
        );
      } catch (err) {
        if (signal.aborted) return;
        const mapped = mapError(err);
        if (mapped instanceof PlatformRateLimitedError) {
          await wait(mapped.retryAfterMs, signal);
          continue;
        }
        throw mapped; // the connection is lost: the channel reconnects with backoff
      }
      for (const update of updates) {
        if (signal.aborted) return;
        try {
          await deliverOne(update, handle);
        } catch (err) {
          stalled++;
          log.warn(
            { update_id: update.update_id, err: describeTelegramError(err), attempts: stalled },
            'update not accepted now; fetched again after a pause',
          );
          await wait(backoffMs(stalled), signal);
          break; // fetch again from the same offset
        }
        stalled = 0;
        offset = update.update_id + 1;
      }
    }
  };

  return {
    platform: TELEGRAM,
    maxMessageLength: TELEGRAM_MAX_MESSAGE,
    minEditIntervalMs: TELEGRAM_EDIT_INTERVAL_MS,
    async connect(signal) {
      try {
        bot = botOf(await api.getMe(grammySignal(signal)));
        // A webhook left registered makes getUpdates fail (409): polling removes it, keeping pending updates.
        if (options.mode === 'polling') await api.deleteWebhook({ drop_pending_updates: false }, grammySignal(signal));
      } catch (err) {
        if (err instanceof GrammyError && (err.error_code === 401 || err.error_code === 404)) {
          throw new PlatformAuthError(`telegram refused the bot token (${err.error_code})`);
        }
        throw mapError(err);
      }
    },
    async receive(handle, signal) {
      if (options.mode === 'polling') return poll(handle, signal);
      receiver = (update) => deliverOne(update as Update, handle);
      try {
        await new Promise<void>((resolve) => {
          if (signal.aborted) return resolve();
          signal.addEventListener('abort', () => resolve(), { once: true });
        });
      } finally {
        receiver = null;
      }
    },
    async disconnect() {
      // Nothing to leave: polling holds no registration, and a webhook stays registered for the next start.
    },
    async send(chatId, text): Promise<PostedMessage> {
      try {
        const sent = await api.sendMessage(chatId, text);
        return { messageId: String(sent.message_id) };
      } catch (err) {
        throw mapError(err);
      }
    },
    async edit(chatId, messageId, text) {
      try {
        await api.editMessageText(chatId, Number(messageId), text);
      } catch (err) {
        // The message already shows this text: nothing to do.
        if (err instanceof GrammyError && err.error_code === 400 && /not modified/i.test(err.description)) return;
        throw mapError(err);
      }
    },
    webhookReceiver: () => receiver,
    offset: () => offset,
  };
}
