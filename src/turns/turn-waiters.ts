import { errors } from '../http/errors.js';
import type { Store } from '../store/index.js';
import type { TurnEventHub } from './turn-events.js';
import { getTurn, type TurnRecord } from './turns.repo.js';

/** Statuses a waiting request answers with (the turn's final state for that request). */
export const OUTCOME_STATUSES: ReadonlySet<string> = new Set([
  'completed',
  'incomplete',
  'failed',
  'interrupted',
  'waiting_approval',
  'waiting_clarification',
]);

/** Statuses no turn leaves (the first terminal status wins). */
const TERMINAL_STATUSES: ReadonlySet<string> = new Set(['completed', 'incomplete', 'failed', 'interrupted']);
/** The longest timer Node keeps (about 24.8 days); longer waits are cut to it. */
const MAX_TIMER_MS = 2_147_483_647;

/**
 * Waits for turns to reach an outcome. Live events wake waiters at once; a
 * slow poll covers turns run by another process sharing the database.
 * Bounded: beyond `maxWaiters` concurrent waits, 503.
 */
export class TurnWaiters {
  private active = 0;

  constructor(private readonly options: { store: Store; hub: TurnEventHub; maxWaiters: number; pollMs?: number }) {}

  get waiting(): number {
    return this.active;
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
    if (this.active >= this.options.maxWaiters) throw errors.unavailable('too many requests waiting for results');
    this.active++;
    const { store, hub } = this.options;
    let unsubscribe: () => void = () => undefined;
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
        unsubscribe = hub.subscribe(eventId, (event) => {
          if (event.type === 'done' || event.type === 'error' || event.type === 'status') {
            // The outcome is stored before it is published; re-read it to answer from the ledger.
            checking = false;
            check();
          }
        });
        timer = setTimeout(() => finish(null), Math.min(timeoutMs, MAX_TIMER_MS));
        poll = setInterval(check, this.options.pollMs ?? 1000);
        signal?.addEventListener('abort', () => finish(null), { once: true });
        check();
      });
    } finally {
      unsubscribe();
      clearTimeout(timer);
      clearInterval(poll);
      this.active--;
    }
  }
}
