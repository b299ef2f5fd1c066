import type { ClusterBus } from '../events/index.js';
import type { GatewayModule } from '../module.js';
import type { ModelProvider } from '../runtime/index.js';
import type { Store } from '../store/index.js';
import type { Clock } from '../lib/clock.js';
import { packageVersion } from '../lib/version.js';
import { healthRoutes } from './health.routes.js';
import type { ComponentHealth, MemoryHealth } from './health.service.js';
import type { ProviderHealth } from './provider-health.js';

/** What GET /health reads (DECISIONS §9, ADR 0024). */
export interface HealthModuleDeps {
  store: Pick<Store, 'ping' | 'checkWrites'>;
  isDraining: () => boolean;
  provider: Pick<ModelProvider, 'type' | 'model'>;
  providerHealth: Pick<ProviderHealth, 'check'>;
  channels: { states(): Record<string, string> };
  cluster: Pick<ClusterBus, 'health' | 'instanceId' | 'shared' | 'peerList'>;
  websocket: { clientCount(): number };
  sessions: { counts(): Promise<{ active: number; total: number }> };
  /** The `mcp` component (the MCP servers whose tools the agents call, DECISIONS §19). */
  mcp: () => ComponentHealth;
  /** Load shedding (ADR 0043): the `memory` component, from its last sample. */
  overload: { memoryHealth(): MemoryHealth };
  clock: Clock;
}

/** The health capability: GET /health over the parts it judges; uptime counts from when this is built. */
export function healthModule(deps: HealthModuleDeps): GatewayModule {
  const startedAt = deps.clock.now();
  return {
    name: 'health',
    routes: healthRoutes({
      pingStore: async () => {
        await deps.store.ping();
        await deps.store.checkWrites(); // a full disk still answers the ping (ADR 0014)
      },
      isDraining: deps.isDraining,
      provider: () => `${deps.provider.type}:${deps.provider.model}`,
      providerHealth: () => deps.providerHealth.check(),
      channels: () => deps.channels.states(),
      bus: () => deps.cluster.health(),
      mcp: deps.mcp,
      memory: () => deps.overload.memoryHealth(),
      instanceId: () => deps.cluster.instanceId,
      peers: () => (deps.cluster.shared ? deps.cluster.peerList() : null),
      wsClients: () => deps.websocket.clientCount(),
      sessionCounts: () => deps.sessions.counts(),
      version: packageVersion,
      uptimeSeconds: () => (deps.clock.now() - startedAt) / 1000,
    }),
  };
}
