import type { EventBus } from '../events/index.js';
import { publishWrites } from '../http/publish-writes.js';
import type { Clock } from '../lib/clock.js';
import type { IdGenerator } from '../lib/ids.js';
import type { GatewayModule } from '../module.js';
import type { SearchEngine } from '../search/index.js';
import type { Store } from '../store/index.js';
import { knowledgeRoutes } from './knowledge.routes.js';
import { KnowledgeService } from './knowledge.service.js';
import { knowledgeTools } from './knowledge.tools.js';

/** The knowledge capability (DECISIONS §9): its routes (writes on the live feed's `knowledge` topic) and tools. */
export function knowledgeModule(deps: {
  store: Store;
  clock: Clock;
  ids: IdGenerator;
  search: SearchEngine;
  bus: Pick<EventBus, 'publisher'>;
}): GatewayModule {
  const service = new KnowledgeService(deps);
  return {
    name: 'knowledge',
    routes: publishWrites(knowledgeRoutes({ service }), deps.bus.publisher('knowledge')),
    tools: knowledgeTools(service),
  };
}
