/** The scheduler: background work on an injected clock — cron jobs fired once per due slot across processes. */
export {
  CronScheduler,
  type CronIntake,
  type CronSchedulerOptions,
  type CronSecurityProfile,
  type CronTurnOutcome,
  type CronWaiters,
} from './cron-scheduler.js';
export { openScheduler } from './scheduler.open.js';
