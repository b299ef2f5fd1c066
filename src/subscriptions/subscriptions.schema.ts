import { z } from 'zod';
import { objectBody, q } from '../http/validation.js';
import { EVENT_NAMES } from './subscriptions.events.js';
import { DELIVERY_STATUSES } from './subscriptions.repo.js';
import { secretKey } from './subscriptions.sign.js';

const eventName = z.enum(EVENT_NAMES, { message: `must be one of ${EVENT_NAMES.join(', ')}` });
const events = z
  .array(eventName)
  .min(1, 'must name at least one event')
  .max(EVENT_NAMES.length)
  .transform((list) => [...new Set(list)]);
const url = z.string().min(1).max(2048);
const description = z.string().max(500).nullable();

/** `{id}` of a subscription. */
export const subscriptionParams = z.object({ id: z.string().min(1).max(100) });
/** `{id}` of a delivery. */
export const deliveryParams = z.object({ id: z.string().min(1).max(100) });

/** POST /subscriptions. */
export const createSubscriptionBody = objectBody({
  url,
  events,
  description: description.optional(),
  secret: z
    .string()
    .refine((value) => secretKey(value) !== null, 'must be whsec_ followed by 24 to 64 bytes in base64')
    .optional(),
  enabled: z.boolean().optional(),
});

/** PATCH /subscriptions/{id}: any subset; only what is present changes. */
export const updateSubscriptionBody = objectBody({
  url: url.optional(),
  events: events.optional(),
  description: description.optional(),
  enabled: z.boolean().optional(),
});

/** GET /subscriptions/{id}/deliveries. */
export const deliveriesQuery = z.object({
  status: z.enum(DELIVERY_STATUSES, { message: `must be one of ${DELIVERY_STATUSES.join(', ')}` }).optional(),
  limit: q.int(1, 100, 20),
  offset: q.int(0, 1_000_000, 0),
});

export type CreateSubscriptionInput = z.output<typeof createSubscriptionBody>;
export type UpdateSubscriptionInput = z.output<typeof updateSubscriptionBody>;

const timestamp = z.iso.datetime({ precision: 3 }).describe('ISO 8601 UTC with milliseconds');

const statsSchema = z.object({ pending: z.number().int(), failed: z.number().int(), delivered: z.number().int() });

/** A subscription (never its secret). */
export const subscriptionSchema = z
  .object({
    id: z.string(),
    url: z.string(),
    events: z.array(z.string()),
    description: z.string().nullable(),
    enabled: z.boolean(),
    created_at: timestamp,
    updated_at: timestamp,
    stats: statsSchema.optional().describe('Its deliveries by status (single reads)'),
  })
  .meta({ id: 'Subscription', description: 'An event subscription' });

/** POST /subscriptions: the subscription and its secret, shown only here. */
export const createdSubscriptionSchema = subscriptionSchema
  .extend({ secret: z.string().describe('whsec_…: the signing secret, shown only in this answer') })
  .meta({ id: 'CreatedSubscription', description: 'A new subscription with its secret' });

export const subscriptionListSchema = z
  .object({ items: z.array(subscriptionSchema) })
  .meta({ id: 'SubscriptionList', description: 'Every subscription, oldest first' });

export const subscriptionDeletedSchema = z
  .object({ id: z.string(), deleted: z.literal(true) })
  .meta({ id: 'SubscriptionDeleted', description: 'The subscription was deleted, with its deliveries' });

/** One delivery of an event to a subscription. */
export const deliverySchema = z
  .object({
    id: z.string().describe('Also its webhook-id header, the same on every attempt'),
    subscription_id: z.string(),
    event_type: z.string(),
    status: z.enum(DELIVERY_STATUSES),
    attempts: z.number().int().min(0),
    next_attempt_at: timestamp.nullable().describe('When it is tried next; null once delivered or failed'),
    last_status: z.number().int().nullable().describe("The last answer's HTTP status; null without one"),
    last_error: z.string().nullable(),
    created_at: timestamp,
    delivered_at: timestamp.nullable(),
  })
  .meta({ id: 'Delivery', description: 'A delivery of an event to a subscription' });

export const deliveryListSchema = z
  .object({
    items: z.array(deliverySchema),
    total: z.number().int().min(0),
    limit: z.number().int(),
    offset: z.number().int(),
  })
  .meta({ id: 'DeliveryList', description: "A subscription's deliveries, newest first" });

/** POST /subscriptions/{id}/test. */
export const testResultSchema = z
  .object({
    delivery_id: z.string(),
    ok: z.boolean(),
    status: z.number().int().nullable().describe("The receiver's HTTP status; null when none answered"),
    error: z.string().nullable(),
    duration_ms: z.number().min(0),
  })
  .meta({ id: 'SubscriptionTestResult', description: 'The result of one test attempt, made now' });
