import { describe, expect, it } from 'vitest';
import { EventBus, type BusEvent } from '../../events/index.js';
import { topicBit, topicsOf, WebSocketFeed, type FeedMember } from './websocket.feed.js';

/** A member that records the frames it is handed. */
function member(): FeedMember & { frames: Buffer[]; events: BusEvent[] } {
  const frames: Buffer[] = [];
  const events: BusEvent[] = [];
  return {
    frames,
    events,
    feedEvent(event, frame) {
      events.push(event);
      frames.push(frame());
    },
  };
}

describe('WebSocketFeed', () => {
  it('holds one bus listener per topic however many members, and encodes each event once', () => {
    const bus = new EventBus(1); // room for one listener only
    const feed = new WebSocketFeed(bus);
    const members = Array.from({ length: 100 }, member);
    for (const m of members) feed.add(m, ['turns']);
    expect(feed.size('turns')).toBe(100);
    bus.publish('turns', 'delta', { event_id: 'evt_1', content: 'x' });
    const first = members[0]!.frames[0]!;
    expect(JSON.parse(first.toString('utf8'))).toEqual({
      type: 'event',
      topic: 'turns',
      event: 'delta',
      data: { event_id: 'evt_1', content: 'x' },
    });
    for (const m of members) expect(m.frames).toEqual([first]);
    expect(members.every((m) => m.frames[0] === first)).toBe(true);
  });

  it('refuses a topic the bus has no room for, adding the member to none; leaves the bus when the last goes', () => {
    const bus = new EventBus(1);
    const feed = new WebSocketFeed(bus);
    const a = member();
    feed.add(a, ['turns']);
    expect(() => feed.add(a, ['memory', 'turns'])).toThrow(/too many live-feed subscriptions/);
    expect(feed.size('memory')).toBe(0);
    feed.remove(a, ['turns']);
    expect(bus.hasListeners('turns')).toBe(false);
    feed.add(a, ['memory']);
    expect(bus.hasListeners('memory')).toBe(true);
  });

  it('a member removed while an event is handed out does not keep the others from it', () => {
    const bus = new EventBus();
    const feed = new WebSocketFeed(bus);
    const others = [member(), member()];
    const leaving: FeedMember = { feedEvent: () => feed.remove(leaving, ['tasks']) };
    feed.add(leaving, ['tasks']);
    for (const m of others) feed.add(m, ['tasks']);
    bus.publish('tasks', 'updated', { id: 't1' });
    expect(others.map((m) => m.events.length)).toEqual([1, 1]);
    expect(feed.size('tasks')).toBe(2);
  });

  it('topic masks name their topics', () => {
    expect(topicsOf(topicBit('turns') | topicBit('logs'))).toEqual(['turns', 'logs']);
    expect(topicsOf(0)).toEqual([]);
  });
});
