import { SocketModeClient } from '@slack/socket-mode';
import {
  LogLevel,
  WebAPIHTTPError,
  WebAPIPlatformError,
  WebAPIRateLimitedError,
  WebAPIRequestError,
  WebClient,
  type Logger as SlackLogger,
  type RetryOptions,
} from '@slack/web-api';
import type { Logger } from '../../lib/logger.js';
import {
  PlatformAuthError,
  PlatformRateLimitedError,
  type PlatformEventHandler,
  type PlatformTransport,
  type PostedMessage,
} from '../platform/platform.transport.js';
import { chatIdOf, encodeSlackText, eventOf, SLACK, threadOf, type SlackBot, type SlackThread } from './slack.event.js';

/** Longest text of one message: Slack advises at most 4,000 characters; escaping leaves headroom below it. */
export const SLACK_MAX_MESSAGE = 3500;
/** One `chat.update` a second per message stays well inside Slack's tier limits. */
export const SLACK_EDIT_INTERVAL_MS = 1000;
/** Slack's Web API. */
export const SLACK_API_URL = 'https://slack.com/api/';
/** Event ids remembered as handled, so a retry is acknowledged without being handled again. */
const HANDLED_REMEMBERED = 4096;
/** Threads remembered as the bot's (it posted or was mentioned there). */
const THREADS_REMEMBERED = 4096;
/** Events being handled at once, at most; more are refused now and delivered again by Slack. */
const MAX_IN_FLIGHT = 256;
/** Longest one Web API request may take. */
const REQUEST_TIMEOUT_MS = 30_000;
/** `auth.test` / `apps.connections.open` errors that a retry cannot mend. */
const AUTH_ERRORS = new Set([
  'invalid_auth',
  'not_authed',
  'account_inactive',
  'token_revoked',
  'token_expired',
  'not_allowed_token_type',
  'missing_scope',
]);

/** What the Slack transport is built from (`channels.slack`). */
export interface SlackTransportOptions {
  botToken: string;
  /** App-level token: Socket Mode when set, else events arrive over HTTP (`eventsReceiver`). */
  appToken: string | null;
  /** Web API base URL (`api_url`); null: Slack's. */
  apiUrl: string | null;
  logger: Logger;
}

/** The Slack transport plus what its Events API route needs. */
export interface SlackTransport extends PlatformTransport {
  readonly socketMode: boolean;
  /** Hands one Events API envelope to the running receiver; null while none runs. */
  eventsReceiver(): ((envelope: unknown) => Promise<void>) | null;
}

/** A bounded insertion-ordered set: the oldest entry leaves first. */
class Recent {
  private readonly items = new Set<string>();
  constructor(private readonly limit: number) {}
  has(key: string): boolean {
    return this.items.has(key);
  }
  add(key: string): void {
    this.items.delete(key);
    this.items.add(key);
    if (this.items.size > this.limit) this.items.delete(this.items.values().next().value!);
  }
}

/**
 * An error of a Web API call as text without secrets: the method and
 * Slack's error code or the HTTP status, never a header or a URL.
 */
export function describeSlackError(method: string, err: unknown): string {
  if (err instanceof WebAPIPlatformError) return `slack ${method}: ${err.data.error}`;
  if (err instanceof WebAPIRateLimitedError) return `slack ${method}: rate limited for ${err.retryAfter} s`;
  if (err instanceof WebAPIHTTPError) return `slack ${method}: HTTP ${err.statusCode}`;
  if (err instanceof WebAPIRequestError) return `slack ${method}: network request failed`;
  return `slack ${method}: ${err instanceof Error ? err.message : String(err)}`;
}

/** Maps a Web API failure: 429 → `PlatformRateLimitedError` (`Retry-After`), else an error without secrets. */
function mapError(method: string, err: unknown): Error {
  if (err instanceof WebAPIRateLimitedError) {
    return new PlatformRateLimitedError(Math.max(err.retryAfter, 1) * 1000, describeSlackError(method, err));
  }
  if (err instanceof WebAPIPlatformError && AUTH_ERRORS.has(err.data.error)) {
    return new PlatformAuthError(`slack refused the token (${method}: ${err.data.error})`);
  }
  return new Error(describeSlackError(method, err));
}

