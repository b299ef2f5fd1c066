import type { EventBus } from '../events/index.js';
import type { Clock } from '../lib/clock.js';
import type { IdGenerator } from '../lib/ids.js';
import type { GatewayModule } from '../module.js';
import type { Store } from '../store/index.js';
import { presentSkill } from './skills.presenter.js';
import { skillRoutes } from './skills.routes.js';
import { createSkillsService, type SkillsService } from './skills.service.js';
import { skillTools } from './skills.tools.js';

/** The skills service, every committed change on the live feed's `skills` topic (the message path reads it too). */
export function openSkills(deps: {
  store: Store;
  clock: Clock;
  ids: IdGenerator;
  bus: Pick<EventBus, 'publish'>;
}): SkillsService {
  return createSkillsService({
    ...deps,
    onChange: (event, skill) => deps.bus.publish('skills', event, presentSkill(skill)),
  });
}

/** The skills capability (DECISIONS §9): its routes and tools. */
export function skillsModule(service: SkillsService): GatewayModule {
  return { name: 'skills', routes: skillRoutes({ service }), tools: skillTools(service) };
}
