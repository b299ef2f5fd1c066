import { errors } from '../http/errors.js';
import type { Clock } from '../lib/clock.js';
import { isoTime } from '../lib/clock.js';
import type { IdGenerator } from '../lib/ids.js';
import { BlockedTargetError, checkTarget } from '../lib/outbound.js';
import type { Store } from '../store/index.js';
import { PING_EVENT } from './subscriptions.events.js';
import { deliveryBody, type SubscriptionOutbox } from './subscriptions.outbox.js';
import {
  deleteSubscription,
  deliveryStats,
  getDelivery,
  getSubscription,
  insertDeliveries,
  insertSubscription,
  listDeliveries,
  listSubscriptions,
  requeueDelivery,
  updateSubscription,
  type DeliveryRecord,
  type DeliveryStatus,
  type SubscriptionRecord,
} from './subscriptions.repo.js';
import type { CreateSubscriptionInput, UpdateSubscriptionInput } from './subscriptions.schema.js';
import { newSecret } from './subscriptions.sign.js';
import type { AttemptResult, DeliveryWorker } from './subscriptions.worker.js';

/** What the service uses. */
export interface SubscriptionServiceDeps {
  store: Store;
  clock: Clock;
  ids: IdGenerator;
  outbox: SubscriptionOutbox;
  worker: DeliveryWorker;
  allowPrivateTargets: boolean;
  allowHttp: boolean;
  maxBodyBytes: number;
  /** Told of every change once committed (the live feed, and through it the other gateways). */
  onChange?: (id: string, change: 'created' | 'updated' | 'deleted') => void;
}

/** Subscriptions and their deliveries (DECISIONS §20). */
export class SubscriptionService {
  constructor(private readonly deps: SubscriptionServiceDeps) {}

  /**
   * A URL a subscription may call: https (http only with `allow_http`), and every address of its host public
   * (unless `allow_private_targets`). A refusal is 400 with the reason; nothing is sent to the URL.
   */
  async checkUrl(url: string): Promise<string> {
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      throw errors.validation([{ path: 'body.url', message: 'must be an absolute URL' }]);
    }
    const allowed = this.deps.allowHttp ? ['https:', 'http:'] : ['https:'];
    if (!allowed.includes(parsed.protocol)) {
      const message = this.deps.allowHttp
        ? 'must be an http or https URL'
        : 'must be an https URL (http is refused unless subscriptions.allow_http is true)';
      throw errors.validation([{ path: 'body.url', message }]);
    }
    if (parsed.username || parsed.password) {
      throw errors.validation([{ path: 'body.url', message: 'must not carry credentials' }]);
    }
    try {
      await checkTarget(parsed, { allowPrivate: this.deps.allowPrivateTargets });
    } catch (err) {
      const reason = err instanceof BlockedTargetError ? err.reason : 'its host does not resolve';
      throw errors.validation(
        [{ path: 'body.url', message: `refused: ${reason}` }],
        `subscription URL refused: ${reason}`,
      );
    }
    return parsed.toString();
  }

  async create(input: CreateSubscriptionInput): Promise<SubscriptionRecord> {
    const url = await this.checkUrl(input.url);
    const now = isoTime(this.deps.clock.now());
    const record: SubscriptionRecord = {
      id: this.deps.ids.next('sub'),
      url,
      events: input.events,
      description: input.description ?? null,
      secret: input.secret ?? newSecret(),
      enabled: input.enabled ?? true,
      createdAt: now,
      updatedAt: now,
    };
    await this.deps.store.writer.run((trx) => insertSubscription(trx, record));
    await this.deps.outbox.reload();
    this.deps.onChange?.(record.id, 'created');
    return record;
  }

  list(): Promise<SubscriptionRecord[]> {
    return listSubscriptions(this.deps.store.db);
  }

  async get(id: string): Promise<SubscriptionRecord> {
    const found = await getSubscription(this.deps.store.db, id);
    if (!found) throw errors.notFound('subscription');
    return found;
  }

  stats(id: string): Promise<{ pending: number; delivered: number; failed: number }> {
    return deliveryStats(this.deps.store.db, id);
  }

  async update(id: string, input: UpdateSubscriptionInput): Promise<SubscriptionRecord> {
    const url = input.url !== undefined ? await this.checkUrl(input.url) : undefined;
    const now = isoTime(this.deps.clock.now());
    const changes = {
      ...(url !== undefined ? { url } : {}),
      ...(input.events !== undefined ? { events: input.events } : {}),
      ...(input.description !== undefined ? { description: input.description } : {}),
      ...(input.enabled !== undefined ? { enabled: input.enabled } : {}),
      now,
    };
    const updated = await this.deps.store.writer.run((trx) => updateSubscription(trx, id, changes));
    if (!updated) throw errors.notFound('subscription');
    await this.deps.outbox.reload();
    this.deps.onChange?.(id, 'updated');
    return updated;
  }

  async remove(id: string): Promise<void> {
    const deleted = await this.deps.store.writer.run((trx) => deleteSubscription(trx, id));
    if (!deleted) throw errors.notFound('subscription');
    await this.deps.outbox.reload();
    this.deps.onChange?.(id, 'deleted');
  }

  async deliveries(
    id: string,
    page: { status: DeliveryStatus | null; limit: number; offset: number },
  ): Promise<{ items: DeliveryRecord[]; total: number }> {
    await this.get(id);
    return listDeliveries(this.deps.store.db, { subscriptionId: id, ...page });
  }

  /** A failed (or any) delivery queued again now, its attempts counted from zero. */
  async retry(id: string): Promise<DeliveryRecord> {
    const now = isoTime(this.deps.clock.now());
    const queued = await this.deps.store.writer.run((trx) => requeueDelivery(trx, id, now));
    if (!queued) throw errors.notFound('delivery');
    this.deps.worker.wake();
    return queued;
  }

  /**
   * A test event (`subscription.ping`) sent now, whatever the subscription's events; recorded as a delivery
   * (delivered, or failed: a test is not retried) and answered with the attempt's result.
   */
  async test(id: string): Promise<AttemptResult & { deliveryId: string }> {
    const subscription = await this.get(id);
    const nowMs = this.deps.clock.now();
    const now = isoTime(nowMs);
    const deliveryId = this.deps.ids.next('msg');
    const data = { subscription_id: subscription.id, url: subscription.url };
    const body = deliveryBody({ type: PING_EVENT, timestamp: now, data }, this.deps.maxBodyBytes);
    const result = await this.deps.worker.attempt({
      id: deliveryId,
      url: subscription.url,
      secret: subscription.secret,
      body,
    });
    const finished = isoTime(this.deps.clock.now());
    await this.deps.store.writer.run(async (trx) => {
      await insertDeliveries(trx, [{ id: deliveryId, subscriptionId: id, eventType: PING_EVENT, body, now }]);
      await trx
        .updateTable('subscription_deliveries')
        .set({
          status: result.ok ? 'delivered' : 'failed',
          attempts: 1,
          last_status: result.status,
          last_error: result.error,
          delivered_at: result.ok ? finished : null,
          next_attempt_at: finished,
        })
        .where('id', '=', deliveryId)
        .execute();
    });
    return { ...result, deliveryId };
  }

  /** A delivery (for the retry route). */
  async delivery(id: string): Promise<DeliveryRecord> {
    const found = await getDelivery(this.deps.store.db, id);
    if (!found) throw errors.notFound('delivery');
    return found;
  }
}
