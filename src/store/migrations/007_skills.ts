import type { CapabilityMigration } from './index.js';

/**
 * Skills (spec: Skill; DECISIONS §9): one row per skill version. At most one
 * active skill per name, enforced by a partial unique index, so concurrent
 * creates, approvals and enables cannot leave two active skills of one name.
 * `front_matter` keeps the SKILL.md fields other than name and description
 * (JSON); `category` is derived from it for filtering. PostgreSQL columns
 * that are compared or sorted as text use `collate "C"` so both databases
 * order them byte-wise, as in the core migrations.
 */
export const migration007: CapabilityMigration = {
  name: '007_skills',
  sqlite: [
    `create table skills (
      id text primary key,
      name text not null,
      description text not null,
      instructions text not null,
      front_matter text not null default '{}',
      category text null,
      status text not null check (status in ('active', 'staged', 'disabled')),
      version integer not null,
      use_count integer not null default 0,
      last_used text null,
      evolved_from text null,
      created_at text not null,
      updated_at text not null
    )`,
    `create unique index skills_one_active_name on skills (name) where status = 'active'`,
    'create index skills_by_name on skills (name, version)',
    'create index skills_by_last_used on skills (last_used)',
  ],
  postgres: [
    `create table skills (
      id text collate "C" primary key,
      name text collate "C" not null,
      description text not null,
      instructions text not null,
      front_matter text not null default '{}',
      category text collate "C" null,
      status text not null check (status in ('active', 'staged', 'disabled')),
      version integer not null,
      use_count integer not null default 0,
      last_used text collate "C" null,
      evolved_from text collate "C" null,
      created_at text collate "C" not null,
      updated_at text collate "C" not null
    )`,
    `create unique index skills_one_active_name on skills (name) where status = 'active'`,
    'create index skills_by_name on skills (name, version)',
    'create index skills_by_last_used on skills (last_used)',
  ],
};
