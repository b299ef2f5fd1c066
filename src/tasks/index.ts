/** Tasks capability (spec: Task, Tasks; DECISIONS §9, §10): routes, service, runner, agent tool, analytics count. */
export { taskRoutes, type TaskRoutesDeps } from './tasks.routes.js';
export {
  TaskService,
  TASK_CANCELLED_REASON,
  type CreateTaskInput,
  type TaskChangeEvent,
  type TaskChangeListener,
  type TaskRunOutcome,
  type TaskServiceOptions,
  type UpdateTaskInput,
} from './tasks.service.js';
export {
  DEFAULT_TASK_POLL_MS,
  TaskRunner,
  nodeTimers,
  outcomeOf,
  taskPrincipal,
  taskPrompt,
  type TaskRunnerOptions,
  type TaskTimers,
} from './task-runner.js';
export { MAX_AGENT_TASK_DEPTH, taskTools } from './tasks.tools.js';
export { presentTask, type TaskView } from './tasks.presenter.js';
export { countTasksCompletedSince, type TaskRecord } from './tasks.repo.js';
export {
  PRIORITY_WORDS,
  TASK_SOURCES,
  TASK_STATUSES,
  priorityWord,
  type PriorityWord,
  type TaskSource,
  type TaskStatus,
} from './tasks.schema.js';
export { openTasks, tasksModule, type Tasks } from './tasks.module.js';
