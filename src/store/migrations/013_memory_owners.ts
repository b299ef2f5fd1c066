import type { CapabilityMigration } from './index.js';

/**
 * Whose memory an entry is (DECISIONS §17-18): `owner` is
 * `principal:<id>` (an agent with `memory_scope: principal`) or `agent:<id>`
 * (`memory_scope: agent`). Keys become unique per owner, so two principals
 * may both keep a `favourite_colour`. Entries written before this migration
 * are the default principal's, as every entry was then.
 *
 * SQLite cannot drop a column's unique constraint, so its table is rebuilt
 * (same rows, same ids: the search index and the tags refer to them by id).
 */
export const migration013: CapabilityMigration = {
  name: '013_memory_owners',
  sqlite: [
    `create table memories_owned (
      id text primary key,
      owner text not null default 'principal:default',
      key text null,
      content text not null,
      tags text not null default '[]',
      created_at text not null,
      updated_at text not null,
      last_accessed text not null,
      unique (owner, key)
    )`,
    `insert into memories_owned (id, owner, key, content, tags, created_at, updated_at, last_accessed)
      select id, 'principal:default', key, content, tags, created_at, updated_at, last_accessed from memories`,
    'drop table memories',
    'alter table memories_owned rename to memories',
    'create index memories_by_created on memories (created_at, id)',
    'create index memories_by_owner on memories (owner, created_at, id)',
  ],
  postgres: [
    `alter table memories add column owner text collate "C" not null default 'principal:default'`,
    'alter table memories drop constraint memories_key_key',
    'create unique index memories_owner_key on memories (owner, key)',
    'create index memories_by_owner on memories (owner, created_at, id)',
  ],
};
