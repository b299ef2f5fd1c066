import { connect, type NatsConnection, type Subscription } from '@nats-io/transport-node';
import {
  BusUnavailableError,
  busUrlForDisplay,
  type BusAdapter,
  type BusConnectionListener,
  type BusMessageHandler,
} from './bus-adapter.js';

/** How the NATS adapter connects. */
export interface NatsBusOptions {
  /** `nats://[user:password@|token@]host:port`. */
  url: string;
  /** The connection's name on the server: the instance id. */
  name: string;
  /** Longest wait for the first connection; default 5 s. */
  connectTimeoutMs?: number;
}

/** Longest wait for pending messages at close. */
const FLUSH_MS = 1_000;

/** Splits credentials out of the URL: nats.js takes them as options, and the server list stays shareable. */
function natsTarget(url: string): { server: string; auth: { user?: string; pass?: string; token?: string } } {
  const parsed = new URL(url);
  const user = decodeURIComponent(parsed.username);
  const pass = decodeURIComponent(parsed.password);
  const server = `${parsed.hostname.includes(':') ? `[${parsed.hostname}]` : parsed.hostname}:${parsed.port || '4222'}`;
  if (user && pass) return { server, auth: { user, pass } };
  if (user) return { server, auth: { token: user } };
  return { server, auth: {} };
}

/**
 * The NATS adapter: one connection on core subjects (no JetStream: the bus
 * keeps no history, the store does). `noEcho` keeps the server from sending
 * this connection its own messages. The client reconnects forever and
 * restores the subscriptions itself; a message published while it is down is
 * refused here rather than buffered in the client.
 */
export function natsBusAdapter(options: NatsBusOptions): BusAdapter {
  const target = busUrlForDisplay(options.url);
  let nc: NatsConnection | null = null;
  let statusLoop: Promise<void> = Promise.resolve();
  let up = false;
  let closed = false;
  const subscriptions: Subscription[] = [];

  const watch = async (conn: NatsConnection, onConnection: BusConnectionListener): Promise<void> => {
    for await (const status of conn.status()) {
      if (status.type === 'disconnect' && up) {
        up = false;
        onConnection(false, `disconnected from ${target}`);
      } else if (status.type === 'reconnect' && !up && !closed) {
        // The client sent the subscriptions again; a round trip makes sure the server holds them.
        conn.flush().then(
          () => {
            if (up || closed || conn.isClosed()) return;
            up = true;
            onConnection(true, 'reconnected');
          },
          () => undefined, // lost again: the next reconnect tries anew
        );
      } else if (status.type === 'close') {
        up = false;
      }
    }
  };

  return {
    driver: 'nats',
    target,
    async connect(subjects: readonly string[], onMessage: BusMessageHandler, onConnection: BusConnectionListener) {
      let conn: NatsConnection;
      try {
        const { server, auth } = natsTarget(options.url);
        conn = await connect({
          servers: server,
          ...auth,
          name: options.name,
          noEcho: true,
          timeout: options.connectTimeoutMs ?? 5_000,
          maxReconnectAttempts: -1,
          reconnectTimeWait: 250,
          reconnectJitter: 100,
          // A connection cut without a FIN shows within about 30 s.
          pingInterval: 10_000,
          maxPingOut: 2,
        });
      } catch (err) {
        const cause = (err as { cause?: unknown }).cause;
        const why = cause instanceof Error ? cause.message : (err as Error).message;
        throw new BusUnavailableError(`cannot reach the nats bus at ${target} (${why})`);
      }
      for (const subject of subjects) {
        subscriptions.push(
          conn.subscribe(subject, {
            callback: (err, msg) => {
              if (!err) onMessage(msg.subject, msg.string());
            },
          }),
        );
      }
      try {
        await conn.flush(); // the server holds the subscriptions
      } catch (err) {
        await conn.close().catch(() => undefined);
        throw new BusUnavailableError(`cannot reach the nats bus at ${target} (${(err as Error).message})`);
      }
      nc = conn;
      up = true;
      statusLoop = watch(conn, onConnection).catch(() => undefined);
    },
    publish(subject, payload) {
      if (!up || closed || !nc) return false;
      try {
        nc.publish(subject, payload);
        return true;
      } catch {
        return false;
      }
    },
    connected: () => up && !closed,
    async close() {
      if (closed) return;
      closed = true;
      const conn = nc;
      if (!conn) return;
      if (up) {
        let timer: NodeJS.Timeout | undefined;
        await Promise.race([
          conn.flush().catch(() => undefined),
          new Promise<void>((resolve) => {
            timer = setTimeout(resolve, FLUSH_MS);
          }),
        ]);
        clearTimeout(timer);
      }
      up = false;
      for (const subscription of subscriptions) subscription.unsubscribe();
      await conn.close().catch(() => undefined);
      await statusLoop;
    },
  };
}
