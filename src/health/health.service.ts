/**
 * The state of one part of the gateway in the health report (ADR 0024):
 * `ok`; `degraded` (works, with less: the echo provider); `failing` (does not
 * work now: provider unreachable, a channel in error, store unreachable);
 * `unknown` (not checked yet). `message` says why when it is not plain `ok`.
 */
export interface ComponentHealth {
  status: 'ok' | 'degraded' | 'failing' | 'unknown';
  message?: string;
}

/**
 * The `memory` component (`limits.overload`, ADR 0043): the measure the
 * watermark compares, its value at the last sample and the watermark;
 * `degraded` while new work is refused because the value is above it.
 */
export interface MemoryHealth extends ComponentHealth {
  status: 'ok' | 'degraded';
  measure: 'rss' | 'heap';
  /** The measure at the last sample (twice a second), in whole MB. */
  value_mb: number;
  /** `limits.overload.memory_watermark_mb`; null: none. */
  watermark_mb: number | null;
  /** True while new work is refused because the measure is above the watermark. */
  shedding: boolean;
}

/** The parts the report judges, each with its state. */
export interface HealthComponents {
  store: ComponentHealth;
  provider: ComponentHealth;
  channels: ComponentHealth;
  bus: ComponentHealth;
  /** The configured MCP servers (DECISIONS §19): ok when all are ready (or none is configured). */
  mcp: ComponentHealth;
  /** The memory watermark of load shedding (ADR 0043): degraded while it refuses new work. */
  memory: MemoryHealth;
}

/** A gateway process seen on the shared bus recently (its heartbeat, ADR 0025). */
export interface PeerHealth {
  instance_id: string;
  version: string;
  /** Whole seconds since its last message. */
  last_seen_seconds: number;
}

/**
 * Spec: Health report, plus the version, the uptime and the state of each
 * component (ADR 0024), this process's instance id and, with a shared bus,
 * the other processes seen on it (ADR 0025).
 */
export interface HealthReport {
  status: 'healthy' | 'degraded' | 'unhealthy';
  /** When not healthy: the components that make it so, with why (`provider: openai: cannot reach …`). */
  message?: string;
  server_running: boolean;
  active_channels: Record<string, string>;
  ws_clients: number;
  provider: string;
  media_cache_mb: number;
  active_sessions: number;
  total_sessions: number;
  version: string;
  uptime_seconds: number;
  /** This process (the ledger's `owner` of the turns it runs). */
  instance_id: string;
  /** With a shared bus (redis, nats): the other gateways heard from within their last three heartbeats. */
  peers?: PeerHealth[];
  components: HealthComponents;
  /** Present when unhealthy: why, in the error envelope's shape. */
  error?: { code: 'UNAVAILABLE'; message: string };
}

/** What the health report reads; every probe is cheap, bounded in time and side-effect free. */
export interface HealthProbes {
  /** Rejects when the store cannot be reached, or when its writes fail (a full disk answers reads). */
  pingStore: () => Promise<void>;
  isDraining: () => boolean;
  /** `<type>:<model>` of the model provider. */
  provider: () => string;
  /** The provider component (`ProviderHealth.check`): settles within its short wait, never rejects. */
  providerHealth: () => Promise<ComponentHealth>;
  /** Channel name → state (`connected`, `disconnected`, `disabled`, `error`). */
  channels: () => Record<string, string>;
  /** The bus component: the adapter's connection state (ADR 0025). */
  bus: () => ComponentHealth;
  /**
   * The MCP component: `ok` when every configured server is ready or none is; `degraded` when some are not
   * ready; `failing` when every one failed; the message names those not ready.
   */
  mcp: () => ComponentHealth;
  /** The memory component: the last sample against the watermark (never measured per request). */
  memory: () => MemoryHealth;
  /** This process's instance id. */
  instanceId: () => string;
  /** Peers seen on a shared bus; null for the local bus (no peers to see). */
  peers: () => PeerHealth[] | null;
  wsClients: () => number;
  /** Session counts; may reject when the store is down (then zeros are shown). */
  sessionCounts: () => Promise<{ active: number; total: number }>;
  /** The package version. */
  version: () => string;
  /** Whole seconds since the gateway started. */
  uptimeSeconds: () => number;
}

/** The channels component: failing while some channel reports an error, naming them. */
export function channelsHealth(channels: Record<string, string>): ComponentHealth {
  const inError = Object.entries(channels)
    .filter(([, state]) => state === 'error')
    .map(([name]) => name);
  if (inError.length === 0) return { status: 'ok' };
  return {
    status: 'failing',
    message: `${inError.join(', ')} ${inError.length === 1 ? 'reports' : 'report'} an error`,
  };
}

/**
 * Builds the report (spec: Health; DECISIONS §9; ADR 0024): unhealthy when
 * the store is unreachable or the gateway is draining; otherwise degraded
 * when any component is not `ok` or `unknown` (the echo provider, an
 * unreachable or failing provider, a channel in error, a shared bus whose
 * connection is lost, an MCP server not ready, memory above the watermark
 * of load shedding); otherwise healthy.
 * The store ping and the provider check run side by side.
 */
export async function healthReport(probes: HealthProbes): Promise<HealthReport> {
  const channels = probes.channels();
  const [storeOk, provider] = await Promise.all([
    probes.pingStore().then(
      () => true,
      () => false,
    ),
    probes.providerHealth(),
  ]);
  const draining = probes.isDraining();
  const peers = probes.peers();
  let counts = { active: 0, total: 0 };
  if (storeOk) counts = await probes.sessionCounts().catch(() => counts);
  const components: HealthComponents = {
    store: storeOk ? { status: 'ok' } : { status: 'failing', message: 'store unreachable or refusing writes' },
    provider,
    channels: channelsHealth(channels),
    bus: probes.bus(),
    mcp: probes.mcp(),
    memory: probes.memory(),
  };
  const notOk = (Object.entries(components) as Array<[string, ComponentHealth]>).filter(
    ([, component]) => component.status === 'degraded' || component.status === 'failing',
  );
  const reasons = notOk.map(([name, component]) => `${name}: ${component.message ?? component.status}`);
  let status: HealthReport['status'] = 'healthy';
  let error: HealthReport['error'];
  if (!storeOk || draining) {
    status = 'unhealthy';
    error = { code: 'UNAVAILABLE', message: draining ? 'gateway is shutting down' : 'store unreachable' };
    if (draining) reasons.unshift(error.message);
  } else if (notOk.length > 0) {
    status = 'degraded';
  }
  return {
    status,
    ...(status !== 'healthy' ? { message: reasons.join('; ') } : {}),
    server_running: !draining,
    active_channels: channels,
    ws_clients: probes.wsClients(),
    provider: probes.provider(),
    media_cache_mb: 0,
    active_sessions: counts.active,
    total_sessions: counts.total,
    version: probes.version(),
    uptime_seconds: Math.max(0, Math.floor(probes.uptimeSeconds())),
    instance_id: probes.instanceId(),
    ...(peers ? { peers } : {}),
    components,
    ...(error ? { error } : {}),
  };
}
