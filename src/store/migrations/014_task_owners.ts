import type { CapabilityMigration } from './index.js';

/**
 * Whose a task is (DECISIONS §18): `principal` is the principal that created
 * it (POST /tasks: the caller; `task_create`: the principal owning the
 * agent's session), and the principal its turn runs under. A configured
 * principal sees only its own tasks. Tasks created before this migration
 * belong to `default`, as everything did then.
 */
export const migration014: CapabilityMigration = {
  name: '014_task_owners',
  sqlite: [
    `alter table tasks add column principal text not null default 'default'`,
    'create index tasks_by_principal on tasks (principal, created_at)',
  ],
  postgres: [
    `alter table tasks add column principal text collate "C" not null default 'default'`,
    'create index tasks_by_principal on tasks (principal, created_at)',
  ],
};
