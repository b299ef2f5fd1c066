/**
 * Whether the gateway can be reached, as the dashboard sees it: a request that fails with a network error or a
 * live socket that dropped marks it unreachable; any answer (an HTTP response of any status, the socket signed
 * in again) marks it reachable. The shell shows one offline banner from this instead of a notice per failed
 * request.
 */

/** What the offline banner shows. */
export interface Connectivity {
  /** True while the last thing heard was a failure. */
  offline: boolean;
  /** When the live socket tries again (ms since the epoch), when it is waiting to. */
  nextAttemptAt: number | null;
}

type Listener = (state: Connectivity) => void;

/** Errors thrown by fetch for an unreachable server: Chromium, Firefox and Safari word them differently. */
const NETWORK_MESSAGE = /failed to fetch|networkerror|load failed|network request failed/i;

/** True when `error` is fetch's network failure (no answer at all), not an error answer or a bug. */
export function isNetworkError(error: unknown): boolean {
  return error instanceof TypeError && NETWORK_MESSAGE.test(error.message);
}

/** The one connectivity state of a signed-in shell. */
export class ConnectivityState {
  #state: Connectivity = { offline: false, nextAttemptAt: null };
  readonly #listeners = new Set<Listener>();

  get current(): Connectivity {
    return this.#state;
  }

  /** Calls `listener` on every change; returns the unsubscribe. */
  subscribe(listener: Listener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** A request got no answer. */
  failed(): void {
    this.#set({ ...this.#state, offline: true });
  }

  /** The gateway answered. */
  answered(): void {
    this.#set({ ...this.#state, offline: false });
  }

  /** The live socket's next attempt (a drop marks the gateway unreachable), or null once it is back. */
  socketRetry(nextAttemptAt: number | null): void {
    this.#set(nextAttemptAt === null ? { offline: false, nextAttemptAt } : { offline: true, nextAttemptAt });
  }

  /**
   * A `fetch` for the typed client that reports to this state: answers mark the gateway reachable, network
   * failures unreachable (and are rethrown as they were).
   */
  readonly fetch = async (input: Request): Promise<Response> => {
    try {
      const response = await fetch(input);
      this.answered();
      return response;
    } catch (error) {
      if (isNetworkError(error)) this.failed();
      throw error;
    }
  };

  #set(next: Connectivity): void {
    if (next.offline === this.#state.offline && next.nextAttemptAt === this.#state.nextAttemptAt) return;
    this.#state = next;
    for (const listener of [...this.#listeners]) listener(next);
  }
}
