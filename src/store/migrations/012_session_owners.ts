import type { CapabilityMigration } from './index.js';

/**
 * Who a session belongs to and which agent runs it (DECISIONS §17, §18):
 * `agent` is decided when the session is created and never changes;
 * `principal` is the principal whose request created it (`channel:<name>` for
 * a platform channel's, or the binding's `owner`). Sessions created before
 * this migration belong to `default` and run `main`, as everything did then.
 */
export const migration012: CapabilityMigration = {
  name: '012_session_owners',
  sqlite: [
    `alter table sessions add column agent text not null default 'main'`,
    `alter table sessions add column principal text not null default 'default'`,
    'create index sessions_principal on sessions (principal, last_active)',
  ],
  postgres: [
    `alter table sessions add column agent text collate "C" not null default 'main'`,
    `alter table sessions add column principal text collate "C" not null default 'default'`,
    'create index sessions_principal on sessions (principal, last_active)',
  ],
};