/**
 * The SDK's own log lines, at debug level only: our errors carry what
 * matters, and the SDK's lines may quote URLs holding connection tickets.
 */
function sdkLogger(log: Logger): SlackLogger {
  let level = LogLevel.WARN;
  const line = (msg: unknown[]) => log.debug({ sdk: 'slack' }, msg.map((m) => String(m)).join(' '));
  return {
    debug: () => undefined,
    info: () => undefined,
    warn: (...msg: unknown[]) => line(msg),
    error: (...msg: unknown[]) => line(msg),
    setLevel: (next) => void (level = next),
    getLevel: () => level,
    setName: () => undefined,
  };
}

/**
 * A failed request is tried again only after a 5xx (Slack did not take it):
 * a network failure may have posted the message already, and a 429 is the
 * reply stream's to wait out.
 */
const RETRY_SERVER_ERRORS = {
  retries: 2,
  factor: 2,
  minTimeout: 300,
  maxTimeout: 2000,
  onFailedAttempt: (err: unknown) => {
    if (!(err instanceof WebAPIHTTPError && err.statusCode >= 500)) throw err;
  },
} as RetryOptions;

/**
 * Slack through its official clients (DECISIONS §16): `@slack/web-api` for
 * `auth.test`, `chat.postMessage` and `chat.update`; Socket Mode
 * (`@slack/socket-mode`) when an app-level token is set, else the Events API
 * over HTTP through `eventsReceiver()`. Either way each event is handed on
 * and acknowledged only once the handler resolved (durably accepted); a
 * retry of an event (same `event_id`) is acknowledged without a second
 * hand-over, and across restarts it replays by its idempotency key. The
 * SDK's own reconnecting is off: the platform channel owns reconnects.
 */
