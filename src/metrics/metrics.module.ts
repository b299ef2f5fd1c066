import { sseCounts } from '../http/sse.js';
import type { GatewayModule } from '../module.js';
import type { GatewayMetrics } from './metrics.js';
import { metricsRoutes } from './metrics.routes.js';

/** What the gauges of GET /metrics read at scrape time. */
export interface MetricsSources {
  messages: {
    gauges: { queued(): number; running(): number; waiters(): number; idempotencyRecords(): number };
  };
  websocket: { clientCount(): number };
}

/**
 * The metrics capability: GET /metrics, with the gauges read from the message path, the WebSocket and the
 * HTTP server's SSE streams (known once the server is built: at mount).
 */
export function metricsModule(metrics: GatewayMetrics, sources: MetricsSources): GatewayModule {
  const { gauges } = sources.messages;
  metrics.gauge({
    queueDepth: () => gauges.queued(),
    turnsRunning: () => gauges.running(),
    waiters: () => gauges.waiters(),
    idempotencyRecords: () => gauges.idempotencyRecords(),
    wsClients: () => sources.websocket.clientCount(),
  });
  return {
    name: 'metrics',
    routes: metricsRoutes(metrics),
    mount: (app) => metrics.sseGauge(() => sseCounts(app).open),
  };
}
