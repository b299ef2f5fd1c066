import type { Update } from 'grammy/types';
import { describe, expect, it } from 'vitest';
import { eventOf } from './telegram.update.js';

const bot = { id: 42, username: 'gh_bot' };

function message(fields: Record<string, unknown>): Update {
  return {
    update_id: 7,
    message: {
      message_id: 1,
      date: 0,
      chat: { id: 100, type: 'private', first_name: 'a' },
      from: { id: 5, is_bot: false, first_name: 'a' },
      text: 'hi',
      ...fields,
    },
  } as unknown as Update;
}

describe('eventOf', () => {
  it('reads a direct text message, the update id being the delivery id', () => {
    expect(eventOf(message({}), bot)).toEqual({
      deliveryId: '7',
      chatId: '100',
      userId: '5',
      chatKind: 'direct',
      text: 'hi',
      addressed: true,
    });
  });

  it('passes over what is not a user text message', () => {
    expect(eventOf(message({ text: undefined, sticker: {} }), bot)).toBeNull();
    expect(eventOf(message({ from: { id: 9, is_bot: true, first_name: 'b' } }), bot)).toBeNull();
    expect(eventOf({ update_id: 8, edited_message: {} } as unknown as Update, bot)).toBeNull();
    expect(eventOf(message({ chat: { id: -1, type: 'channel', title: 'c' } }), bot)).toBeNull();
  });

  it('in a group: a mention addresses the bot and is stripped; a command names it; a reply to it counts', () => {
    const group = { id: -100, type: 'supergroup', title: 'g' };
    const mention = eventOf(
      message({ chat: group, text: '@gh_bot what now', entities: [{ type: 'mention', offset: 0, length: 7 }] }),
      bot,
    );
    expect(mention).toMatchObject({ chatKind: 'group', addressed: true, text: 'what now' });
    const command = eventOf(
      message({ chat: group, text: '/status@gh_bot', entities: [{ type: 'bot_command', offset: 0, length: 14 }] }),
      bot,
    );
    expect(command).toMatchObject({ addressed: true, text: '/status' });
    const reply = eventOf(
      message({ chat: group, text: 'and then?', reply_to_message: { message_id: 3, from: { id: 42, is_bot: true } } }),
      bot,
    );
    expect(reply).toMatchObject({ addressed: true });
    const chatter = eventOf(message({ chat: group, text: 'talking to @someone_else' }), bot);
    expect(chatter).toMatchObject({ addressed: false });
  });
});
