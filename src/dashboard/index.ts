/** The dashboard: the built web app (`dist/web/`) served at `/` and `/assets/*` (DECISIONS §14, ADR 0021). */
export { registerDashboardRoutes, type DashboardRoutesDeps } from './dashboard.routes.js';
export {
  createDashboardFiles,
  DASHBOARD_BUILD_COMMAND,
  DASHBOARD_CSP,
  defaultDashboardRoot,
  isDashboardRoute,
  type DashboardFile,
  type DashboardFiles,
  type DashboardLookup,
} from './dashboard.service.js';
export { dashboardModule } from './dashboard.module.js';
