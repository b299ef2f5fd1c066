export { healthRoutes } from './health.routes.js';
export { healthReport, type HealthProbes, type HealthReport } from './health.service.js';
