import type { Logger } from '../lib/logger.js';
import type { GatewayModule } from '../module.js';
import { settingsRoutes } from './settings.routes.js';
import type { SettingsService } from './settings.service.js';

/** The configuration API (DECISIONS §9): GET, validate, PUT and PATCH /config over the running configuration. */
export function settingsModule(service: SettingsService, logger: Logger): GatewayModule {
  return { name: 'settings', routes: settingsRoutes({ service, logger }) };
}
