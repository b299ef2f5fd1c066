import type { AddressInfo } from 'node:net';
import type { Config } from '../../config/config.schema.js';
import type { Clock } from '../../lib/clock.js';
import type { Logger } from '../../lib/logger.js';
import type { GaugeRegistry } from '../../security/cluster-counts.js';
import { isOutcomeEvent, type MessagePath, type TurnEvent } from '../../turns/index.js';
import type { Channel, ChannelStats } from '../channel.js';
import { PendingTurns } from './webhook.pending.js';
import { buildWebhookServer, type WebhookServer } from './webhook.server.js';

/** The webhook's own idempotency LRU size (DECISIONS §6: 2048), handed to the message path by `gateway.ts`. */
export const WEBHOOK_IDEMPOTENCY_CACHE = 2048;

/** What the webhook channel is built from (wired by `gateway.ts`). */
export interface WebhookChannelOptions {
  config: Config['channels']['webhook'];
  /** Body cap (gateway.max_body_bytes). */
  maxBodyBytes: number;
  clock: Clock;
  logger: Logger;
  /**
   * The message path's door (the sender `webhook:<sender_id>` is checked by auth mode there); `overloaded`, when
   * given, refuses messages before their body is read while the process is over a limit (ADR 0043).
   */
  messages: Pick<MessagePath, 'submit' | 'waitFor' | 'tap'> & Partial<Pick<MessagePath, 'overloaded'>>;
  /** Loopback exemption as for HTTP: peer address + Host header → trusted. */
  loopbackTrusted: (remoteAddress: string | undefined, hostHeader: string | undefined) => boolean;
  stats: ChannelStats;
  /** True once gateway shutdown began: messages are answered 503 (health still answers). Optional. */
  isDraining?: () => boolean;
}

/** The webhook channel: its own HTTP server (DECISIONS §7). */
export interface WebhookChannel extends Channel {
  /** `http://host:port` while listening, else null. */
  readonly address: string | null;
  /** Webhook turns accepted and not yet at an outcome (bounded by max_pending). */
  pending(): number;
  /** Makes `max_pending` cluster-wide (ADR 0028): reports the slots in use as the gauge `webhook_pending`. */
  sharePending(gauges: GaugeRegistry): void;
  /**
   * Adds routes of another channel to the webhook's server (Slack's Events API, DECISIONS §16), on every start
   * from the next one on, before it listens.
   */
  mount(register: (server: WebhookServer) => Promise<void>): void;
}

/**
 * Longest a pending turn holds its `max_pending` slot without reaching an
 * outcome: the gateway's own bound on one reply (10 minutes), or the wait
 * timeout when that is longer. A stuck turn cannot hold a slot for ever.
 */
const MIN_PENDING_WATCH_MS = 600_000;

/** `http://host:port` of a listening server (IPv6 in brackets). */
function urlOf(address: AddressInfo | string | null): string | null {
  if (address === null || typeof address === 'string') return null;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return `http://${host}:${address.port}`;
}

/**
 * Builds the webhook channel (not listening until `start()`). Each start
 * builds a fresh server, so the channel can be stopped and started again
 * (disable/enable, reconnect); start and stop are serialised. `stop()`
 * closes the server and every connection, and stops counting the pending
 * turns (they go on; their slots are freed).
 */
export function createWebhookChannel(options: WebhookChannelOptions): WebhookChannel {
  const { config } = options;
  const log = options.logger.child({ source: 'webhook' });
  const waitTimeoutMs = config.wait_timeout_seconds * 1000;
  const watchMs = Math.max(waitTimeoutMs, MIN_PENDING_WATCH_MS);
  const pending = new PendingTurns({
    limit: config.max_pending,
    watch: (eventId, signal) => options.messages.waitFor(eventId, watchMs, signal),
    onWatchError: (err, eventId) =>
      log.warn(
        { event_id: eventId, err: err instanceof Error ? err.message : String(err) },
        'pending turn watch failed',
      ),
  });

  // A pending slot is freed by the turn's own outcome event (its end, failed too, or a pause), the moment it is
  // published (after it is stored).
  const settleOnOutcome = (event: TurnEvent): void => {
    if (isOutcomeEvent(event)) pending.settle(event.eventId);
  };
  let untap: (() => void) | null = null;

  let server: WebhookServer | null = null;
  const mounts: Array<(server: WebhookServer) => Promise<void>> = [];
  let address: string | null = null;
  let lifecycle: Promise<void> = Promise.resolve();
  /** Runs start/stop one after another, whatever the previous one's outcome. */
  const serially = (step: () => Promise<void>): Promise<void> => {
    const next = lifecycle.then(step);
    lifecycle = next.catch(() => undefined);
    return next;
  };

  return {
    name: 'webhook',
    get address() {
      return address;
    },
    start: () =>
      serially(async () => {
        if (server) return;
        const built = buildWebhookServer({
          path: config.path,
          secret: config.secret,
          maxBodyBytes: options.maxBodyBytes,
          waitTimeoutMs,
          clock: options.clock,
          logger: log,
          messages: options.messages,
          loopbackTrusted: options.loopbackTrusted,
          pending,
          onAccepted: () => options.stats.noteMessage(),
          isDraining: options.isDraining ?? (() => false),
        });
        try {
          for (const register of mounts) await register(built);
          await built.listen({ host: config.host, port: config.port });
        } catch (err) {
          await built.close().catch(() => undefined);
          throw err;
        }
        server = built;
        untap = options.messages.tap(settleOnOutcome);
        address = urlOf(built.server.address());
        if (!config.secret) log.warn({ address }, 'webhook channel accepts unsigned requests (no secret configured)');
        log.info({ address, path: config.path }, 'webhook channel listening');
      }),
    stop: () =>
      serially(async () => {
        const current = server;
        if (!current) return;
        server = null;
        address = null;
        untap?.();
        untap = null;
        pending.abortAll();
        await current.close();
        log.info({}, 'webhook channel stopped');
      }),
    connected: () => server !== null,
    pending: () => pending.size,
    sharePending: (gauges) => pending.share(gauges('webhook_pending', () => pending.inUse)),
    mount: (register) => void mounts.push(register),
  };
}
