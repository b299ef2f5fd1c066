import { randomBytes } from 'node:crypto';
import { levelRank, matchesFilter, parseLogLine, type LogEntry, type LogFilter } from './log-entry.js';
import type { LogSink } from './logger.js';

/**
 * Called with each new entry, synchronously, as it is logged; `seq` numbers
 * the entries of this buffer from 1 (see `LogBuffer.run`).
 */
export type LogListener = (entry: LogEntry, time: number, seq: number) => void;

/** One kept entry with its number in the buffer's run. */
export interface NumberedLogEntry {
  seq: number;
  /** Epoch ms of its timestamp. */
  time: number;
  entry: LogEntry;
}

/** One page of buffered entries, newest first. */
export interface LogBufferPage {
  items: LogEntry[];
  /** Every buffered entry that matches the filter (not only this page). */
  total: number;
}

/** The oldest buffered moment: where the daily files take over (see `queryLogs`). */
export interface LogBufferOldest {
  /** Epoch ms of the oldest buffered entry. */
  time: number;
  /** How many buffered entries carry exactly that time (the files hold them too). */
  count: number;
}

/** Counters of a `LogBuffer`. */
export interface LogBufferStats {
  capacity: number;
  /** Entries held now (≤ capacity). */
  size: number;
  /** Entries stored since start, overwritten ones included. */
  stored: number;
  /** Lines that were not a log entry (not JSON, no timestamp or level) and were skipped. */
  unparsed: number;
  /** Live listeners (SSE followers, the event bus). */
  listeners: number;
}

/** Options of `LogBuffer`. */
export interface LogBufferOptions {
  /** Live listeners at most; `subscribe` throws `TooManyLogListenersError` beyond. Default 1000. */
  maxListeners?: number;
  /** Longer lines are stored shortened (see `parseLogLine`). Default `MAX_ENTRY_CHARS`. */
  maxEntryChars?: number;
  /** Names this run of the buffer in entry ids (`run`); default 8 random hex digits. */
  run?: string;
}

/** `LogBuffer.subscribe` refused: the listener cap is reached. */
export class TooManyLogListenersError extends Error {
  constructor(max: number) {
    super(`too many log followers (${max})`);
    this.name = 'TooManyLogListenersError';
  }
}

/**
 * The in-memory log ring (DECISIONS §9: `logs.buffer_entries`). A `LogSink`:
 * each JSON line the logger writes becomes one `LogEntry`; the newest
 * `capacity` entries are kept in slots allocated up front, the oldest
 * overwritten. Times and level ranks sit in typed arrays beside the entries
 * so filtering never touches the entry objects of non-matching slots.
 *
 * Listeners get each entry synchronously after it is stored. An entry logged
 * by a listener while it runs (a feedback loop) is stored but not delivered.
 */
export class LogBuffer implements LogSink {
  /** Maximum number of entries held. */
  readonly capacity: number;
  /**
   * Names this run of the process: entry numbers start at 1 with each new
   * buffer, so an entry's id (`<run>-<seq>`) tells which run it came from.
   */
  readonly run: string;
  private readonly entries: (LogEntry | undefined)[];
  private readonly times: Float64Array;
  private readonly seqs: Float64Array;
  private readonly ranks: Uint8Array;
  private readonly listeners = new Set<LogListener>();
  private readonly maxListeners: number;
  private readonly maxEntryChars: number | undefined;
  /** Slot the next entry goes to. */
  private next = 0;
  private size = 0;
  private stored = 0;
  private unparsed = 0;
  private dispatching = false;

  constructor(capacity: number, options: LogBufferOptions = {}) {
    if (!Number.isInteger(capacity) || capacity < 1)
      throw new RangeError('log buffer capacity must be a positive integer');
    this.capacity = capacity;
    this.entries = new Array<LogEntry | undefined>(capacity).fill(undefined);
    this.times = new Float64Array(capacity);
    this.seqs = new Float64Array(capacity);
    this.run = options.run ?? randomBytes(4).toString('hex');
    this.ranks = new Uint8Array(capacity);
    this.maxListeners = options.maxListeners ?? 1000;
    this.maxEntryChars = options.maxEntryChars;
  }

