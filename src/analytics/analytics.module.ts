import type { Clock } from '../lib/clock.js';
import type { GatewayModule } from '../module.js';
import type { Store } from '../store/index.js';
import { analyticsRoutes } from './analytics.routes.js';

/** The analytics capability (DECISIONS §9): cost and usage over the store, with the tasks and skills counts. */
export function analyticsModule(deps: {
  store: Pick<Store, 'db' | 'driver'>;
  clock: Clock;
  tasks: { countCompletedSince(since: string): Promise<number> };
  skills: { countUsedSince(since: string): Promise<number> };
}): GatewayModule {
  const { tasks, skills } = deps;
  return {
    name: 'analytics',
    routes: analyticsRoutes({
      ...deps,
      extraCounts: async (since) => ({
        tasks_completed: await tasks.countCompletedSince(since),
        skills_used: await skills.countUsedSince(since),
      }),
    }),
  };
}
