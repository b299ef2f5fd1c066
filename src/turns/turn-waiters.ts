import { errors } from '../http/errors.js';
import type { Store } from '../store/index.js';
import type { TurnEventHub } from './turn-events.js';
import { TERMINAL_STATUSES as TERMINAL_STATUS_LIST } from './turn-status.js';
import { getTurn, type TurnRecord } from './turns.repo.js';

export { OUTCOME_STATUSES } from './turn-status.js';
import { OUTCOME_STATUSES } from './turn-status.js';

/** Statuses no turn leaves (the first terminal status wins). */
const TERMINAL_STATUSES: ReadonlySet<string> = new Set(TERMINAL_STATUS_LIST);
/** The longest timer Node keeps (about 24.8 days); longer waits are cut to it. */
const MAX_TIMER_MS = 2_147_483_647;
/** Terminal outcomes stored in this process remembered for waiters that come just after (bounded). */
const RECENT_OUTCOMES = 256;
/**
 * An outcome larger than this (a long message, reply or tool results) is not remembered: a waiter that
 * comes late reads it from the ledger. Bounds the memory of `recent` to about 256 × 16 KiB.
 */
export const RECENT_OUTCOME_MAX_CHARS = 16_384;

/** Whether the strings of `value` (its keys included) add up to at most `limit` characters; stops early. */
export function withinChars(value: unknown, limit: number): boolean {
  let left = limit;
  const walk = (node: unknown): boolean => {
    if (typeof node === 'string') return (left -= node.length) >= 0;
    if (node === null || typeof node !== 'object') return (left -= 8) >= 0;
    if (Array.isArray(node)) return node.every(walk);
    for (const [key, item] of Object.entries(node)) if ((left -= key.length) < 0 || !walk(item)) return false;
    return true;
  };
  return walk(value);
}

/**
 * Waits for turns to reach an outcome. The runner hands over each outcome it
 * stored (`settled`), so a waiter answers without reading it back; live
 * events wake waiters too (they re-read the ledger); a slow poll covers turns
 * run by another process sharing the database. Bounded: beyond `maxWaiters`
 * concurrent waits, 503.
 */
export class TurnWaiters {
  private active = 0;
  /** Waiters by event id, told of an outcome the runner stored. */
  private readonly local = new Map<string, Set<(turn: TurnRecord) => void>>();
  /** The latest terminal outcomes this process stored (a terminal status never changes). */
  private readonly recent = new Map<string, TurnRecord>();

  /**
   * `pollMs`: the ledger poll's period, read again before each poll (it is
   * slower while a cross-process bus delivers other processes' events, ADR 0025).
   * `isHeld`: true while this process's queue or runner holds the turn — its
   * outcome will be handed over (`settled`) or published, so a waiter needs no
   * first read of the ledger.
   */
  constructor(
    private readonly options: {
      store: Store;
      hub: TurnEventHub;
      maxWaiters: number;
      pollMs?: number | (() => number);
      isHeld?: (eventId: string) => boolean;
    },
  ) {}

  get waiting(): number {
    return this.active;
  }

  /**
   * An outcome (or pause) this process stored and made durable: its waiters
   * answer with it at once. Called before the turn's final event is published.
   */
  settled(turn: TurnRecord): void {
    if (TERMINAL_STATUSES.has(turn.status)) {
      this.recent.delete(turn.eventId);
      if (withinChars(turn, RECENT_OUTCOME_MAX_CHARS)) this.recent.set(turn.eventId, turn);
      if (this.recent.size > RECENT_OUTCOMES) this.recent.delete(this.recent.keys().next().value!);
    }
    const waiting = this.local.get(turn.eventId);
    if (!waiting) return;
    for (const tell of [...waiting]) tell(turn);
  }

  /**
   * The turn once it has an outcome (`until`: every outcome a waiting request
   * answers with, pauses included — the default — or only the terminal
   * ones), or null after `timeoutMs` or an abort (the turn goes on).
   */
  async wait(
    eventId: string,
    timeoutMs: number,
    signal?: AbortSignal,
    until: 'outcome' | 'terminal' = 'outcome',
  ): Promise<TurnRecord | null> {
    const ends = until === 'terminal' ? TERMINAL_STATUSES : OUTCOME_STATUSES;
    const known = this.recent.get(eventId);
    if (known && ends.has(known.status)) return known;
    if (this.active >= this.options.maxWaiters) throw errors.unavailable('too many requests waiting for results');
    this.active++;
    const { store, hub } = this.options;
    let unsubscribe: () => void = () => undefined;
    let forget: () => void = () => undefined;
    let timer: NodeJS.Timeout | undefined;
    let poll: NodeJS.Timeout | undefined;
    try {
      return await new Promise<TurnRecord | null>((resolve, reject) => {
        let settled = false;
        let checking = false;
        const finish = (value: TurnRecord | null): void => {
          if (settled) return;
          settled = true;
          resolve(value);
        };
        const check = (): void => {
          if (settled || checking) return;
          checking = true;
          getTurn(store.db, eventId).then(
            (turn) => {
              checking = false;
              if (turn && ends.has(turn.status)) finish(turn);
            },
            (err: unknown) => {
              checking = false;
              if (!settled) {
                settled = true;
                reject(err instanceof Error ? err : new Error(String(err)));
              }
            },
          );
        };
        const tell = (turn: TurnRecord): void => {
          if (ends.has(turn.status)) finish(turn);
        };
        let waiting = this.local.get(eventId);
        if (!waiting) this.local.set(eventId, (waiting = new Set()));
        waiting.add(tell);
        const set = waiting;
        forget = () => {
          set.delete(tell);
          if (set.size === 0 && this.local.get(eventId) === set) this.local.delete(eventId);
        };
        unsubscribe = hub.subscribe(eventId, (event) => {
          if (settled) return;
          // A `status` event matters only when it announces an outcome (a pause), not `running`.
          const status = event.data.status;
          const outcome =
            event.type === 'done' || event.type === 'error' || (typeof status === 'string' && ends.has(status));
          if (outcome) {
            // The outcome is stored before it is published; re-read it to answer from the ledger.
            checking = false;
            check();
          }
        });
        timer = setTimeout(() => finish(null), Math.min(timeoutMs, MAX_TIMER_MS));
        const every = this.options.pollMs ?? 1000;
        const schedule = (): void => {
          poll = setTimeout(
            () => {
              check();
              if (!settled) schedule();
            },
            typeof every === 'function' ? every() : every,
          );
        };
        schedule();
        signal?.addEventListener('abort', () => finish(null), { once: true });
        // A turn this process holds hands its outcome over; any other is read from the ledger now.
        if (!this.options.isHeld?.(eventId)) check();
      });
    } finally {
      unsubscribe();
      forget();
      clearTimeout(timer);
      clearTimeout(poll);
      this.active--;
    }
  }
}
