import type { ContextEntry } from '../sessions/index.js';

/**
 * The model's context window of recently active sessions, kept in memory so a
 * turn does not read (and parse) up to `limit` stored messages before every
 * model call — the largest read of a turn. Used only where this process is the
 * database's one writer (SQLite: `Store.shared` false); with a shared
 * PostgreSQL every turn reads the store.
 *
 * Correct because, in that case, every message of a session's context epoch is
 * written by this process's turn runner, one turn of a session at a time: the
 * runner appends what it stored once its commit succeeded (`append`), and
 * forgets a session (`forget`) whenever it cannot tell what was stored — a
 * failed or unconfirmed commit, a chat command. A new context epoch (`/new`, a
 * deleted and revived session) is a new key, so deleting a session needs no
 * notice here. Bounded: `maxSessions` sessions, the least recently used go.
 */
export class ContextCache {
  readonly #entries = new Map<string, { epoch: number; messages: ContextEntry[] }>();

  constructor(
    private readonly limit: number,
    private readonly maxSessions = 256,
  ) {}

  /** The cached window of the session's `epoch`, oldest first (a copy), or undefined. */
  get(sessionKey: string, epoch: number): ContextEntry[] | undefined {
    const entry = this.#entries.get(sessionKey);
    if (!entry || entry.epoch !== epoch) return undefined;
    this.#entries.delete(sessionKey);
    this.#entries.set(sessionKey, entry);
    return [...entry.messages];
  }

  /** Caches the window just read from the store (the newest `limit` messages of `epoch`, oldest first). */
  set(sessionKey: string, epoch: number, messages: readonly ContextEntry[]): void {
    this.#entries.delete(sessionKey);
    this.#entries.set(sessionKey, { epoch, messages: messages.slice(-this.limit) });
    while (this.#entries.size > this.maxSessions) this.#entries.delete(this.#entries.keys().next().value!);
  }

  /** Messages of `epoch` that just committed, in the order they were stored; ignored when the window is not cached. */
  append(sessionKey: string, epoch: number, messages: readonly ContextEntry[]): void {
    const entry = this.#entries.get(sessionKey);
    if (!entry) return;
    if (entry.epoch !== epoch) {
      this.#entries.delete(sessionKey);
      return;
    }
    entry.messages.push(...messages);
    if (entry.messages.length > this.limit) entry.messages.splice(0, entry.messages.length - this.limit);
  }

  /** Drops the session's window: the next turn reads it from the store. */
  forget(sessionKey: string): void {
    this.#entries.delete(sessionKey);
  }

  /** Sessions cached (tests). */
  get size(): number {
    return this.#entries.size;
  }
}