export function createSlackTransport(options: SlackTransportOptions): SlackTransport {
  const log = options.logger;
  const slackApiUrl = (options.apiUrl ?? SLACK_API_URL).replace(/\/?$/, '/');
  const logger = sdkLogger(log);
  const web = new WebClient(options.botToken, {
    slackApiUrl,
    logger,
    rejectRateLimitedCalls: true,
    retryConfig: RETRY_SERVER_ERRORS,
    timeout: REQUEST_TIMEOUT_MS,
  });
  let bot: SlackBot | null = null;
  let socket: SocketModeClient | null = null;
  let receiver: ((envelope: unknown) => Promise<void>) | null = null;
  const handled = new Recent(HANDLED_REMEMBERED);
  const threads = new Recent(THREADS_REMEMBERED);
  const inFlight = new Map<string, Promise<void>>();

  const context = { inThread: (thread: SlackThread) => threads.has(chatIdOf(thread)) };

  /** Maps and hands on one envelope; a retry joins the delivery in flight or is passed over once handled. */
  const deliver = (envelope: unknown, handle: PlatformEventHandler): Promise<void> => {
    const event = bot ? eventOf(envelope, { bot, ...context }) : null;
    if (!event) return Promise.resolve();
    const id = event.deliveryId;
    if (handled.has(id)) return Promise.resolve();
    const running = inFlight.get(id);
    if (running) return running;
    if (inFlight.size >= MAX_IN_FLIGHT) return Promise.reject(new Error('too many slack events in flight'));
    if (event.chatKind === 'group' && event.addressed) threads.add(event.chatId);
    const run = handle(event)
      .then(() => handled.add(id))
      .finally(() => inFlight.delete(id));
    inFlight.set(id, run);
    return run;
  };

  const dropSocket = async (): Promise<void> => {
    const current = socket;
    socket = null;
    if (current) await current.disconnect().catch(() => undefined);
  };

  /** Opens a Socket Mode connection; resolves once Slack said hello. */
  const openSocket = async (appToken: string, signal: AbortSignal): Promise<void> => {
    const client = new SocketModeClient({
      appToken,
      logger,
      autoReconnectEnabled: false,
      clientOptions: { slackApiUrl, retryConfig: { retries: 0 }, timeout: REQUEST_TIMEOUT_MS },
    });
    const onAbort = () => void client.disconnect().catch(() => undefined);
    signal.addEventListener('abort', onAbort, { once: true });
    try {
      await client.start();
      socket = client;
    } catch (err) {
      await client.disconnect().catch(() => undefined);
      if (err === undefined) throw new Error('slack socket mode: the connection closed before it opened');
      throw mapError('apps.connections.open', err);
    } finally {
      signal.removeEventListener('abort', onAbort);
    }
  };

  /** Runs the Socket Mode connection until `signal` aborts (resolves) or it closes (rejects). */
  const receiveSocket = (client: SocketModeClient, handle: PlatformEventHandler, signal: AbortSignal) =>
    new Promise<void>((resolve, reject) => {
      let queue: Promise<void> = Promise.resolve();
      let queued = 0;
      const onEvent = (message: { ack: () => Promise<void>; type?: string; body?: unknown; retry_num?: number }) => {
        // Only Events API envelopes carry messages; anything else is acknowledged and passed over.
        if (message.type !== 'events_api') return void message.ack().catch(() => undefined);
        if (queued >= MAX_IN_FLIGHT) return; // not acknowledged: Slack delivers it again
        queued++;
        queue = queue
          .then(async () => {
            await deliver(message.body, handle);
            await message.ack();
          })
          .catch((err: unknown) =>
            log.warn(
              { err: err instanceof Error ? err.message : String(err), retry_num: message.retry_num ?? 0 },
              'slack event not accepted now; Slack delivers it again',
            ),
          )
          .finally(() => void queued--);
      };
      const finish = (settle: () => void) => {
        client.off('slack_event', onEvent);
        client.off('disconnected', onClosed);
        signal.removeEventListener('abort', onAbort);
        void queue.then(settle);
      };
      const onClosed = () => finish(() => reject(new Error('slack socket mode connection closed')));
      const onAbort = () => finish(resolve);
      client.on('slack_event', onEvent);
      client.on('disconnected', onClosed);
      if (signal.aborted) onAbort();
      else signal.addEventListener('abort', onAbort, { once: true });
    });

  return {
    platform: SLACK,
    maxMessageLength: SLACK_MAX_MESSAGE,
    minEditIntervalMs: SLACK_EDIT_INTERVAL_MS,
    socketMode: options.appToken !== null,
    async connect(signal) {
      await dropSocket();
      try {
        const me = await web.auth.test();
        if (typeof me.user_id !== 'string') throw new Error('slack auth.test: no bot user id');
        bot = { userId: me.user_id };
      } catch (err) {
        throw mapError('auth.test', err);
      }
      if (options.appToken && !signal.aborted) await openSocket(options.appToken, signal);
    },
    async receive(handle, signal) {
      receiver = (envelope) => deliver(envelope, handle);
      try {
        if (socket) return await receiveSocket(socket, handle, signal);
        await new Promise<void>((resolve) => {
          if (signal.aborted) return resolve();
          signal.addEventListener('abort', () => resolve(), { once: true });
        });
      } finally {
        receiver = null;
      }
    },
    disconnect: dropSocket,
    async send(chatId, text): Promise<PostedMessage> {
      const { channel, threadTs } = threadOf(chatId);
      try {
        const posted = await web.chat.postMessage({
          channel,
          text: encodeSlackText(text),
          ...(threadTs ? { thread_ts: threadTs } : {}),
          unfurl_links: false,
          unfurl_media: false,
        });
        if (typeof posted.ts !== 'string') throw new Error('slack chat.postMessage: no message ts');
        if (threadTs) threads.add(chatId);
        return { messageId: posted.ts };
      } catch (err) {
        throw mapError('chat.postMessage', err);
      }
    },
    async edit(chatId, messageId, text) {
      const { channel } = threadOf(chatId);
      try {
        await web.chat.update({ channel, ts: messageId, text: encodeSlackText(text) });
      } catch (err) {
        throw mapError('chat.update', err);
      }
    },
    eventsReceiver: () => receiver,
  };
}
