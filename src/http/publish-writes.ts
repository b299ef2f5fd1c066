import { HttpResult, type RouteDef } from './route.js';

/** Where a resource's writes are published: the live feed's topic of that resource (`EventBus.publisher`). */
export interface WritePublisher {
  /** False when nobody listens: the write is not published (no payload is built). */
  hasListeners(): boolean;
  publish(event: string, data: Record<string, unknown>): void;
}

const VERBS: Record<string, string> = {
  authorize: 'authorized',
  revoke: 'revoked',
  trigger: 'triggered',
  approve: 'approved',
  deny: 'denied',
  enable: 'enabled',
  disable: 'disabled',
  reconnect: 'reconnected',
  reindex: 'reindexed',
};

/** The live-feed event name of a write route: created, updated, deleted, or its last path word. */
function eventName(route: RouteDef): string {
  const last = route.path.split('/').pop() ?? '';
  if (route.method === 'DELETE') return 'deleted';
  if (route.method === 'PUT' || route.method === 'PATCH') return 'updated';
  if (last.startsWith(':')) return 'updated';
  // POST /cron → created; POST /cron/:id/authorize → authorized; anything else → updated.
  if (!route.path.slice(1).includes('/')) return 'created';
  return VERBS[last] ?? 'updated';
}

/**
 * Wraps the write routes of a resource so every successful write is also
 * published on the live feed (`{type: "event", topic, event, data}` on the
 * WebSocket) with the object the route answered, through `publisher` (the
 * events capability's, handed over by the composition root).
 */
export function publishWrites(routes: RouteDef[], publisher: WritePublisher): RouteDef[] {
  return routes.map((route) => {
    if (route.method === 'GET') return route;
    const event = eventName(route);
    return {
      ...route,
      handler: async (ctx, input) => {
        const result: unknown = await route.handler(ctx, input);
        if (publisher.hasListeners()) {
          const body = result instanceof HttpResult ? result.body : result;
          if (body && typeof body === 'object' && !Array.isArray(body)) {
            publisher.publish(event, body as Record<string, unknown>);
          }
        }
        return result;
      },
    };
  });
}
