/**
 * A TCP forwarder a test can cut: clients connect to it instead of a server
 * (Redis, NATS), and `cut` destroys every forwarded connection — as a network
 * failure or a server restart would — and, with `hold`, refuses new ones until
 * `restore`. The server itself is never touched, so other tests sharing it
 * are not disturbed.
 */
import { createServer, connect, type Server, type Socket } from 'node:net';

/** A running forwarder. */
export interface TcpProxy {
  /** The port it listens on (127.0.0.1). */
  readonly port: number;
  /** Connections forwarded right now. */
  connections(): number;
  /** Connections accepted since the start (refused ones excluded). */
  accepted(): number;
  /** Destroys every forwarded connection; with `hold`, refuses new ones until `restore()`. */
  cut(options?: { hold?: boolean }): void;
  /** Forwards new connections again. */
  restore(): void;
  /** Cuts everything and stops listening. */
  close(): Promise<void>;
}

/** Starts a forwarder to `host:port` on a free port of 127.0.0.1. */
export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  const pairs = new Set<[Socket, Socket]>();
  let holding = false;
  let accepted = 0;
  const server: Server = createServer((client) => {
    if (holding) {
      client.destroy();
      return;
    }
    accepted++;
    const upstream = connect(target.port, target.host);
    const pair: [Socket, Socket] = [client, upstream];
    pairs.add(pair);
    const end = (): void => {
      pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const address = server.address();
  if (!address || typeof address === 'string') throw new Error('proxy has no port');
  const cutAll = (): void => {
    for (const [client, upstream] of [...pairs]) {
      client.destroy();
      upstream.destroy();
    }
    pairs.clear();
  };
  return {
    port: address.port,
    connections: () => pairs.size,
    accepted: () => accepted,
    cut(options = {}) {
      holding = options.hold ?? false;
      cutAll();
    },
    restore() {
      holding = false;
    },
    close() {
      holding = true;
      cutAll();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
