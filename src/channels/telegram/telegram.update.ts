import type { Message, Update, UserFromGetMe } from 'grammy/types';
import type { PlatformEvent } from '../platform/platform.transport.js';

/** The platform name: channel `telegram`, identities `telegram:<user_id>`, sessions `gateway:telegram:<chat_id>`. */
export const TELEGRAM = 'telegram';

/** The bot as `getMe` describes it: what a mention and a reply are recognised by. */
export interface TelegramBot {
  id: number;
  username: string;
}

/** The bot of a `getMe` answer. */
export function botOf(me: UserFromGetMe): TelegramBot {
  return { id: me.id, username: me.username };
}

/** Removes `@bot` after a leading command and every `@bot` mention, case-insensitively. */
function stripMentions(text: string, username: string): string {
  const escaped = username.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return text
    .replace(new RegExp(`^(/[A-Za-z0-9_]+)@${escaped}\\b`, 'i'), '$1')
    .replace(new RegExp(`(^|\\s)@${escaped}\\b`, 'gi'), '$1')
    .trim();
}

/** True when a group message is meant for the bot: it mentions it, commands it by name, or replies to it. */
function addressesBot(message: Message, bot: TelegramBot): boolean {
  if (message.reply_to_message?.from?.id === bot.id) return true;
  const text = message.text ?? '';
  const handle = `@${bot.username}`.toLowerCase();
  for (const entity of message.entities ?? []) {
    const part = text.slice(entity.offset, entity.offset + entity.length).toLowerCase();
    if (entity.type === 'mention' && part === handle) return true;
    if (entity.type === 'bot_command' && part.endsWith(handle)) return true;
    if (entity.type === 'text_mention' && entity.user.id === bot.id) return true;
  }
  return false;
}

/**
 * Reads one Telegram update into a platform event (DECISIONS §16), or null
 * when it is not a text message from a user (edits, channel posts, joins,
 * stickers, other bots): those are passed over. The update id is the
 * delivery id.
 */
export function eventOf(update: Update, bot: TelegramBot): PlatformEvent | null {
  const message = update.message;
  if (!message || typeof message.text !== 'string' || !message.from || message.from.is_bot) return null;
  const type = message.chat.type;
  if (type !== 'private' && type !== 'group' && type !== 'supergroup') return null;
  const group = type !== 'private';
  return {
    deliveryId: String(update.update_id),
    chatId: String(message.chat.id),
    userId: String(message.from.id),
    chatKind: group ? 'group' : 'direct',
    text: group ? stripMentions(message.text, bot.username) : message.text,
    addressed: group ? addressesBot(message, bot) : true,
  };
}
