import type { PlatformEvent } from '../platform/platform.transport.js';

/** The platform name: channel `slack`, identities `slack:<user_id>`, sessions `gateway:slack:<chat id>`. */
export const SLACK = 'slack';

/** The bot as `auth.test` describes it: what a mention is recognised by. */
export interface SlackBot {
  userId: string;
}

/**
 * A Slack conversation and thread, the chat id this channel hands out:
 * `<channel>/<thread ts>` (e.g. `C123/1700000000.000100`). A thread is one
 * conversation (one session), and replies go into it.
 */
export interface SlackThread {
  channel: string;
  threadTs: string;
}

/** The chat id of a thread. */
export function chatIdOf(thread: SlackThread): string {
  return `${thread.channel}/${thread.threadTs}`;
}

/** The thread of a chat id; a bare channel id (no `/`) posts at the top of the channel. */
export function threadOf(chatId: string): { channel: string; threadTs: string | null } {
  const slash = chatId.indexOf('/');
  if (slash === -1) return { channel: chatId, threadTs: null };
  return { channel: chatId.slice(0, slash), threadTs: chatId.slice(slash + 1) };
}

/** Slack escapes `&`, `<` and `>` in message text; everything else is literal. */
export function decodeSlackText(text: string): string {
  return text.replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&');
}

/** Escapes the three characters Slack reads as markup, so a reply shows as written. */
export function encodeSlackText(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/** Removes every `<@BOT>` mention (with an optional `|name`) of the bot. */
function stripMention(text: string, bot: SlackBot): string {
  const escaped = bot.userId.replace(/[^A-Za-z0-9]/g, '');
  return text
    .replace(new RegExp(`<@${escaped}(?:\\|[^>]*)?>`, 'g'), '')
    .replace(/ {2,}/g, ' ')
    .trim();
}

function mentions(text: string, bot: SlackBot): boolean {
  return text.includes(`<@${bot.userId}>`) || text.includes(`<@${bot.userId}|`);
}

const str = (value: unknown): string | null => (typeof value === 'string' && value.length > 0 ? value : null);
const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** What the mapping needs to know beyond the event itself. */
export interface SlackContext {
  bot: SlackBot;
  /** True when the bot already posted in (or was mentioned into) this thread. */
  inThread(thread: SlackThread): boolean;
}

/**
 * Reads one Events API envelope (`event_callback`, over HTTP or Socket Mode)
 * into a platform event (DECISIONS §16), or null when it is not a user's
 * text message: bot messages, message subtypes (edits, deletions, joins,
 * file shares), other event types. The `event_id` is the delivery id.
 *
 * Direct messages (`channel_type: im`) are addressed to the bot. In a
 * channel, an `app_mention` is addressed; a plain `message` is addressed
 * only as a reply in a thread the bot is in, and one that mentions the bot
 * is left to its `app_mention` (Slack sends both), so one message never
 * starts two turns. The chat id is the thread: the message's `thread_ts`,
 * else its own `ts`.
 */
export function eventOf(envelope: unknown, context: SlackContext): PlatformEvent | null {
  if (!isRecord(envelope) || envelope.type !== 'event_callback') return null;
  const deliveryId = str(envelope.event_id);
  const event = envelope.event;
  if (deliveryId === null || !isRecord(event)) return null;
  const type = event.type;
  if (type !== 'message' && type !== 'app_mention') return null;
  if (event.subtype !== undefined || event.bot_id !== undefined || event.bot_profile !== undefined) return null;
  const user = str(event.user);
  const channel = str(event.channel);
  const ts = str(event.ts);
  if (user === null || channel === null || ts === null || typeof event.text !== 'string') return null;
  if (user === context.bot.userId) return null;
  const thread: SlackThread = { channel, threadTs: str(event.thread_ts) ?? ts };
  const raw = event.text;
  const base = { deliveryId, chatId: chatIdOf(thread), userId: user };

  if (type === 'message' && event.channel_type === 'im') {
    return { ...base, chatKind: 'direct', text: decodeSlackText(stripMention(raw, context.bot)), addressed: true };
  }
  if (type === 'app_mention') {
    return { ...base, chatKind: 'group', text: decodeSlackText(stripMention(raw, context.bot)), addressed: true };
  }
  // A channel message: its mention arrives as an app_mention of its own.
  if (mentions(raw, context.bot)) return null;
  const inBotThread =
    str(event.thread_ts) !== null && (event.parent_user_id === context.bot.userId || context.inThread(thread));
  return { ...base, chatKind: 'group', text: decodeSlackText(raw), addressed: inBotThread };
}
