import type { Clock } from '../lib/clock.js';
import { isoTime } from '../lib/clock.js';
import type { Logger } from '../lib/logger.js';
import type { Transaction } from 'kysely';
import type { Database, Store } from '../store/index.js';
import { lastTurnEventSeq, listTurnEvents } from './turn-events.repo.js';
import { turnPathFor, type TurnPath } from './turn-path.js';

/** Event names of a turn's stream (DECISIONS §5). */
export type TurnEventType = 'delta' | 'tool_call' | 'tool_result' | 'status' | 'done' | 'error';

/** One event of a turn, numbered from 1 per turn. */
export interface TurnEvent {
  eventId: string;
  seq: number;
  type: TurnEventType;
  data: Record<string, unknown>;
}

/** An event as stored (`turn_events`). */
interface StoredEvent {
  eventId: string;
  seq: number;
  type: string;
  data: unknown;
  now: string;
}

export type TurnEventListener = (event: TurnEvent) => void;

/** Also told of every event of every turn (WebSocket `turns` topic, cross-process bus). */
export type TurnEventTap = (event: TurnEvent) => void;

/**
 * The in-process stream of turn events: numbers each event, persists it
 * (group commit) so `GET /turns/{id}/events` can replay it later, and fans
 * it out to live listeners. Memory is bounded by the turns in flight and
 * their listeners; a turn's counter is dropped when the turn ends.
 *
 * Events are delivered before they are stored and are stored without waiting
 * for durability (a streamed delta is never held behind a commit); the turn's
 * own commits — the claim, the outcome — carry its first and last events and
 * make everything before them durable.
 */
export class TurnEventHub {
  private readonly next = new Map<string, number>();
  private readonly listeners = new Map<string, Set<TurnEventListener>>();
  private readonly taps = new Set<TurnEventTap>();
  /** Told of this process's events once stored, in order (the cross-process bus, ADR 0025). */
  private readonly relays = new Set<TurnEventTap>();
  private relayed: Promise<void> = Promise.resolve();
  private pendingWrites = new Set<Promise<unknown>>();
  /** The write that events published now join: queued in the writer, not yet started. */
  private filling: { rows: StoredEvent[]; written: Promise<void> } | null = null;
  /** Events not persisted since the last one that was (an outage is logged once, not per event). */
  private unpersisted = 0;

  /** Where events are stored: the store's turn path (a hub built on its own chooses it from the store). */
  private readonly path: TurnPath;

  constructor(
    private readonly options: {
      store: Store;
      path?: TurnPath;
      clock: Clock;
      logger: Logger;
      maxListenersPerTurn?: number;
    },
  ) {
    this.path = options.path ?? turnPathFor(options.store);
  }

  /**
   * Prepares numbering for a turn that starts or resumes running (continues
   * after persisted events). `fresh`: a turn just claimed from `accepted` has
   * no events yet, so no read is needed.
   */
  async open(eventId: string, options: { fresh?: boolean } = {}): Promise<void> {
    if (this.next.has(eventId)) return;
    if (options.fresh) {
      this.next.set(eventId, 1);
      return;
    }
    const last = await lastTurnEventSeq(this.options.store.db, eventId);
    if (!this.next.has(eventId)) this.next.set(eventId, last + 1);
  }

  /** Forgets a turn's counter once it has ended or paused. */
  release(eventId: string): void {
    this.next.delete(eventId);
  }

  /** The number the turn's next event gets (for a caller that stores it in its own transaction). */
  nextSeq(eventId: string): number {
    return this.next.get(eventId) ?? 1;
  }

  /**
   * Numbers, persists and delivers one event. Listener errors never reach the
   * publisher. `stored`: the caller already stored it, numbered `nextSeq`, in
   * a transaction of its own that has committed; it is only delivered.
   */
  publish(
    eventId: string,
    type: TurnEventType,
    data: Record<string, unknown>,
    options: { stored?: boolean } = {},
  ): TurnEvent {
    const seq = this.next.get(eventId) ?? 1;
    this.next.set(eventId, seq + 1);
    const event: TurnEvent = { eventId, seq, type, data };
    const written = options.stored ? null : this.persist(event);
    this.deliver(event);
    if (this.relays.size > 0) this.relayOnceStored(event, written);
    return event;
  }

