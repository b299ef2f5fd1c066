import { created, defineRoute, type RouteDef } from '../http/route.js';
import { presentDelivery, presentSubscription } from './subscriptions.presenter.js';
import {
  createSubscriptionBody,
  createdSubscriptionSchema,
  deliveriesQuery,
  deliveryListSchema,
  deliveryParams,
  deliverySchema,
  subscriptionDeletedSchema,
  subscriptionListSchema,
  subscriptionParams,
  subscriptionSchema,
  testResultSchema,
  updateSubscriptionBody,
} from './subscriptions.schema.js';
import type { SubscriptionService } from './subscriptions.service.js';

/**
 * Event subscriptions API (DECISIONS §20): admin only, reads included. The secret is in the create answer and
 * nowhere else. Unknown ids answer 404.
 */
export function subscriptionRoutes(service: SubscriptionService): RouteDef[] {
  const tags = ['subscriptions'];
  const withStats = async (id: string) => presentSubscription(await service.get(id), await service.stats(id));
  return [
    defineRoute({
      method: 'GET',
      path: '/subscriptions',
      permission: 'admin',
      summary: 'Every event subscription, oldest first',
      tags,
      responses: [{ status: 200, description: 'The subscriptions', schema: subscriptionListSchema }],
      handler: async () => ({ items: (await service.list()).map((record) => presentSubscription(record)) }),
    }),
    defineRoute({
      method: 'POST',
      path: '/subscriptions',
      permission: 'admin',
      summary: 'Subscribe a URL to events; answers the signing secret, shown only here',
      tags,
      body: createSubscriptionBody,
      responses: [{ status: 201, description: 'The subscription and its secret', schema: createdSubscriptionSchema }],
      handler: async (_ctx, { body }) => {
        const record = await service.create(body);
        return created({ ...presentSubscription(record), secret: record.secret });
      },
    }),
    defineRoute({
      method: 'GET',
      path: '/subscriptions/:id',
      permission: 'admin',
      summary: 'One subscription with its deliveries by status',
      tags,
      params: subscriptionParams,
      responses: [{ status: 200, description: 'The subscription', schema: subscriptionSchema }],
      handler: async (_ctx, { params }) => withStats(params.id),
    }),
    defineRoute({
      method: 'PATCH',
      path: '/subscriptions/:id',
      permission: 'admin',
      summary: "Change a subscription's URL, events, description or enabled",
      tags,
      params: subscriptionParams,
      body: updateSubscriptionBody,
      responses: [{ status: 200, description: 'The subscription after the change', schema: subscriptionSchema }],
      handler: async (_ctx, { params, body }) => {
        await service.update(params.id, body);
        return withStats(params.id);
      },
    }),
    defineRoute({
      method: 'DELETE',
      path: '/subscriptions/:id',
      permission: 'admin',
      summary: 'Delete a subscription and its deliveries',
      tags,
      params: subscriptionParams,
      responses: [{ status: 200, description: 'Deleted', schema: subscriptionDeletedSchema }],
      handler: async (_ctx, { params }) => {
        await service.remove(params.id);
        return { id: params.id, deleted: true as const };
      },
    }),
    defineRoute({
      method: 'POST',
      path: '/subscriptions/:id/test',
      permission: 'admin',
      summary: 'Send a subscription.ping event now and answer the attempt',
      tags,
      params: subscriptionParams,
      responses: [{ status: 200, description: "The attempt's result", schema: testResultSchema }],
      handler: async (_ctx, { params }) => {
        const result = await service.test(params.id);
        const { deliveryId, ok, status, error, durationMs } = result;
        return { delivery_id: deliveryId, ok, status, error, duration_ms: durationMs };
      },
    }),
    defineRoute({
      method: 'GET',
      path: '/subscriptions/:id/deliveries',
      permission: 'admin',
      summary: "A subscription's deliveries, newest first, filtered by status",
      tags,
      params: subscriptionParams,
      query: deliveriesQuery,
      responses: [{ status: 200, description: 'One page of deliveries', schema: deliveryListSchema }],
      handler: async (_ctx, { params, query }) => {
        const page = { status: query.status ?? null, limit: query.limit, offset: query.offset };
        const { items, total } = await service.deliveries(params.id, page);
        return { items: items.map(presentDelivery), total, limit: query.limit, offset: query.offset };
      },
    }),
    defineRoute({
      method: 'POST',
      path: '/deliveries/:id/retry',
      permission: 'admin',
      summary: 'Queue a delivery again now (a failed one, or any)',
      tags,
      params: deliveryParams,
      responses: [{ status: 200, description: 'The delivery, pending and due now', schema: deliverySchema }],
      handler: async (_ctx, { params }) => presentDelivery(await service.retry(params.id)),
    }),
  ];
}
