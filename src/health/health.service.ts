/** Spec: Health report. */
export interface HealthReport {
  status: 'healthy' | 'degraded' | 'unhealthy';
  server_running: boolean;
  active_channels: Record<string, string>;
  ws_clients: number;
  provider: string;
  media_cache_mb: number;
  active_sessions: number;
  total_sessions: number;
  /** Present when unhealthy: why, in the error envelope's shape. */
  error?: { code: 'UNAVAILABLE'; message: string };
}

/** What the health report reads; every probe is cheap and side-effect free. */
export interface HealthProbes {
  /** Rejects when the store cannot be reached. */
  pingStore: () => Promise<void>;
  isDraining: () => boolean;
  /** `<type>:<model>` of the model provider. */
  provider: () => string;
  providerIsEcho: () => boolean;
  /** Channel name → state (`connected`, `disconnected`, `disabled`, `error`). */
  channels: () => Record<string, string>;
  wsClients: () => number;
  /** Session counts; may reject when the store is down (then zeros are shown). */
  sessionCounts: () => Promise<{ active: number; total: number }>;
}

/** Builds the report: unhealthy when the store is unreachable or draining, degraded on echo or a channel error. */
export async function healthReport(probes: HealthProbes): Promise<HealthReport> {
  const channels = probes.channels();
  let storeOk = true;
  try {
    await probes.pingStore();
  } catch {
    storeOk = false;
  }
  const draining = probes.isDraining();
  let counts = { active: 0, total: 0 };
  if (storeOk) counts = await probes.sessionCounts().catch(() => counts);
  const report: HealthReport = {
    status: 'healthy',
    server_running: !draining,
    active_channels: channels,
    ws_clients: probes.wsClients(),
    provider: probes.provider(),
    media_cache_mb: 0,
    active_sessions: counts.active,
    total_sessions: counts.total,
  };
  if (!storeOk || draining) {
    report.status = 'unhealthy';
    report.error = { code: 'UNAVAILABLE', message: draining ? 'gateway is shutting down' : 'store unreachable' };
  } else if (probes.providerIsEcho() || Object.values(channels).includes('error')) {
    report.status = 'degraded';
  }
  return report;
}
