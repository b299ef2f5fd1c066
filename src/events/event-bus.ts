/**
 * Live-feed topics a WebSocket client may subscribe to: DECISIONS §8's seven, plus `memory`, `knowledge`,
 * `config` and `subscriptions`, so every list of the dashboard updates without polling (ADR 0022); the
 * `subscriptions` topic also tells the other gateways to read the subscriptions again (ADR 0040).
 */
export const TOPICS = [
  'turns',
  'sessions',
  'tasks',
  'cron',
  'skills',
  'channels',
  'logs',
  'memory',
  'knowledge',
  'config',
  'subscriptions',
] as const;
export type Topic = (typeof TOPICS)[number];

/** One event on the live feed: `{type: "event", topic, event, data}` on the wire. */
export interface BusEvent {
  topic: Topic;
  event: string;
  data: Record<string, unknown>;
}

export type BusListener = (event: BusEvent) => void;

/** This process's live feed as the cross-process bus sees it. */
export interface LocalFeed {
  /** The topics with a listener here. */
  localTopics(): Topic[];
  hasLocalListeners(topic: Topic): boolean;
}

/** The cross-process side of the live feed (the `ClusterBus`, ADR 0025 and 0046). Nothing of it throws. */
export interface FeedForward {
  /** Sends an event of this process to the other processes that listen to its topic. */
  publishFeed(event: BusEvent): void;
  /** True when another process listens to `topic`, as far as this one has heard. */
  listensElsewhere(topic: Topic): boolean;
  /** Told once: the feed whose topics the other processes hear of. */
  watchLocalFeed(feed: LocalFeed): void;
  /** A topic got its first listener here. */
  localTopicsGained(): void;
}

/** The `turns` topic's event for one turn event (`{event_id, seq, …data}`), of this process or another. */
export function turnsTopicEvent(event: {
  eventId: string;
  seq: number;
  type: string;
  data: Record<string, unknown>;
}): BusEvent {
  return { topic: 'turns', event: event.type, data: { event_id: event.eventId, seq: event.seq, ...event.data } };
}

/**
 * Publish/subscribe for the dashboard's live feed. Publishing never throws
 * and never waits: a listener that fails is skipped. Delivery in this process
 * is direct and synchronous; with a shared bus (ADR 0025) each event is also
 * handed to `forward` (which sends it where another process listens to its
 * topic, ADR 0046), and other processes' events arrive through `deliver`.
 * Bounded by its listeners (each WebSocket subscription is one, capped by
 * `maxListeners`).
 */
export class EventBus implements LocalFeed {
  private readonly listeners = new Map<Topic, Set<BusListener>>();
  private count = 0;

  /**
   * @param forward sends this process's events to the other processes that listen (the cross-process bus);
   *   absent for the local bus.
   */
  constructor(
    private readonly maxListeners = 10_000,
    private readonly forward: FeedForward | null = null,
  ) {
    forward?.watchLocalFeed(this);
  }

  /** Delivers an event to every listener of its topic here, and forwards it to the other processes. */
  publish(topic: Topic, event: string, data: Record<string, unknown>): void {
    const message: BusEvent = { topic, event, data };
    this.deliver(message);
    if (this.forward) {
      try {
        this.forward.publishFeed(message);
      } catch {
        /* the bus counts its own failures; the publisher is never affected */
      }
    }
  }

  /** Delivers an event to this process's listeners only: another process's event, or one no other process needs. */
  deliver(message: BusEvent): void {
    const set = this.listeners.get(message.topic);
    if (!set || set.size === 0) return;
    for (const listener of set) {
      try {
        listener(message);
      } catch {
        /* a broken listener must not affect the publisher */
      }
    }
  }

  /** Subscribes to topics; returns the unsubscribe function. Throws when the listener cap is reached. */
  subscribe(topics: readonly Topic[], listener: BusListener): () => void {
    if (this.count >= this.maxListeners) throw new Error('too many live-feed subscriptions');
    const added: Topic[] = [];
    let gained = false;
    for (const topic of new Set(topics)) {
      let set = this.listeners.get(topic);
      if (!set) {
        set = new Set();
        this.listeners.set(topic, set);
      }
      gained ||= set.size === 0;
      set.add(listener);
      added.push(topic);
    }
    this.count++;
    if (gained) this.forward?.localTopicsGained();
    let active = true;
    return () => {
      if (!active) return;
      active = false;
      this.count--;
      for (const topic of added) this.listeners.get(topic)?.delete(listener);
    };
  }

  /**
   * True when anyone listens to `topic` (lets publishers skip building
   * payloads): a listener here, or another process that told it listens.
   */
  hasListeners(topic: Topic): boolean {
    return this.hasLocalListeners(topic) || (this.forward?.listensElsewhere(topic) ?? false);
  }

  /** `topic`'s side of the bus for one resource's writes (http's `publishWrites`). */
  publisher(topic: Topic): { hasListeners(): boolean; publish(event: string, data: Record<string, unknown>): void } {
    return {
      hasListeners: () => this.hasListeners(topic),
      publish: (event, data) => this.publish(topic, event, data),
    };
  }

  /** True when a listener of `topic` is in this process. */
  hasLocalListeners(topic: Topic): boolean {
    return (this.listeners.get(topic)?.size ?? 0) > 0;
  }

  /** The topics with a listener in this process. */
  localTopics(): Topic[] {
    return TOPICS.filter((topic) => this.hasLocalListeners(topic));
  }
}
