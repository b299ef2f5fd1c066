/**
 * What one chat platform (Telegram, Slack, …) fills in: its connection, its
 * events read into one `PlatformEvent`, and its two outbound calls. Every
 * rule that is the same on every platform (identity, pairing, groups,
 * idempotency, reply streaming, reconnecting, stats) lives in
 * `platform.channel.ts` and is written once.
 */

/** A conversation kind: a direct message, or a group/channel the bot is in. */
export type ChatKind = 'direct' | 'group';

/** One inbound message of a platform, read from its wire format. */
export interface PlatformEvent {
  /**
   * The platform's own id of this delivery (Telegram: the update id): the
   * idempotency key of the message, scoped to the platform and chat. A
   * redelivery carries the same id.
   */
  deliveryId: string;
  chatId: string;
  userId: string;
  chatKind: ChatKind;
  /** The text as written (a group mention of the bot is stripped by the platform). */
  text: string;
  /** In a group: the bot is mentioned, or the message replies to one of the bot's. */
  addressed: boolean;
}

/**
 * Called once per event, in delivery order. Resolves once the event is
 * durably decided (accepted, replayed, or refused for good): only then may
 * the platform commit its position past it. Rejects when it could not be
 * decided now (the store is down, the queue is full): the platform stops
 * and delivers it again after a backoff.
 */
export type PlatformEventHandler = (event: PlatformEvent) => Promise<void>;

/** An outbound call was refused for a while (Telegram 429 `retry_after`, Slack `Retry-After`). */
export class PlatformRateLimitedError extends Error {
  constructor(
    readonly retryAfterMs: number,
    message = 'rate limited by the platform',
  ) {
    super(message);
    this.name = 'PlatformRateLimitedError';
  }
}

/** The connection was refused for good (a wrong token): reconnecting will not help until the config changes. */
export class PlatformAuthError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PlatformAuthError';
  }
}

/** A message the platform posted, to be edited while the reply streams. */
export interface PostedMessage {
  messageId: string;
}

/**
 * One platform's connection. `connect` proves the credentials; `receive`
 * runs the inbound loop until `signal` aborts (resolves) or the connection
 * is lost (rejects: the channel reconnects with backoff). `send` and `edit`
 * throw `PlatformRateLimitedError` when the platform asks to wait. Error
 * messages never carry a secret.
 */
export interface PlatformTransport {
  /** The platform name: the channel name, the identity prefix, the session prefix. */
  readonly platform: string;
  /** Longest text of one message (Telegram 4096): longer replies are split. */
  readonly maxMessageLength: number;
  /** Shortest pause between two edits of one streamed message, in ms. */
  readonly minEditIntervalMs: number;
  connect(signal: AbortSignal): Promise<void>;
  receive(handle: PlatformEventHandler, signal: AbortSignal): Promise<void>;
  /** Leaves the platform (e.g. removes a webhook registration); best effort. */
  disconnect(): Promise<void>;
  send(chatId: string, text: string): Promise<PostedMessage>;
  edit(chatId: string, messageId: string, text: string): Promise<void>;
}
