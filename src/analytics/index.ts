/** Analytics capability: cost, usage and the variant analytics endpoints (spec: Analytics endpoints). */
export { analyticsRoutes } from './analytics.routes.js';
export { type AnalyticsServiceDeps, type ExtraCounts } from './analytics.service.js';
export { analyticsModule } from './analytics.module.js';
