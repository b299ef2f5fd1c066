import type { GatewayModule } from '../module.js';
import { securityRoutes } from './self-audit.routes.js';

/** The security self-audit (ADR 0023): GET /security/audit over the running configuration. */
export function selfAuditModule(config: Parameters<typeof securityRoutes>[0]['config']): GatewayModule {
  return { name: 'self-audit', routes: securityRoutes({ config }) };
}
