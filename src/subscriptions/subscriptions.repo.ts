import { type Kysely, type Selectable, type Transaction, sql } from 'kysely';
import type { Database } from '../store/index.js';

/** `subscriptions` (migration 015_subscriptions). */
export interface SubscriptionsTable {
  id: string;
  url: string;
  /** JSON array of event names (`*` for all). */
  events: string;
  description: string | null;
  /** `whsec_<base64>`: the signing secret; never leaves the gateway after the create answer. */
  secret: string;
  /** 0/1. */
  enabled: number;
  created_at: string;
  updated_at: string;
}

/** `subscription_deliveries` (migration 015_subscriptions): the outbox. */
export interface SubscriptionDeliveriesTable {
  id: string;
  subscription_id: string;
  event_type: string;
  /** The exact body sent on every attempt (`{type, timestamp, data}`). */
  body: string;
  /** `pending` | `delivered` | `failed`. */
  status: string;
  attempts: number;
  next_attempt_at: string;
  /** The gateway making an attempt now, and until when its claim holds. */
  lease_owner: string | null;
  lease_until: string | null;
  last_status: number | null;
  last_error: string | null;
  created_at: string;
  delivered_at: string | null;
}

declare module '../store/database.js' {
  /** `Database` with the tables of 015_subscriptions. */
  interface Database {
    subscriptions: SubscriptionsTable;
    subscription_deliveries: SubscriptionDeliveriesTable;
  }
}

type Executor = Kysely<Database> | Transaction<Database>;

/** A subscription as stored. */
export interface SubscriptionRecord {
  id: string;
  url: string;
  events: string[];
  description: string | null;
  secret: string;
  enabled: boolean;
  createdAt: string;
  updatedAt: string;
}

/** The statuses of a delivery. */
export const DELIVERY_STATUSES = ['pending', 'delivered', 'failed'] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

/** A delivery as stored. */
export interface DeliveryRecord {
  id: string;
  subscriptionId: string;
  eventType: string;
  body: string;
  status: DeliveryStatus;
  attempts: number;
  nextAttemptAt: string;
  leaseOwner: string | null;
  lastStatus: number | null;
  lastError: string | null;
  createdAt: string;
  deliveredAt: string | null;
}

