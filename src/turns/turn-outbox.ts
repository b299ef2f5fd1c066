/**
 * The event outbox port (DECISIONS §20, ADR 0040): what the message path, tasks, cron and the channels are handed so
 * that a change and the deliveries reporting it commit together. The subscriptions capability implements it; the
 * message path knows only this interface.
 */
import type { Transaction } from 'kysely';
import type { Database } from '../store/index.js';

/** One event to report: its type (`turn.completed`…), when it happened and the resource as the API shows it. */
export interface OutboxEvent {
  type: string;
  timestamp: string;
  data: Record<string, unknown>;
}

/** Where events become deliveries. */
export interface EventOutbox {
  /**
   * True when an enabled subscription wants events of `type`: read from a per-process cache, no statement. A
   * caller writes nothing (and adds no statement to its commit) when no one wants the event.
   */
  wants(type: string): boolean;
  /** Writes one delivery per matching subscription inside the caller's transaction; answers how many. */
  write(trx: Transaction<Database>, events: readonly OutboxEvent[]): Promise<number>;
  /**
   * For a change that has no commit of its own (a channel's state): writes its deliveries in a transaction of
   * their own and wakes the worker. Never rejects; a failure is logged.
   */
  report(events: readonly OutboxEvent[]): Promise<void>;
  /** Called once the commit that wrote deliveries is durable: the delivery worker looks at once. */
  committed(): void;
}
