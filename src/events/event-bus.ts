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
 * handed to `forward`, and other processes' events arrive through `deliver`.
 * Bounded by its listeners (each WebSocket subscription is one, capped by
 * `maxListeners`).
 */
export class EventBus {
  private readonly listeners = new Map<Topic, Set<BusListener>>();
  private count = 0;

  /**
   * @param forward sends this process's events to the other processes (the
   *   cross-process bus's `publishFeed`); absent for the local bus. It must not throw.
   */
  constructor(
    private readonly maxListeners = 10_000,
    private readonly forward: ((event: BusEvent) => void) | null = null,
  ) {}

  /** Delivers an event to every listener of its topic here, and forwards it to the other processes. */
  publish(topic: Topic, event: string, data: Record<string, unknown>): void {
    const message: BusEvent = { topic, event, data };
    this.deliver(message);
    if (this.forward) {
      try {
        this.forward(message);
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
    for (const topic of new Set(topics)) {
      let set = this.listeners.get(topic);
      if (!set) {
        set = new Set();
        this.listeners.set(topic, set);
      }
      set.add(listener);
      added.push(topic);
    }
    this.count++;
    let active = true;
    return () => {
      if (!active) return;
      active = false;
      this.count--;
      for (const topic of added) this.listeners.get(topic)?.delete(listener);
    };
  }

  /**
   * True when anyone may listen to `topic` (lets publishers skip building
   * payloads): a listener here, or — with a shared bus — another process.
   */
  hasListeners(topic: Topic): boolean {
    return this.forward !== null || this.hasLocalListeners(topic);
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
}
