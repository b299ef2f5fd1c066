import type { CapabilityMigration } from './index.js';

/**
 * Tasks (spec: Task, Tasks; DECISIONS §9): one row per task. `priority` is
 * the integer 0..10 (the word is derived in the presenter), `labels` and
 * `metadata` are JSON text. `claimed_by` is the gateway instance whose task
 * runner claimed the task for the agent (null for tasks a person works on);
 * running claimed tasks are the ones counted against `tasks.max_concurrent`.
 * The partial index `tasks_pending_queue` serves the runner's claim order
 * (highest priority, then oldest). PostgreSQL columns that are compared or
 * sorted as text use `collate "C"` so both databases order them byte-wise.
 */
export const migration008: CapabilityMigration = {
  name: '008_tasks',
  sqlite: [
    `create table tasks (
      id text primary key,
      title text not null,
      description text null,
      status text not null check (status in ('pending', 'running', 'completed', 'failed', 'cancelled')),
      priority integer not null check (priority between 0 and 10),
      labels text not null default '[]',
      assignee text null,
      source text not null check (source in ('api', 'agent', 'cron', 'channel')),
      board_id text null,
      parent_task_id text null,
      metadata text not null default '{}',
      progress real not null default 0,
      session_key text null,
      event_id text null,
      claimed_by text null,
      result text null,
      error text null,
      created_at text not null,
      started_at text null,
      finished_at text null,
      updated_at text not null
    )`,
    'create index tasks_by_created on tasks (created_at, id)',
    'create index tasks_by_status on tasks (status, created_at, id)',
    `create index tasks_pending_queue on tasks (priority, created_at, id) where status = 'pending'`,
    'create index tasks_by_session on tasks (session_key, created_at) where session_key is not null',
    'create index tasks_by_parent on tasks (parent_task_id) where parent_task_id is not null',
    `create index tasks_completed_by_time on tasks (finished_at) where status = 'completed'`,
  ],
  postgres: [
    `create table tasks (
      id text collate "C" primary key,
      title text not null,
      description text null,
      status text not null check (status in ('pending', 'running', 'completed', 'failed', 'cancelled')),
      priority integer not null check (priority between 0 and 10),
      labels text not null default '[]',
      assignee text collate "C" null,
      source text not null check (source in ('api', 'agent', 'cron', 'channel')),
      board_id text collate "C" null,
      parent_task_id text collate "C" null,
      metadata text not null default '{}',
      progress double precision not null default 0,
      session_key text collate "C" null,
      event_id text collate "C" null,
      claimed_by text collate "C" null,
      result text null,
      error text null,
      created_at text collate "C" not null,
      started_at text collate "C" null,
      finished_at text collate "C" null,
      updated_at text collate "C" not null
    )`,
    'create index tasks_by_created on tasks (created_at, id)',
    'create index tasks_by_status on tasks (status, created_at, id)',
    `create index tasks_pending_queue on tasks (priority, created_at, id) where status = 'pending'`,
    'create index tasks_by_session on tasks (session_key, created_at) where session_key is not null',
    'create index tasks_by_parent on tasks (parent_task_id) where parent_task_id is not null',
    `create index tasks_completed_by_time on tasks (finished_at) where status = 'completed'`,
  ],
};
