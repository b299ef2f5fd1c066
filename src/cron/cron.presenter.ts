import type { CronJobRecord, CronRunRecord } from './cron.repo.js';

/** Cron job wire shape (spec: Cron job, plus `created_at`/`updated_at`). */
export function presentCronJob(job: CronJobRecord): Record<string, unknown> {
  return {
    id: job.id,
    schedule: job.schedule,
    prompt: job.prompt,
    enabled: job.enabled,
    authorized: job.authorized,
    last_run: job.lastRun,
    next_run: job.nextRun,
    created_at: job.createdAt,
    updated_at: job.updatedAt,
  };
}

/** Cron run wire shape (DECISIONS §9, plus `triggered_by`: `schedule` | `manual`). */
export function presentCronRun(run: CronRunRecord): Record<string, unknown> {
  return {
    id: run.id,
    cron_id: run.cronId,
    scheduled_at: run.scheduledAt,
    started_at: run.startedAt,
    finished_at: run.finishedAt,
    status: run.status,
    event_id: run.eventId,
    reason: run.reason,
    triggered_by: run.triggeredBy,
  };
}
