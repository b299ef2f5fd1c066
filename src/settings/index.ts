/** Settings: the running configuration, its API (GET/PUT/PATCH /config, POST /config/validate) and live apply. */
export {
  AUTH_LOCKED_MESSAGE,
  ConfigChangeError,
  PATCH_RESTART_MESSAGE,
  restoreRedactedSecrets,
  SettingsService,
  type ConfigChangeResult,
  type ConfigCheck,
  type SettingsListener,
  type SettingsServiceOptions,
} from './settings.service.js';
export { settingsRoutes, type SettingsRoutesDeps } from './settings.routes.js';
export {
  agentListener,
  liveAgentSettings,
  logLevelListener,
  pinoLevelName,
  rateLimitListener,
  taskConcurrencyListener,
  type LiveAgentSettings,
} from './settings.hooks.js';
export { ConfigFileError, writeFileAtomic } from './settings.file.js';
export { settingsModule } from './settings.module.js';
