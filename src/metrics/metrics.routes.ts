import { z } from 'zod';
import { defineRoute, HttpResult, type RouteDef } from '../http/route.js';
import type { GatewayMetrics } from './metrics.js';

/** GET /metrics (Prometheus text), guarded like a read endpoint. */
export function metricsRoutes(metrics: GatewayMetrics): RouteDef[] {
  return [
    defineRoute({
      method: 'GET',
      path: '/metrics',
      absolutePaths: ['/metrics'],
      permission: 'api',
      summary: 'Prometheus metrics',
      tags: ['metrics'],
      responses: [
        {
          status: 200,
          description: 'The Prometheus text exposition format',
          contentType: 'text/plain',
          schema: z.string(),
        },
      ],
      handler: async () => new HttpResult(200, await metrics.render(), { 'content-type': metrics.contentType }),
    }),
  ];
}
