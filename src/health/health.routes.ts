import { defineRoute, HttpResult, type RouteDef } from '../http/route.js';
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
      handler: async () => {
        const report = await healthReport(probes);
        return new HttpResult(report.status === 'unhealthy' ? 503 : 200, report);
      },
    }),
  ];
}
