export { healthRoutes } from './health.routes.js';
export {
  channelsHealth,
  healthReport,
  type ComponentHealth,
  type HealthComponents,
  type HealthProbes,
  type MemoryHealth,
  type HealthReport,
  type PeerHealth,
} from './health.service.js';
export {
  DEFAULT_PROVIDER_HEALTH_POLICY,
  ProviderHealth,
  probeTimers,
  type ChangeLogger,
  type ProbeTimers,
  type ProviderHealthOptions,
  type ProviderHealthPolicy,
} from './provider-health.js';
export { healthModule, type HealthModuleDeps } from './health.module.js';