function toSubscription(row: Selectable<SubscriptionsTable>): SubscriptionRecord {
  return {
    id: row.id,
    url: row.url,
    events: JSON.parse(row.events) as string[],
    description: row.description,
    secret: row.secret,
    enabled: row.enabled === 1,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

function toDelivery(row: Selectable<SubscriptionDeliveriesTable>): DeliveryRecord {
  return {
    id: row.id,
    subscriptionId: row.subscription_id,
    eventType: row.event_type,
    body: row.body,
    status: row.status as DeliveryStatus,
    attempts: Number(row.attempts),
    nextAttemptAt: row.next_attempt_at,
    leaseOwner: row.lease_owner,
    lastStatus: row.last_status === null ? null : Number(row.last_status),
    lastError: row.last_error,
    createdAt: row.created_at,
    deliveredAt: row.delivered_at,
  };
}

export async function insertSubscription(ex: Executor, record: SubscriptionRecord): Promise<void> {
  await ex
    .insertInto('subscriptions')
    .values({
      id: record.id,
      url: record.url,
      events: JSON.stringify(record.events),
      description: record.description,
      secret: record.secret,
      enabled: record.enabled ? 1 : 0,
      created_at: record.createdAt,
      updated_at: record.updatedAt,
    })
    .execute();
}

export async function getSubscription(ex: Executor, id: string): Promise<SubscriptionRecord | null> {
  const row = await ex.selectFrom('subscriptions').selectAll().where('id', '=', id).executeTakeFirst();
  return row ? toSubscription(row) : null;
}

/** Every subscription, oldest first (`enabledOnly`: the ones deliveries are written for). */
export async function listSubscriptions(ex: Executor, enabledOnly = false): Promise<SubscriptionRecord[]> {
  let query = ex.selectFrom('subscriptions').selectAll().orderBy('created_at').orderBy('id');
  if (enabledOnly) query = query.where('enabled', '=', 1);
  return (await query.execute()).map(toSubscription);
}

export async function updateSubscription(
  ex: Executor,
  id: string,
  changes: { url?: string; events?: string[]; description?: string | null; enabled?: boolean; now: string },
): Promise<SubscriptionRecord | null> {
  const row = await ex
    .updateTable('subscriptions')
    .set({
      ...(changes.url !== undefined ? { url: changes.url } : {}),
      ...(changes.events !== undefined ? { events: JSON.stringify(changes.events) } : {}),
      ...(changes.description !== undefined ? { description: changes.description } : {}),
      ...(changes.enabled !== undefined ? { enabled: changes.enabled ? 1 : 0 } : {}),
      updated_at: changes.now,
    })
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirst();
  return row ? toSubscription(row) : null;
}

/** Deletes a subscription and its deliveries; false when unknown. */
export async function deleteSubscription(ex: Executor, id: string): Promise<boolean> {
  await ex.deleteFrom('subscription_deliveries').where('subscription_id', '=', id).execute();
  const result = await ex.deleteFrom('subscriptions').where('id', '=', id).executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}

/** One new delivery. */
export interface NewDelivery {
  id: string;
  subscriptionId: string;
  eventType: string;
  body: string;
  now: string;
}

/** Inserts deliveries, all due now, in one statement. */
export async function insertDeliveries(ex: Executor, rows: readonly NewDelivery[]): Promise<void> {
  if (rows.length === 0) return;
  await ex
    .insertInto('subscription_deliveries')
    .values(
      rows.map((row) => ({
        id: row.id,
        subscription_id: row.subscriptionId,
        event_type: row.eventType,
        body: row.body,
        status: 'pending',
        attempts: 0,
        next_attempt_at: row.now,
        created_at: row.now,
      })),
    )
    .execute();
}

export async function getDelivery(ex: Executor, id: string): Promise<DeliveryRecord | null> {
  const row = await ex.selectFrom('subscription_deliveries').selectAll().where('id', '=', id).executeTakeFirst();
  return row ? toDelivery(row) : null;
}

/** A subscription's deliveries, newest first, one page. */
export async function listDeliveries(
  ex: Executor,
  input: { subscriptionId: string; status: DeliveryStatus | null; limit: number; offset: number },
): Promise<{ items: DeliveryRecord[]; total: number }> {
  let base = ex.selectFrom('subscription_deliveries').where('subscription_id', '=', input.subscriptionId);
  if (input.status) base = base.where('status', '=', input.status);
  const rows = await base
    .selectAll()
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(input.limit)
    .offset(input.offset)
    .execute();
  const count = await base.select((eb) => eb.fn.countAll<number | string>().as('n')).executeTakeFirst();
  return { items: rows.map(toDelivery), total: Number(count?.n ?? 0) };
}

/** How many deliveries of each status a subscription has. */
export async function deliveryStats(
  ex: Executor,
  subscriptionId: string,
): Promise<{ pending: number; delivered: number; failed: number }> {
  const rows = await ex
    .selectFrom('subscription_deliveries')
    .select(['status', (eb) => eb.fn.countAll<number | string>().as('n')])
    .where('subscription_id', '=', subscriptionId)
    .groupBy('status')
    .execute();
  const stats = { pending: 0, delivered: 0, failed: 0 };
  for (const row of rows) if (row.status in stats) stats[row.status as DeliveryStatus] = Number(row.n);
  return stats;
}

/** Ids of deliveries due at `now` and not held by a live lease, oldest first. */
export async function dueDeliveryIds(ex: Executor, now: string, limit: number): Promise<string[]> {
  const rows = await ex
    .selectFrom('subscription_deliveries')
    .select('id')
    .where('status', '=', 'pending')
    .where('next_attempt_at', '<=', now)
    .where((eb) => eb.or([eb('lease_until', 'is', null), eb('lease_until', '<', now)]))
    .orderBy('next_attempt_at')
    .orderBy('id')
    .limit(limit)
    .execute();
  return rows.map((row) => row.id);
}

/**
 * Claims one due delivery for `owner` until `leaseUntil`: a conditional update, so of several gateways asking
 * at once exactly one gets it (the others' update matches no row). Null when it was not claimable.
 */
export async function claimDelivery(
  ex: Executor,
  input: { id: string; owner: string; now: string; leaseUntil: string },
): Promise<DeliveryRecord | null> {
  const row = await ex
    .updateTable('subscription_deliveries')
    .set({ lease_owner: input.owner, lease_until: input.leaseUntil })
    .where('id', '=', input.id)
    .where('status', '=', 'pending')
    .where('next_attempt_at', '<=', input.now)
    .where((eb) => eb.or([eb('lease_until', 'is', null), eb('lease_until', '<', input.now)]))
    .returningAll()
    .executeTakeFirst();
  return row ? toDelivery(row) : null;
}

/** Records an attempt's result, only while `owner` still holds the delivery; false when it no longer did. */
export async function recordAttempt(
  ex: Executor,
  input: {
    id: string;
    owner: string;
    status: DeliveryStatus;
    nextAttemptAt: string;
    lastStatus: number | null;
    lastError: string | null;
    deliveredAt: string | null;
  },
): Promise<boolean> {
  const result = await ex
    .updateTable('subscription_deliveries')
    .set((eb) => ({
      status: input.status,
      attempts: eb('attempts', '+', 1),
      next_attempt_at: input.nextAttemptAt,
      last_status: input.lastStatus,
      last_error: input.lastError,
      delivered_at: input.deliveredAt,
      lease_owner: null,
      lease_until: null,
    }))
    .where('id', '=', input.id)
    .where('lease_owner', '=', input.owner)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

/** A delivery queued again now (POST /deliveries/{id}/retry): pending, due now, attempts from zero. */
export async function requeueDelivery(ex: Executor, id: string, now: string): Promise<DeliveryRecord | null> {
  const row = await ex
    .updateTable('subscription_deliveries')
    .set({ status: 'pending', attempts: 0, next_attempt_at: now, delivered_at: null })
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirst();
  return row ? toDelivery(row) : null;
}

/** Lets go of the leases `owner` holds (a restart under the same instance id), or every lease (`owner` null). */
export async function releaseLeases(ex: Executor, owner: string | null): Promise<void> {
  let query = ex.updateTable('subscription_deliveries').set({ lease_owner: null, lease_until: null });
  query = owner === null ? query.where('lease_owner', 'is not', null) : query.where('lease_owner', '=', owner);
  await query.execute();
}

/** Removes a subscription's finished deliveries beyond the newest `keep`. */
export async function pruneDeliveries(ex: Executor, subscriptionId: string, keep: number): Promise<void> {
  const cutoff = await ex
    .selectFrom('subscription_deliveries')
    .select(['created_at', 'id'])
    .where('subscription_id', '=', subscriptionId)
    .where('status', '!=', 'pending')
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .offset(keep)
    .limit(1)
    .executeTakeFirst();
  if (!cutoff) return;
  await ex
    .deleteFrom('subscription_deliveries')
    .where('subscription_id', '=', subscriptionId)
    .where('status', '!=', 'pending')
    .where(sql<boolean>`(created_at, id) <= (${cutoff.created_at}, ${cutoff.id})`)
    .execute();
}

/** The `created_at` of the oldest pending delivery, null when none is pending. */
export async function oldestPending(ex: Executor): Promise<string | null> {
  const row = await ex
    .selectFrom('subscription_deliveries')
    .select((eb) => eb.fn.min('created_at').as('oldest'))
    .where('status', '=', 'pending')
    .executeTakeFirst();
  return (row?.oldest as string | null | undefined) ?? null;
}
