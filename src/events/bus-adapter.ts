/** The transports of the cross-process bus (`bus.driver`, ADR 0025). */
export type BusDriver = 'local' | 'redis' | 'nats';

/** Receives one raw message: the subject (Redis: channel) it came on, and its text. */
export type BusMessageHandler = (subject: string, payload: string) => void;

/**
 * Told when the connection changes after `connect` resolved: `up` false with
 * why (the client reconnects on its own), true once it is back with every
 * subscription restored.
 */
export type BusConnectionListener = (up: boolean, reason: string) => void;

/**
 * One transport of the cross-process bus: plain publish/subscribe of text
 * messages on named subjects, at most once, with no history. Everything the
 * gateway puts on it (envelopes, instance ids, size caps, heartbeats) is
 * `ClusterBus`'s; an adapter only moves text. Three implementations: local
 * (no other process), Redis pub/sub, NATS core subjects.
 */
export interface BusAdapter {
  readonly driver: BusDriver;
  /** Where it connects, for messages and logs: the URL without credentials (`local` for the local bus). */
  readonly target: string;
  /**
   * Connects and subscribes to `subjects`, resolving once the server holds
   * the subscriptions. Rejects with `BusUnavailableError` — and leaves no
   * connection or timer behind — when the server cannot be reached within
   * the adapter's connect timeout. Afterwards the client reconnects by itself
   * and restores the subscriptions; `onConnection` hears of each change.
   */
  connect(
    subjects: readonly string[],
    onMessage: BusMessageHandler,
    onConnection: BusConnectionListener,
  ): Promise<void>;
  /**
   * Hands one message to the server, at most once, without waiting. False
   * when it could not be handed over (not connected, closed): the message is
   * dropped, never queued. Never throws.
   */
  publish(subject: string, payload: string): boolean;
  /** True while connected with every subscription in place. */
  connected(): boolean;
  /** Sends what is pending (bounded wait) and closes every connection; idempotent. */
  close(): Promise<void>;
}

/**
 * The configured bus cannot be used: it was not reached at start-up, or its
 * configuration is incomplete. The message names the URL without credentials
 * and the fix; it is an operator's problem, so no stack trace is shown.
 */
export class BusUnavailableError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'BusUnavailableError';
    this.stack = `${this.name}: ${message}`;
  }
}

/**
 * The bus URL as it may be shown: scheme, host, port and path, never a user
 * name, password or token; `(not a URL)` when it does not parse.
 */
export function busUrlForDisplay(url: string): string {
  try {
    const parsed = new URL(url);
    parsed.username = '';
    parsed.password = '';
    parsed.search = '';
    parsed.hash = '';
    return parsed.toString().replace(/\/$/, '');
  } catch {
    return '(not a URL)';
  }
}

/** The local bus: no other process, so nothing to connect to and nowhere to send (today's in-process feed). */
export function localBusAdapter(): BusAdapter {
  let open = true;
  return {
    driver: 'local',
    target: 'local',
    connect: () => Promise.resolve(),
    publish: () => open,
    connected: () => open,
    close() {
      open = false;
      return Promise.resolve();
    },
  };
}
