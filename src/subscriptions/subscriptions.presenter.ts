import type { DeliveryRecord, SubscriptionRecord } from './subscriptions.repo.js';

/** A subscription as the API shows it: never its secret. */
export function presentSubscription(
  record: SubscriptionRecord,
  stats?: { pending: number; delivered: number; failed: number },
): Record<string, unknown> {
  return {
    id: record.id,
    url: record.url,
    events: record.events,
    description: record.description,
    enabled: record.enabled,
    created_at: record.createdAt,
    updated_at: record.updatedAt,
    ...(stats ? { stats } : {}),
  };
}

/** A delivery as the API shows it. */
export function presentDelivery(record: DeliveryRecord): Record<string, unknown> {
  return {
    id: record.id,
    subscription_id: record.subscriptionId,
    event_type: record.eventType,
    status: record.status,
    attempts: record.attempts,
    next_attempt_at: record.status === 'pending' ? record.nextAttemptAt : null,
    last_status: record.lastStatus,
    last_error: record.lastError,
    created_at: record.createdAt,
    delivered_at: record.deliveredAt,
  };
}
