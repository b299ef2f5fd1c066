import type { Config } from '../config/config.schema.js';
import type { Clock } from '../lib/clock.js';
import { BusUnavailableError, busUrlForDisplay, localBusAdapter, type BusAdapter } from './bus-adapter.js';
import { ClusterBus, type BusLogger, type BusObserver, type BusTimers } from './cluster-bus.js';

/** What `openClusterBus` needs. */
export interface OpenBusOptions {
  /** The `bus` block of the configuration. */
  config: Config['bus'];
  /** This process's instance id (the message path's `owner`). */
  instanceId: string;
  version: string;
  clock: Clock;
  logger: BusLogger;
  observer?: BusObserver;
  timers?: BusTimers;
  heartbeatMs?: number;
  /** Longest wait for the server at start-up; default 5 s. */
  connectTimeoutMs?: number;
}

const SCHEMES = { redis: ['redis:', 'rediss:'], nats: ['nats:'] } as const;
const EXAMPLE = { redis: 'redis://127.0.0.1:6379', nats: 'nats://127.0.0.1:4222' } as const;
const SERVER = { redis: 'Redis', nats: 'NATS' } as const;

/**
 * Builds the configured bus and connects it (ADR 0025). The Redis and NATS
 * clients are loaded only when configured (ADR 0019). Rejects with
 * `BusUnavailableError` — its message names the URL without credentials and
 * the fix — when `bus.url` is missing or wrong, or the server cannot be
 * reached: a gateway configured for a shared bus does not start without one.
 */
export async function openClusterBus(options: OpenBusOptions): Promise<ClusterBus> {
  const { driver, url } = options.config;
  let adapter: BusAdapter;
  let fix = '';
  if (driver === 'local') {
    adapter = localBusAdapter();
  } else {
    const variable = driver === 'redis' ? ' (or REDIS_URL)' : '';
    const local = 'or set bus.driver: local to run a single gateway without a shared bus';
    if (!url) {
      throw new BusUnavailableError(
        `bus.driver is ${driver} but bus.url is not set: set bus.url${variable}, e.g. ${EXAMPLE[driver]}, ${local}`,
      );
    }
    let scheme: string | null = null;
    try {
      scheme = new URL(url).protocol;
    } catch {
      /* reported below */
    }
    if (!scheme || !(SCHEMES[driver] as readonly string[]).includes(scheme)) {
      throw new BusUnavailableError(
        `bus.url ${busUrlForDisplay(url)} is not a ${SCHEMES[driver].join(' or ')}// URL: set bus.url${variable}, ` +
          `e.g. ${EXAMPLE[driver]}, ${local}`,
      );
    }
    const connection = { url, name: options.instanceId, connectTimeoutMs: options.connectTimeoutMs ?? 5_000 };
    adapter =
      driver === 'redis'
        ? (await import('./bus-redis.js')).redisBusAdapter(connection)
        : (await import('./bus-nats.js')).natsBusAdapter(connection);
    fix = `start ${SERVER[driver]} there, correct bus.url${variable}, ${local}`;
  }
  const bus = new ClusterBus({
    adapter,
    instanceId: options.instanceId,
    namespace: options.config.namespace,
    maxMessageBytes: options.config.max_message_bytes,
    version: options.version,
    clock: options.clock,
    logger: options.logger,
    ...(options.observer ? { observer: options.observer } : {}),
    ...(options.timers ? { timers: options.timers } : {}),
    ...(options.heartbeatMs !== undefined ? { heartbeatMs: options.heartbeatMs } : {}),
  });
  try {
    await bus.start();
  } catch (err) {
    if (err instanceof BusUnavailableError && fix) throw new BusUnavailableError(`${err.message}: ${fix}`);
    throw err;
  }
  return bus;
}
