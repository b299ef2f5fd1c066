/**
 * Cron capability (spec: Cron; DECISIONS §9, §11): jobs, their schedules
 * (five fields, UTC), authorisation, run history and the API. The scheduler
 * that fires due runs lives in `scheduler/` and reaches this folder only
 * through this file; the API reaches the scheduler only through `CronRunner`.
 */
export { cronRoutes } from './cron.routes.js';
export { presentCronJob, presentCronRun } from './cron.presenter.js';
export { CronService, type CronRunner, type CronServiceDeps } from './cron.service.js';
export { parseSchedule, scheduleOf, type CronSchedule, type ParsedSchedule } from './cron.schedule.js';
export {
  NOT_AUTHORIZED,
  RUNS_KEPT_PER_JOB,
  claimScheduledRun,
  finishCronRun,
  listAbandonedRuns,
  listCronRuns,
  listDueCronJobs,
  listSettledRuns,
  setRunEvent,
  startManualRun,
  updateCronJob,
  type ClaimedRun,
  type CronJobRecord,
  type CronRunRecord,
  type CronRunStatus,
  type CronRunTrigger,
  type SettledRun,
} from './cron.repo.js';
export { cronModule } from './cron.module.js';
