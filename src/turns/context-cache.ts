import {
  DEFAULT_CONTEXT_BUDGET,
  retainContext,
  sizeEntry,
  type ContextBudget,
  type ContextEntry,
  type SizedEntry,
} from '../sessions/index.js';

/** Bytes of context the cache holds over all sessions by default (about 32 full default windows). */
export const DEFAULT_CONTEXT_CACHE_BYTES = 8 * 1024 * 1024;

/**
 * The model's context window of recently active sessions, kept in memory so a
 * turn does not read (and parse) its context before every model call — the
 * largest read of a turn. Used only where this process is the database's one
 * writer (SQLite: `Store.shared` false); with a shared PostgreSQL every turn
 * reads the store.
 *
 * Correct because, in that case, every message of a session's context epoch is
 * written by this process's turn runner, one turn of a session at a time: the
 * runner appends what it stored once its commit succeeded (`append`), and
 * forgets a session (`forget`) whenever it cannot tell what was stored — a
 * failed or unconfirmed commit, a chat command. A new context epoch (`/new`, a
 * deleted and revived session) is a new key, so deleting a session needs no
 * notice here.
 *
 * Bounded by bytes (ADR 0043): each window keeps only what the context budget can still send (`retainContext`:
 * the newest groups within `budget`, each message cut at the per-message cap), and all windows together at
 * most `maxBytes` — the least recently used go first — and `maxSessions` of them.
 */
export class ContextCache {
  readonly #entries = new Map<string, { epoch: number; window: SizedEntry[]; bytes: number }>();
  #bytes = 0;

  constructor(
    private readonly budget: ContextBudget = DEFAULT_CONTEXT_BUDGET,
    private readonly maxBytes = DEFAULT_CONTEXT_CACHE_BYTES,
    private readonly maxSessions = 256,
  ) {}

  /** The cached window of the session's `epoch`, oldest first (a copy), or undefined. */
  get(sessionKey: string, epoch: number): SizedEntry[] | undefined {
    const entry = this.#entries.get(sessionKey);
    if (!entry || entry.epoch !== epoch) return undefined;
    this.#entries.delete(sessionKey);
    this.#entries.set(sessionKey, entry);
    return [...entry.window];
  }

  /** Caches the window just read from the store (`contextWithin`, oldest first). */
  set(sessionKey: string, epoch: number, window: readonly SizedEntry[]): void {
    this.forget(sessionKey);
    this.#put(sessionKey, epoch, retainContext(window, this.budget));
  }

  /** Messages of `epoch` that just committed, in the order they were stored; ignored when the window is not cached. */
  append(sessionKey: string, epoch: number, messages: readonly ContextEntry[]): void {
    const entry = this.#entries.get(sessionKey);
    if (!entry) return;
    this.forget(sessionKey);
    if (entry.epoch !== epoch) return;
    const added = messages.map((message) => sizeEntry(contextEntryOf(message), this.budget));
    this.#put(sessionKey, epoch, retainContext([...entry.window, ...added], this.budget));
  }

  /** Drops the session's window: the next turn reads it from the store. */
  forget(sessionKey: string): void {
    const entry = this.#entries.get(sessionKey);
    if (!entry) return;
    this.#entries.delete(sessionKey);
    this.#bytes -= entry.bytes;
  }

  /** Sessions cached (tests). */
  get size(): number {
    return this.#entries.size;
  }

  /** Bytes of context held over all sessions, as the budget counts them (tests, figures). */
  get bytes(): number {
    return this.#bytes;
  }

  #put(sessionKey: string, epoch: number, window: SizedEntry[]): void {
    const bytes = window.reduce((sum, sized) => sum + sized.bytes, 0);
    if (bytes > this.maxBytes) return; // never cached: read from the store each time
    this.#entries.set(sessionKey, { epoch, window, bytes });
    this.#bytes += bytes;
    while (this.#bytes > this.maxBytes || this.#entries.size > this.maxSessions) {
      this.forget(this.#entries.keys().next().value!);
    }
  }
}

/** Only the fields a context entry has (a stored message carries more: its id, session, times). */
function contextEntryOf(message: ContextEntry): ContextEntry {
  return {
    role: message.role,
    content: message.content,
    toolCalls: message.toolCalls,
    toolCallId: message.toolCallId,
    name: message.name,
  };
}
