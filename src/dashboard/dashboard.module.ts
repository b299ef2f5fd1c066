import type { Guard } from '../http/guard.js';
import type { Logger } from '../lib/logger.js';
import type { GatewayModule } from '../module.js';
import { registerDashboardRoutes } from './dashboard.routes.js';

/** The dashboard (DECISIONS §14, ADR 0021): its files at `/` and `/assets/*`, mounted on the API server. */
export function dashboardModule(deps: { guard: Guard; logger: Logger; root?: string | undefined }): GatewayModule {
  const { root, ...rest } = deps;
  return {
    name: 'dashboard',
    mount: (app) => void registerDashboardRoutes(app, { ...rest, ...(root ? { root } : {}) }),
  };
}
