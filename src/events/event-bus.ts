/** Live-feed topics a WebSocket client may subscribe to (DECISIONS §8). */
export const TOPICS = ['turns', 'sessions', 'tasks', 'cron', 'skills', 'channels', 'logs'] as const;
export type Topic = (typeof TOPICS)[number];

/** One event on the live feed: `{type: "event", topic, event, data}` on the wire. */
export interface BusEvent {
  topic: Topic;
  event: string;
  data: Record<string, unknown>;
}

export type BusListener = (event: BusEvent) => void;

/**
 * In-process publish/subscribe for the dashboard's live feed. Publishing never
 * throws and never waits: a listener that fails is skipped. Bounded by its
 * listeners (each WebSocket subscription is one, capped by `maxListeners`).
 */
export class EventBus {
  private readonly listeners = new Map<Topic, Set<BusListener>>();
  private count = 0;

  constructor(private readonly maxListeners = 10_000) {}

  /** Delivers an event to every listener of its topic. */
  publish(topic: Topic, event: string, data: Record<string, unknown>): void {
    const set = this.listeners.get(topic);
    if (!set || set.size === 0) return;
    const message: BusEvent = { topic, event, data };
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

  /** True when anyone listens to `topic` (lets publishers skip building payloads). */
  hasListeners(topic: Topic): boolean {
    return (this.listeners.get(topic)?.size ?? 0) > 0;
  }
}
