import type { Registry } from 'prom-client';
import type { Config } from '../config/config.schema.js';
import type { EventBus } from '../events/index.js';
import type { Clock } from '../lib/clock.js';
import type { IdGenerator } from '../lib/ids.js';
import type { Logger } from '../lib/logger.js';
import type { GatewayModule } from '../module.js';
import type { Store } from '../store/index.js';
import { SubscriptionOutbox } from './subscriptions.outbox.js';
import { subscriptionRoutes } from './subscriptions.routes.js';
import { SubscriptionService } from './subscriptions.service.js';
import { DeliveryWorker } from './subscriptions.worker.js';

/** What event subscriptions use. */
export interface SubscriptionsDeps {
  config: Config;
  store: Store;
  clock: Clock;
  ids: IdGenerator;
  logger: Logger;
  /** This gateway's instance id: the owner of the deliveries it claims. */
  instanceId: string;
  /** The Prometheus registry the delivery series join. */
  metrics: { registry: Registry };
  /** Tracing on: deliveries carry `traceparent` (DECISIONS §21). */
  tracing: { tracer: unknown };
  /**
   * The live feed: a change is published on `subscriptions` (ids only), which the cluster bus carries to the
   * other gateways, whose outbox reads the subscriptions again at once.
   */
  bus: Pick<EventBus, 'publish' | 'subscribe'>;
}

/** Event subscriptions, opened: the outbox the message path writes through, the service, and the module. */
export interface Subscriptions {
  outbox: SubscriptionOutbox;
  service: SubscriptionService;
  worker: DeliveryWorker;
  module: GatewayModule;
}

/**
 * Event subscriptions (DECISIONS §20, ADR 0040), opened before the message path so that it, tasks, cron and the
 * channels write their deliveries in their own commits: the outbox (its cache read at start and kept fresh),
 * the delivery worker (started with the gateway, closed with the backends once the running turns ended), the
 * routes.
 */
export function openSubscriptions(deps: SubscriptionsDeps): Subscriptions {
  const { config, store, clock, ids } = deps;
  const settings = config.subscriptions;
  const logger = deps.logger.child({ source: 'subscriptions' });
  const worker = new DeliveryWorker({
    anySubscription: () => outbox.any(), // asked only once started, after the outbox below is built
    store,
    clock,
    logger,
    owner: deps.instanceId,
    tracing: deps.tracing.tracer !== null,
    registry: deps.metrics.registry,
    settings: {
      allowPrivateTargets: settings.allow_private_targets,
      retrySchedule: settings.retry_schedule,
      timeoutSeconds: settings.timeout_seconds,
      maxConcurrent: settings.max_concurrent,
      maxResponseBytes: settings.max_response_bytes,
      keepDeliveries: settings.keep_deliveries,
    },
  });
  const maxBodyBytes = settings.max_body_bytes;
  const outbox = new SubscriptionOutbox({ store, ids, logger, maxBodyBytes, onCommitted: () => worker.wake() });
  const service = new SubscriptionService({
    onChange: (id, change) => deps.bus.publish('subscriptions', change, { id }),
    store,
    clock,
    ids,
    outbox,
    worker,
    allowPrivateTargets: settings.allow_private_targets,
    allowHttp: settings.allow_http,
    maxBodyBytes,
  });
  // Another gateway's change (over the cluster bus) or this one's: read the subscriptions again.
  let unsubscribe: (() => void) | null = null;
  const module: GatewayModule = {
    name: 'subscriptions',
    routes: subscriptionRoutes(service),
    start: async () => {
      await outbox.start();
      unsubscribe = deps.bus.subscribe(['subscriptions'], () => void outbox.reload());
      await worker.start();
    },
    stop: {
      intake: () => {
        unsubscribe?.();
        outbox.close();
      },
      backends: () => worker.close(),
    },
  };
  return { outbox, service, worker, module };
}
