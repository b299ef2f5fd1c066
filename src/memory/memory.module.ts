import type { EventBus } from '../events/index.js';
import type { IdGenerator } from '../lib/ids.js';
import type { Clock } from '../lib/clock.js';
import type { GatewayModule } from '../module.js';
import type { SearchEngine } from '../search/index.js';
import type { Store } from '../store/index.js';
import { presentMemory } from './memory.presenter.js';
import { memoryRoutes } from './memory.routes.js';
import { MemoryService } from './memory.service.js';
import { memoryTools } from './memory.tools.js';

/** The memory capability (DECISIONS §9): its routes and tools; every change on the live feed's `memory` topic. */
export function memoryModule(deps: {
  store: Store;
  clock: Clock;
  ids: IdGenerator;
  search: SearchEngine;
  bus: Pick<EventBus, 'publish'>;
}): GatewayModule {
  const service = new MemoryService({
    ...deps,
    onChange: (event, entry) =>
      deps.bus.publish('memory', event, 'content' in entry ? { ...presentMemory(entry) } : { id: entry.id }),
  });
  return { name: 'memory', routes: memoryRoutes({ service }), tools: memoryTools(service) };
}
