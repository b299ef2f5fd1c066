import { TOPICS, type BusEvent, type EventBus, type Topic } from '../../events/index.js';

/** A receiver of the live feed: one WebSocket connection. */
export interface FeedMember {
  /**
   * One event of a topic the member is in. `frame()` is the `{type: "event", …}` frame, encoded once for
   * every member (the first to ask encodes it).
   */
  feedEvent(event: BusEvent, frame: () => Buffer): void;
}

/** A set of topics as bits (`topicBit`): what one connection receives, kept as a number. */
export type TopicMask = number;

/** The bit of `topic` in a `TopicMask`. */
export function topicBit(topic: Topic): TopicMask {
  return 1 << TOPICS.indexOf(topic);
}

/** The topics of `mask`, in `TOPICS` order. */
export function topicsOf(mask: TopicMask): Topic[] {
  return TOPICS.filter((topic) => (mask & topicBit(topic)) !== 0);
}

/**
 * The WebSocket side of the live feed (DECISIONS §8): one bus listener per
 * topic, whatever the number of connections, each event encoded once and
 * handed to every member of its topic. A connection costs a set entry per
 * topic, not a listener and its closures; the bus's listener cap is not
 * spent on connections (the channel's connection cap bounds them).
 */
export class WebSocketFeed {
  private readonly members = new Map<Topic, Set<FeedMember>>();
  private readonly unsubscribes = new Map<Topic, () => void>();

  constructor(private readonly bus: Pick<EventBus, 'subscribe'>) {}

  /**
   * Adds `member` to `topics`. Throws (and adds it to none of them) when the
   * bus refuses a listener for a topic nobody here listened to yet.
   */
  add(member: FeedMember, topics: readonly Topic[]): void {
    const opened: Topic[] = [];
    try {
      for (const topic of topics) {
        if (this.unsubscribes.has(topic)) continue;
        this.unsubscribes.set(
          topic,
          this.bus.subscribe([topic], (event) => this.deliver(event)),
        );
        opened.push(topic);
      }
    } catch (err) {
      for (const topic of opened) this.release(topic);
      throw err;
    }
    for (const topic of topics) {
      let set = this.members.get(topic);
      if (!set) {
        set = new Set();
        this.members.set(topic, set);
      }
      set.add(member);
    }
  }

  /** Removes `member` from `topics`; a topic nobody here listens to any more leaves the bus. */
  remove(member: FeedMember, topics: readonly Topic[]): void {
    for (const topic of topics) {
      const set = this.members.get(topic);
      if (!set) continue;
      set.delete(member);
      if (set.size === 0) this.release(topic);
    }
  }

  /** Members of `topic` (tests, stats). */
  size(topic: Topic): number {
    return this.members.get(topic)?.size ?? 0;
  }

  private release(topic: Topic): void {
    this.members.delete(topic);
    const unsubscribe = this.unsubscribes.get(topic);
    this.unsubscribes.delete(topic);
    unsubscribe?.();
  }

  private deliver(event: BusEvent): void {
    const set = this.members.get(event.topic);
    if (!set) return;
    let encoded: Buffer | null = null;
    const frame = (): Buffer =>
      (encoded ??= Buffer.from(
        JSON.stringify({ type: 'event', topic: event.topic, event: event.event, data: event.data }),
      ));
    // A member closed while this runs (too slow: 1013) leaves the set; iteration goes on with the rest.
    for (const member of set) {
      try {
        member.feedEvent(event, frame);
      } catch {
        /* one member's failure must not keep the event from the others */
      }
    }
  }
}
