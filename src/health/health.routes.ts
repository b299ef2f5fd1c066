import { defineRoute, HttpResult, type RouteDef } from '../http/route.js';
import { healthReportSchema } from './health.schema.js';
import { healthReport, type HealthProbes } from './health.service.js';

/** GET /health: no auth, not rate limited, answered while draining (spec: Health). */
export function healthRoutes(probes: HealthProbes): RouteDef[] {
  return [
    defineRoute({
      method: 'GET',
      path: '/health',
      permission: 'none',
      rateGroup: null,
      drainExempt: true,
      summary: 'Health report; 503 when unhealthy',
      tags: ['health'],
      responses: [
        { status: 200, description: 'Healthy or degraded', schema: healthReportSchema },
        {
          status: 503,
          description: 'Unhealthy: the store is unreachable, or the gateway is draining',
          schema: healthReportSchema,
        },
      ],
      handler: async () => {
        const report = await healthReport(probes);
        return new HttpResult(report.status === 'unhealthy' ? 503 : 200, report);
      },
    }),
  ];
}
