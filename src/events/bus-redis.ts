import { Redis } from 'ioredis';
import {
  BusUnavailableError,
  busUrlForDisplay,
  type BusAdapter,
  type BusConnectionListener,
  type BusMessageHandler,
} from './bus-adapter.js';

/** How the Redis adapter connects. */
export interface RedisBusOptions {
  /** `redis://[user:password@]host:port[/db]` or `rediss://…` (TLS). */
  url: string;
  /** Shown by `CLIENT LIST` (`<name>:pub`, `<name>:sub`): the instance id. */
  name: string;
  /** Longest wait for a connection, at start-up and for each reconnection attempt; default 5 s. */
  connectTimeoutMs?: number;
}

/** Pause before reconnection attempt `n` (1, 2, …): 100 ms more each time, at most 1 s. */
const retryDelay = (attempt: number): number => Math.min(attempt * 100, 1_000);
/** Longest wait for QUIT at close before the sockets are cut. */
const QUIT_MS = 1_000;

/**
 * The Redis adapter (ioredis): one connection publishes, one subscribes
 * (a subscribed connection can do nothing else). Publishing never queues:
 * the publishing connection has no offline queue, so while it is down a
 * message is refused at once and counted as dropped. On reconnection the
 * subscriptions are sent again by this adapter, and the bus counts as up
 * only once Redis confirmed them.
 */
export function redisBusAdapter(options: RedisBusOptions): BusAdapter {
  const target = busUrlForDisplay(options.url);
  const common = {
    lazyConnect: true,
    connectTimeout: options.connectTimeoutMs ?? 5_000,
    retryStrategy: retryDelay,
    maxRetriesPerRequest: 1,
  };
  const pub = new Redis(options.url, { ...common, enableOfflineQueue: false, connectionName: `${options.name}:pub` });
  const sub = new Redis(options.url, { ...common, autoResubscribe: false, connectionName: `${options.name}:sub` });
  let lastError = 'connection closed';
  let up = false;
  let started = false;
  let closed = false;
  let subjects: readonly string[] = [];
  let onConnection: BusConnectionListener = () => undefined;
  for (const client of [pub, sub]) {
    // Without a listener an error event would crash the process; the message says why a connection dropped.
    client.on('error', (err: Error) => {
      lastError = err.message;
    });
    client.on('close', () => {
      if (!started || !up) return;
      up = false;
      onConnection(false, lastError);
    });
  }
  const subscribe = (): Promise<unknown> => (subjects.length > 0 ? sub.subscribe(...subjects) : Promise.resolve());
  const restore = (): void => {
    if (!started || closed || up || pub.status !== 'ready' || sub.status !== 'ready') return;
    subscribe().then(
      () => {
        if (up || closed || pub.status !== 'ready' || sub.status !== 'ready') return;
        up = true;
        onConnection(true, 'reconnected');
      },
      (err: unknown) => {
        lastError = err instanceof Error ? err.message : String(err);
      },
    );
  };
  for (const client of [pub, sub]) {
    client.on('ready', () => {
      if (pub.status === 'ready' && sub.status === 'ready') lastError = 'connection closed'; // not a stale cause
      restore();
    });
  }

  const end = async (client: Redis): Promise<void> => {
    if (client.status === 'end') return;
    if (client.status !== 'ready') {
      client.disconnect();
      return;
    }
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      client.quit().catch(() => undefined),
      new Promise<void>((resolve) => {
        timer = setTimeout(resolve, QUIT_MS);
      }),
    ]);
    clearTimeout(timer);
    client.disconnect();
  };

  return {
    driver: 'redis',
    target,
    async connect(wanted: readonly string[], onMessage: BusMessageHandler, listener: BusConnectionListener) {
      subjects = [...wanted];
      sub.on('message', (channel: string, message: string) => onMessage(channel, message));
      try {
        await Promise.all([pub.connect(), sub.connect()]);
        await subscribe();
      } catch (err) {
        pub.disconnect();
        sub.disconnect();
        const why = lastError !== 'connection closed' ? lastError : (err as Error).message;
        throw new BusUnavailableError(`cannot reach the redis bus at ${target} (${why})`);
      }
      onConnection = listener;
      up = true;
      started = true;
    },
    publish(subject, payload) {
      if (!up || closed) return false;
      pub.publish(subject, payload).catch(() => undefined); // at most once: a lost message is not retried
      return true;
    },
    connected: () => up && !closed,
    async close() {
      if (closed) return;
      closed = true;
      up = false;
      await Promise.all([end(pub), end(sub)]);
    },
  };
}