  /** Sink entry point: parses one logger line and stores it. Never throws. */
  write(line: string): void {
    const parsed = parseLogLine(line, this.maxEntryChars);
    if (!parsed) {
      this.unparsed += 1;
      return;
    }
    this.push(parsed.entry, parsed.time);
  }

  /** Stores an already parsed entry (`time` = epoch ms of its timestamp) and tells the listeners. */
  push(entry: LogEntry, time: number): void {
    const slot = this.next;
    this.entries[slot] = entry;
    this.times[slot] = time;
    this.ranks[slot] = levelRank(entry.level);
    this.next = (slot + 1) % this.capacity;
    if (this.size < this.capacity) this.size += 1;
    this.stored += 1;
    const seq = this.stored;
    this.seqs[slot] = seq;
    if (this.listeners.size === 0 || this.dispatching) return;
    this.dispatching = true;
    try {
      for (const listener of this.listeners) {
        try {
          listener(entry, time, seq);
        } catch {
          // a failing listener must not break logging
        }
      }
    } finally {
      this.dispatching = false;
    }
  }

  /**
   * Matching entries, newest first: skips `offset` matches, returns up to
   * `limit`, and counts every match in `total`. O(size).
   */
  query(filter: LogFilter, page: { limit: number; offset: number }): LogBufferPage {
    const items: LogEntry[] = [];
    const end = page.offset + page.limit;
    let total = 0;
    for (let i = 0; i < this.size; i++) {
      const slot = (this.next - 1 - i + this.capacity) % this.capacity;
      const entry = this.entries[slot];
      if (!entry) continue;
      if (!matchesFilter(this.times[slot]!, this.ranks[slot]!, entry.source, filter)) continue;
      if (total >= page.offset && total < end) items.push(entry);
      total += 1;
    }
    return { items, total };
  }

  /**
   * Kept entries numbered after `afterSeq` that match `filter`, oldest first
   * (a follower resuming). Entries already overwritten are gone: an
   * `afterSeq` older than the oldest kept entry yields every kept match. O(size).
   */
  after(afterSeq: number, filter: LogFilter): NumberedLogEntry[] {
    const out: NumberedLogEntry[] = [];
    const first = (this.next - this.size + this.capacity) % this.capacity;
    for (let i = 0; i < this.size; i++) {
      const slot = (first + i) % this.capacity;
      const entry = this.entries[slot];
      const seq = this.seqs[slot]!;
      if (!entry || seq <= afterSeq) continue;
      if (!matchesFilter(this.times[slot]!, this.ranks[slot]!, entry.source, filter)) continue;
      out.push({ seq, time: this.times[slot]!, entry });
    }
    return out;
  }

  /** The oldest buffered time and how many entries share it; null when empty. */
  oldest(): LogBufferOldest | null {
    if (this.size === 0) return null;
    const first = (this.next - this.size + this.capacity) % this.capacity;
    const time = this.times[first]!;
    let count = 0;
    for (let i = 0; i < this.size; i++) {
      if (this.times[(first + i) % this.capacity] !== time) break;
      count += 1;
    }
    return { time, count };
  }

  /**
   * Adds a live listener; returns its unsubscribe function (idempotent).
   * Throws `TooManyLogListenersError` when `maxListeners` are attached.
   */
  subscribe(listener: LogListener): () => void {
    if (this.listeners.size >= this.maxListeners) throw new TooManyLogListenersError(this.maxListeners);
    // A wrapper makes every subscription distinct, even for the same function.
    const own: LogListener = (entry, time, seq) => listener(entry, time, seq);
    this.listeners.add(own);
    return () => {
      this.listeners.delete(own);
    };
  }

  /** Counters so far. */
  stats(): LogBufferStats {
    return {
      capacity: this.capacity,
      size: this.size,
      stored: this.stored,
      unparsed: this.unparsed,
      listeners: this.listeners.size,
    };
  }
}
