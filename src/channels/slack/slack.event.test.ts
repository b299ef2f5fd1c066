import { describe, expect, it } from 'vitest';
import { chatIdOf, decodeSlackText, encodeSlackText, eventOf, threadOf } from './slack.event.js';

const bot = { userId: 'UBOT' };
const none = { bot, inThread: () => false };

function envelope(event: Record<string, unknown>, eventId = 'Ev1') {
  return { type: 'event_callback', event_id: eventId, team_id: 'T1', event };
}
const dm = (extra: Record<string, unknown> = {}) =>
  envelope({
    type: 'message',
    channel_type: 'im',
    channel: 'D1',
    user: 'U1',
    text: 'hi &amp; &lt;b&gt;',
    ts: '1.000100',
    ...extra,
  });

describe('slack events → platform events', () => {
  it('reads a direct message: identity, thread chat id, decoded text, event_id as delivery id', () => {
    expect(eventOf(dm(), none)).toEqual({
      deliveryId: 'Ev1',
      chatId: 'D1/1.000100',
      userId: 'U1',
      chatKind: 'direct',
      text: 'hi & <b>',
      addressed: true,
    });
    // A reply in a thread stays in that thread (one conversation).
    expect(eventOf(dm({ thread_ts: '0.5', ts: '2.0' }), none)?.chatId).toBe('D1/0.5');
  });

  it('passes over bot messages, subtypes (edits, joins), other events and malformed envelopes', () => {
    expect(eventOf(dm({ bot_id: 'B1' }), none)).toBeNull();
    expect(eventOf(dm({ subtype: 'message_changed' }), none)).toBeNull();
    expect(eventOf(dm({ subtype: 'channel_join' }), none)).toBeNull();
    expect(eventOf(dm({ user: 'UBOT' }), none)).toBeNull();
    expect(eventOf(dm({ text: undefined }), none)).toBeNull();
    expect(eventOf(envelope({ type: 'reaction_added', user: 'U1' }), none)).toBeNull();
    expect(eventOf({ type: 'url_verification', challenge: 'x' }, none)).toBeNull();
    expect(eventOf({ ...dm(), event_id: '' }, none)).toBeNull();
    expect(eventOf(null, none)).toBeNull();
  });

  it('reads an app mention in a channel as addressed, the mention removed, replying in its thread', () => {
    const mention = envelope({
      type: 'app_mention',
      channel: 'C1',
      user: 'U1',
      text: '<@UBOT> what time is it?',
      ts: '5.5',
    });
    expect(eventOf(mention, none)).toEqual({
      deliveryId: 'Ev1',
      chatId: 'C1/5.5',
      userId: 'U1',
      chatKind: 'group',
      text: 'what time is it?',
      addressed: true,
    });
  });

  it('in a channel: a plain message is not addressed; a thread reply is when the bot is in the thread', () => {
    const plain = envelope({
      type: 'message',
      channel_type: 'channel',
      channel: 'C1',
      user: 'U1',
      text: 'hello',
      ts: '6.0',
    });
    expect(eventOf(plain, none)).toMatchObject({ chatKind: 'group', addressed: false });
    const reply = envelope({
      type: 'message',
      channel_type: 'channel',
      channel: 'C1',
      user: 'U1',
      text: 'and then?',
      ts: '7.0',
      thread_ts: '5.5',
    });
    expect(eventOf(reply, none)).toMatchObject({ addressed: false, chatId: 'C1/5.5' });
    expect(eventOf(reply, { bot, inThread: (t) => chatIdOf(t) === 'C1/5.5' })).toMatchObject({ addressed: true });
    const underBot = envelope({ ...(reply.event as object), parent_user_id: 'UBOT' });
    expect(eventOf(underBot, none)).toMatchObject({ addressed: true });
    // The message event of a mention is left to its app_mention: one message, one turn.
    const mentioned = envelope({ ...(reply.event as object), text: 'hey <@UBOT>' });
    expect(eventOf(mentioned, { bot, inThread: () => true })).toBeNull();
  });

  it('chat ids carry the thread; text is escaped for Slack and read back', () => {
    expect(threadOf('C1/1700000000.000100')).toEqual({ channel: 'C1', threadTs: '1700000000.000100' });
    expect(threadOf('C1')).toEqual({ channel: 'C1', threadTs: null });
    expect(encodeSlackText('a < b && c > d')).toBe('a &lt; b &amp;&amp; c &gt; d');
    expect(decodeSlackText(encodeSlackText('<@U1> & co'))).toBe('<@U1> & co');
  });
});
