/**
 * The dashboard's one WebSocket (`/api/v1/ws`, DECISIONS §8): it signs in with an `auth` frame (the token never
 * travels in the URL), subscribes to the topics pages listen to, dispatches `event` frames to them, and
 * reconnects with exponential backoff (0.5 s doubling to 15 s) until the shell closes it. A refused token
 * (close 4401) stops the reconnecting and is reported once through `onRefused`. Each scheduled attempt is
 * announced through `onRetry` (the shell's offline banner shows its time), and `retryNow()` skips the wait.
 */
import type { LiveEvent, LiveFeed } from './page';

type Listener = (event: LiveEvent) => void;

/** A frame sent by the server, as far as the feed reads it. */
interface ServerFrame {
  type?: unknown;
  role?: unknown;
  topic?: unknown;
  event?: unknown;
  data?: unknown;
}

/** Options of the feed: where to connect, and what the shell wants to hear about. */
export interface LiveSocketOptions {
  token: string;
  /** The WebSocket URL; default: `/api/v1/ws` on this page's origin (`ws:` or `wss:`). */
  url?: string;
  /** Called whenever `connected` changes. */
  onStatus?: (connected: boolean) => void;
  /** Called when the server refuses the token (close code 4401); the feed stops. */
  onRefused?: () => void;
  /**
   * Called with the time (ms since the epoch) of the next connection attempt when the socket dropped or could
   * not connect, and with null once it is signed in again.
   */
  onRetry?: (nextAttemptAt: number | null) => void;
}

const BACKOFF_START_MS = 500;
const BACKOFF_MAX_MS = 15_000;
const CLOSE_UNAUTHORIZED = 4401;

/** The shell's implementation of `LiveFeed`: one socket, many listeners per topic. */
export class LiveSocket implements LiveFeed {
  #connected = false;
  #socket: WebSocket | undefined;
  #closed = false;
  #backoff = BACKOFF_START_MS;
  #timer: ReturnType<typeof setTimeout> | undefined;
  readonly #listeners = new Map<string, Set<Listener>>();
  readonly #options: LiveSocketOptions;

  constructor(options: LiveSocketOptions) {
    this.#options = options;
  }

  get connected(): boolean {
    return this.#connected;
  }

  /** Opens the socket (once); later drops reconnect on their own. */
  start(): void {
    if (!this.#socket && !this.#closed) this.#connect();
  }

  /** Closes the socket for good (sign-out); listeners stay registered but hear nothing more. */
  close(): void {
    this.#closed = true;
    clearTimeout(this.#timer);
    this.#socket?.close(1000, 'signed out');
    this.#socket = undefined;
    this.#setConnected(false);
  }

  /** Connects now instead of at the scheduled attempt (the offline banner's Retry); no-op while connected. */
  retryNow(): void {
    if (this.#closed || this.#socket || this.#timer === undefined) return;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#connect();
  }

  subscribe(topic: string, listener: Listener): () => void {
    let set = this.#listeners.get(topic);
    if (!set) {
      set = new Set();
      this.#listeners.set(topic, set);
      if (this.#connected) this.send({ type: 'subscribe', topics: [topic] });
    }
    set.add(listener);
    return () => {
      const current = this.#listeners.get(topic);
      if (!current?.delete(listener) || current.size > 0) return;
      this.#listeners.delete(topic);
      if (this.#connected) this.send({ type: 'unsubscribe', topics: [topic] });
    };
  }

  send(frame: { type: string } & Record<string, unknown>): boolean {
    const socket = this.#socket;
    if (!socket || socket.readyState !== WebSocket.OPEN || (!this.#connected && frame.type !== 'auth')) return false;
    socket.send(JSON.stringify(frame));
    return true;
  }

  #connect(): void {
    const url = this.#options.url ?? `${location.protocol === 'https:' ? 'wss:' : 'ws:'}//${location.host}/api/v1/ws`;
    const socket = new WebSocket(url);
    this.#socket = socket;
    socket.addEventListener('open', () => {
      socket.send(JSON.stringify({ type: 'auth', token: this.#options.token }));
    });
    socket.addEventListener('message', (message: MessageEvent) => {
      if (typeof message.data === 'string') this.#receive(message.data);
    });
    socket.addEventListener('close', (event: CloseEvent) => {
      if (this.#socket !== socket) return;
      this.#socket = undefined;
      this.#setConnected(false);
      if (this.#closed) return;
      if (event.code === CLOSE_UNAUTHORIZED) {
        this.#closed = true;
        this.#options.onRefused?.();
        return;
      }
      const wait = this.#backoff;
      this.#timer = setTimeout(() => {
        this.#timer = undefined;
        this.#connect();
      }, wait);
      this.#backoff = Math.min(this.#backoff * 2, BACKOFF_MAX_MS);
      this.#options.onRetry?.(Date.now() + wait);
    });
  }

  #receive(text: string): void {
    let frame: ServerFrame;
    try {
      frame = JSON.parse(text) as ServerFrame;
    } catch {
      return;
    }
    if (frame.type === 'auth_ok') {
      this.#backoff = BACKOFF_START_MS;
      this.#setConnected(true);
      this.#options.onRetry?.(null);
      const topics = [...this.#listeners.keys()];
      if (topics.length > 0) this.send({ type: 'subscribe', topics });
      return;
    }
    if (frame.type !== 'event' || typeof frame.topic !== 'string') return;
    const event: LiveEvent = {
      topic: frame.topic,
      event: typeof frame.event === 'string' ? frame.event : '',
      data: frame.data,
    };
    for (const listener of [...(this.#listeners.get(frame.topic) ?? [])]) listener(event);
  }

  #setConnected(connected: boolean): void {
    if (this.#connected === connected) return;
    this.#connected = connected;
    this.#options.onStatus?.(connected);
  }
}
