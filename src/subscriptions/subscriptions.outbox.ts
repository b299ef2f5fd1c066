import type { Transaction } from 'kysely';
import type { IdGenerator } from '../lib/ids.js';
import type { Logger } from '../lib/logger.js';
import type { Database, Store } from '../store/index.js';
import type { EventOutbox, OutboxEvent } from '../turns/index.js';
import { wantsEvent } from './subscriptions.events.js';
import { insertDeliveries, listSubscriptions, type NewDelivery } from './subscriptions.repo.js';

/** How often the cache of enabled subscriptions is read again (changes made by other gateways). */
export const SUBSCRIPTION_CACHE_REFRESH_MS = 2_000;

/** The body of a delivery: `{type, timestamp, data}`, cut to a note when larger than `maxBytes`. */
export function deliveryBody(event: OutboxEvent, maxBytes: number): string {
  const body = JSON.stringify({ type: event.type, timestamp: event.timestamp, data: event.data });
  if (Buffer.byteLength(body) <= maxBytes) return body;
  const note = { truncated: true, bytes: Buffer.byteLength(body), ...idsOf(event.data) };
  return JSON.stringify({ type: event.type, timestamp: event.timestamp, data: note });
}

/** The identifying fields of a resource, kept when its body is cut. */
function idsOf(data: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const key of ['id', 'event_id', 'session_key', 'name']) if (key in data) out[key] = data[key];
  return out;
}

/**
 * The outbox (ADR 0040): a per-process cache of the enabled subscriptions, so that a change nobody subscribes
 * to costs no statement, and the one insert that writes a change's deliveries inside the change's transaction.
 * The cache is read at start, again after every change made here, and every couple of seconds for changes
 * made by other gateways sharing the database.
 */
export class SubscriptionOutbox implements EventOutbox {
  private subscriptions: Array<{ id: string; events: string[] }> = [];
  /** Subscriptions, enabled or not, at the last read; -1 before it. */
  private total = -1;
  /** False until the first read: every event is wanted then, and `write` reads the subscriptions itself. */
  private loaded = false;
  private wanted = new Set<string>();
  private every = false;
  private refreshing: Promise<void> | null = null;
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly options: {
      store: Store;
      ids: IdGenerator;
      logger: Logger;
      maxBodyBytes: number;
      /** The delivery worker's wake-up. */
      onCommitted: () => void;
    },
  ) {}

  wants(type: string): boolean {
    return !this.loaded || this.every || this.wanted.has(type);
  }

  async write(trx: Transaction<Database>, events: readonly OutboxEvent[]): Promise<number> {
    const rows: NewDelivery[] = [];
    const subscriptions = this.loaded ? this.subscriptions : await listSubscriptions(trx, true);
    for (const event of events) {
      const matching = subscriptions.filter((subscription) => wantsEvent(subscription.events, event.type));
      if (matching.length === 0) continue;
      const body = deliveryBody(event, this.options.maxBodyBytes);
      for (const subscription of matching) {
        const id = this.options.ids.next('msg');
        rows.push({ id, subscriptionId: subscription.id, eventType: event.type, body, now: event.timestamp });
      }
    }
    await insertDeliveries(trx, rows);
    return rows.length;
  }

  async report(events: readonly OutboxEvent[]): Promise<void> {
    try {
      const written = await this.options.store.writer.run((trx) => this.write(trx, events));
      if (written > 0) this.committed();
    } catch (err) {
      this.options.logger.warn({ err: (err as Error).message }, 'an event could not be written for its subscribers');
    }
  }

  committed(): void {
    this.options.onCommitted();
  }

  /** Reads the enabled subscriptions again; concurrent calls share one read. Never rejects. */
  refresh(): Promise<void> {
    this.refreshing ??= listSubscriptions(this.options.store.db)
      .then((all) => {
        this.total = all.length;
        const list = all.filter((subscription) => subscription.enabled);
        this.subscriptions = list.map(({ id, events }) => ({ id, events }));
        const types = new Set(list.flatMap((subscription) => subscription.events));
        this.every = types.has('*');
        this.wanted = types;
        this.loaded = true;
      })
      .catch((err: unknown) => {
        this.options.logger.warn({ err: (err as Error).message }, 'reading the subscriptions failed');
      })
      .finally(() => {
        this.refreshing = null;
      });
    return this.refreshing;
  }

  /** False only when the last read found no subscription at all: no delivery can be pending then. */
  any(): boolean {
    return this.total !== 0;
  }

  /** After a change made here: a read that starts after it (one in flight may have begun before the commit). */
  async reload(): Promise<void> {
    if (this.refreshing) await this.refreshing;
    await this.refresh();
  }

  /** Reads the subscriptions, then again every SUBSCRIPTION_CACHE_REFRESH_MS until `close()`. */
  async start(): Promise<void> {
    await this.refresh();
    this.timer ??= setInterval(() => void this.refresh(), SUBSCRIPTION_CACHE_REFRESH_MS);
    this.timer.unref();
  }

  close(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }
}
