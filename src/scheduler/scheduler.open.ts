import { presentCronRun } from '../cron/index.js';
import type { EventBus } from '../events/index.js';
import type { Clock } from '../lib/clock.js';
import type { IdGenerator } from '../lib/ids.js';
import type { Logger } from '../lib/logger.js';
import type { Store } from '../store/index.js';
import type { MessagePath } from '../turns/index.js';
import { CronScheduler, type CronSecurityProfile } from './cron-scheduler.js';

/**
 * The cron scheduler of a gateway: jobs submitted through the message
 * path's door and awaited through its waiters; every run on the live feed's
 * `cron` topic.
 */
export function openScheduler(deps: {
  store: Store;
  clock: Clock;
  ids: IdGenerator;
  logger: Logger;
  messages: MessagePath;
  bus: Pick<EventBus, 'publish'>;
  profile: CronSecurityProfile;
}): CronScheduler {
  const { messages } = deps;
  return new CronScheduler({
    ...deps,
    intake: messages,
    outbox: messages.outbox,
    waiters: { wait: (eventId, timeoutMs, signal) => messages.waitFor(eventId, timeoutMs, signal) },
    onRun: (run) => deps.bus.publish('cron', 'run', presentCronRun(run)),
  });
}
