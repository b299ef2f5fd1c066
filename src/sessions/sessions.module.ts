import type { EventBus } from '../events/index.js';
import { publishWrites } from '../http/publish-writes.js';
import type { GatewayModule } from '../module.js';
import { sessionRoutes, type SessionOriginPolicy } from './sessions.routes.js';
import type { SessionService } from './sessions.service.js';

/** The sessions capability (DECISIONS §5): its routes, writes on the live feed's `sessions` topic. */
export function sessionsModule(
  service: SessionService,
  bus: Pick<EventBus, 'publisher'>,
  originOf?: SessionOriginPolicy,
): GatewayModule {
  const routes = sessionRoutes({ service, ...(originOf ? { originOf } : {}) });
  return { name: 'sessions', routes: publishWrites(routes, bus.publisher('sessions')) };
}
