import type { EventBus } from '../events/index.js';
import { publishWrites } from '../http/publish-writes.js';
import type { Clock } from '../lib/clock.js';
import type { IdGenerator } from '../lib/ids.js';
import type { GatewayModule } from '../module.js';
import type { Store } from '../store/index.js';
import { cronRoutes } from './cron.routes.js';
import type { CronRunner } from './cron.service.js';

/**
 * The cron capability (DECISIONS §9): its routes (writes on the live feed's
 * `cron` topic) over the scheduler that fires the jobs, which starts with
 * the gateway and is the first to stop.
 */
export function cronModule(deps: {
  store: Store;
  clock: Clock;
  ids: IdGenerator;
  bus: Pick<EventBus, 'publisher'>;
  scheduler: CronRunner & { start(): void; close(): Promise<void> };
}): GatewayModule {
  const { scheduler } = deps;
  return {
    name: 'cron',
    routes: publishWrites(cronRoutes({ ...deps, runner: scheduler }), deps.bus.publisher('cron')),
    start: () => scheduler.start(),
    stop: { intake: () => scheduler.close() },
  };
}