  /**
   * Stores an event through the writer (committed, not awaited for
   * durability). Events published while a write waits for its batch join
   * it: one op, and on PostgreSQL one statement, stores them all. A failure
   * is logged once per streak.
   */
  private persist(event: TurnEvent): Promise<unknown> {
    const { eventId, seq, type, data } = event;
    const row = { eventId, seq, type, data, now: isoTime(this.options.clock.now()) };
    if (this.filling) {
      this.filling.rows.push(row);
      return this.filling.written;
    }
    const rows = [row];
    const { store } = this.options;
    const op = async (trx: Transaction<Database>): Promise<void> => {
      // From its first run on, later events start a write of their own (a re-run stores the same rows).
      if (this.filling?.rows === rows) this.filling = null;
      await this.path.appendEvents(trx, rows);
    };
    const write: Promise<void> = store.writer.run(op, { durable: false }).then(
      () => {
        if (this.unpersisted === 0) return;
        this.options.logger.info({ source: 'turns', lost: this.unpersisted }, 'turn events are persisted again');
        this.unpersisted = 0;
      },
      (err: unknown) => {
        // Live followers still get them; a replay will miss them. Logged once per streak of failures.
        const before = this.unpersisted;
        this.unpersisted += rows.length;
        if (before > 0) return;
        this.options.logger.warn(
          { source: 'turns', event_id: rows[0]!.eventId, events: rows.length, err: (err as Error).message },
          'turn events not persisted',
        );
      },
    );
    const tracked = write.finally(() => {
      this.pendingWrites.delete(tracked);
      if (this.filling?.rows === rows) this.filling = null;
    });
    this.pendingWrites.add(tracked);
    this.filling = { rows, written: tracked };
    return tracked;
  }

  /**
   * Relays an event once its write settled (`written`; null: the caller's
   * transaction stored it), after every event published before it: another
   * process that reads the store after hearing of an event finds it there.
   */
  private relayOnceStored(event: TurnEvent, written: Promise<unknown> | null): void {
    const relay = (): void => {
      for (const listener of this.relays) {
        try {
          listener(event);
        } catch {
          /* the bus must not break the turn */
        }
      }
    };
    this.relayed = (written ? Promise.all([this.relayed, written]) : this.relayed).then(relay, relay);
  }

  /**
   * Delivers an event another process published (and stored there, ADR
   * 0025) to this turn's live listeners here: not numbered, stored or tapped.
   */
  deliverRemote(event: TurnEvent): void {
    for (const listener of this.listeners.get(event.eventId) ?? []) {
      try {
        listener(event);
      } catch (err) {
        this.options.logger.warn({ source: 'turns', err: (err as Error).message }, 'turn event listener failed');
      }
    }
  }

  /** Told of every event of this process once it is stored (or its write failed), in publish order. */
  relay(listener: TurnEventTap): () => void {
    this.relays.add(listener);
    return () => this.relays.delete(listener);
  }

  private deliver(event: TurnEvent): void {
    const { eventId } = event;
    for (const listener of this.listeners.get(eventId) ?? []) {
      try {
        listener(event);
      } catch (err) {
        this.options.logger.warn({ source: 'turns', err: (err as Error).message }, 'turn event listener failed');
      }
    }
    for (const tap of this.taps) {
      try {
        tap(event);
      } catch {
        /* a tap must not break the turn */
      }
    }
  }

  /** True when the turn has a live listener here. */
  hasListeners(eventId: string): boolean {
    return (this.listeners.get(eventId)?.size ?? 0) > 0;
  }

  /** Listens to one turn's live events; returns the unsubscribe function. */
  subscribe(eventId: string, listener: TurnEventListener): () => void {
    let set = this.listeners.get(eventId);
    if (!set) {
      set = new Set();
      this.listeners.set(eventId, set);
    }
    if (set.size >= (this.options.maxListenersPerTurn ?? 1000)) {
      throw new Error('too many listeners for this turn');
    }
    set.add(listener);
    return () => {
      set.delete(listener);
      if (set.size === 0 && this.listeners.get(eventId) === set) this.listeners.delete(eventId);
    };
  }

  /** Listens to every turn's events. */
  tap(listener: TurnEventTap): () => void {
    this.taps.add(listener);
    return () => this.taps.delete(listener);
  }

  /** Persisted events of a turn after `afterSeq`, oldest first. */
  async replay(eventId: string, afterSeq: number, limit = 10_000): Promise<TurnEvent[]> {
    const rows = await listTurnEvents(this.options.store.db, eventId, afterSeq, limit);
    return rows.map((row) => ({
      eventId,
      seq: row.seq,
      type: row.type as TurnEventType,
      data: row.data as Record<string, unknown>,
    }));
  }

  /** Waits until every event published so far is stored (committed; shutdown, tests, followers before a replay). */
  async flush(): Promise<void> {
    while (this.pendingWrites.size > 0) await Promise.all([...this.pendingWrites]);
  }

  /** Live listener count (health, tests). */
  listenerCount(): number {
    let n = 0;
    for (const set of this.listeners.values()) n += set.size;
    return n;
  }
}
