/** Metrics: the gateway's Prometheus registry and GET /metrics. */
export { GatewayMetrics } from './metrics.js';
export { metricsRoutes } from './metrics.routes.js';
export { metricsModule, type MetricsSources } from './metrics.module.js';
