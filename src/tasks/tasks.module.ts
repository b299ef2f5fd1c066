import type { EventBus } from '../events/index.js';
import type { Clock } from '../lib/clock.js';
import type { IdGenerator } from '../lib/ids.js';
import type { Logger } from '../lib/logger.js';
import type { GatewayModule } from '../module.js';
import type { Store } from '../store/index.js';
import type { MessagePath } from '../turns/index.js';
import { TaskRunner } from './task-runner.js';
import { presentTask } from './tasks.presenter.js';
import { taskRoutes } from './tasks.routes.js';
import { TaskService } from './tasks.service.js';
import { taskTools } from './tasks.tools.js';

/** The task service and its runner, handed the message path's door (ADR 0009). */
export interface Tasks {
  service: TaskService;
  runner: TaskRunner;
}

/**
 * Builds the task service (every change on the live feed's `tasks` topic,
 * and a nudge for the runner) and the runner that submits tasks as turns.
 */
export function openTasks(deps: {
  store: Store;
  clock: Clock;
  ids: IdGenerator;
  logger: Logger;
  bus: Pick<EventBus, 'publish' | 'subscribe'>;
  messages: MessagePath;
  maxConcurrent: number;
}): Tasks {
  const { messages } = deps;
  const service = new TaskService({
    ...deps,
    interruptTurn: (eventId, reason) => messages.interrupt(eventId, reason),
    outbox: messages.outbox,
    onChange: (event, task) => deps.bus.publish('tasks', event, presentTask(task)),
  });
  const runner = new TaskRunner({ ...deps, service, owner: messages.owner });
  deps.bus.subscribe(['tasks'], () => runner.notify()); // every task change may be work for the runner
  return { service, runner };
}

/**
 * The tasks capability: routes and tools; the runner starts with the
 * gateway, stops claiming at the start of shutdown and is waited for once
 * the running turns had their grace.
 */
export function tasksModule(tasks: Tasks): GatewayModule {
  let runs: Promise<void> = Promise.resolve();
  return {
    name: 'tasks',
    routes: taskRoutes({ service: tasks.service }),
    tools: taskTools(tasks.service),
    start: () => tasks.runner.start(),
    stop: {
      intake: () => void (runs = tasks.runner.close()), // stop claiming; runs end with their turns
      drain: () => runs,
    },
  };
}
