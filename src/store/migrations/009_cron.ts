import type { CapabilityMigration } from './index.js';

/**
 * Cron jobs and their run history (spec: Cron job; DECISIONS §9, §11).
 *
 * - `cron_jobs.next_run` is the claim token: a scheduler fires a due run by a
 *   conditional update `where next_run = <the value it read>`, so of several
 *   gateway processes sharing the database exactly one wins each slot. It is
 *   null while the job is disabled. `cron_jobs_due` (partial, enabled jobs
 *   only) serves the scheduler's "due at now" query.
 * - `cron_runs_slot` makes a scheduled slot unique per job as a second guard
 *   (`insert … on conflict do nothing`); manual triggers are not slots.
 * - `cron_runs_running` keeps the runs still waiting for their turn's outcome
 *   cheap to find (reconciliation after a crash or a paused turn).
 * - Booleans are integers 0/1; timestamps are ISO 8601 text, `collate "C"` on
 *   PostgreSQL where compared or sorted, as in the core migrations.
 */
export const migration009: CapabilityMigration = {
  name: '009_cron',
  sqlite: [
    `create table cron_jobs (
      id text primary key,
      schedule text not null,
      prompt text not null,
      enabled integer not null check (enabled in (0, 1)),
      authorized integer not null default 0 check (authorized in (0, 1)),
      last_run text null,
      next_run text null,
      created_at text not null,
      updated_at text not null
    )`,
    'create index cron_jobs_due on cron_jobs (next_run, id) where enabled = 1',
    `create table cron_runs (
      id text primary key,
      cron_id text not null,
      triggered_by text not null check (triggered_by in ('schedule', 'manual')),
      scheduled_at text not null,
      started_at text null,
      finished_at text null,
      status text not null check (status in ('running', 'completed', 'failed', 'skipped')),
      event_id text null,
      reason text null
    )`,
    `create unique index cron_runs_slot on cron_runs (cron_id, scheduled_at) where triggered_by = 'schedule'`,
    'create index cron_runs_by_job on cron_runs (cron_id, id)',
    `create index cron_runs_running on cron_runs (id) where status = 'running'`,
  ],
  postgres: [
    `create table cron_jobs (
      id text collate "C" primary key,
      schedule text not null,
      prompt text not null,
      enabled integer not null check (enabled in (0, 1)),
      authorized integer not null default 0 check (authorized in (0, 1)),
      last_run text collate "C" null,
      next_run text collate "C" null,
      created_at text collate "C" not null,
      updated_at text collate "C" not null
    )`,
    'create index cron_jobs_due on cron_jobs (next_run, id) where enabled = 1',
    `create table cron_runs (
      id text collate "C" primary key,
      cron_id text collate "C" not null,
      triggered_by text not null check (triggered_by in ('schedule', 'manual')),
      scheduled_at text collate "C" not null,
      started_at text collate "C" null,
      finished_at text collate "C" null,
      status text not null check (status in ('running', 'completed', 'failed', 'skipped')),
      event_id text null,
      reason text null
    )`,
    `create unique index cron_runs_slot on cron_runs (cron_id, scheduled_at) where triggered_by = 'schedule'`,
    'create index cron_runs_by_job on cron_runs (cron_id, id)',
    `create index cron_runs_running on cron_runs (id) where status = 'running'`,
  ],
};
