import type { CapabilityMigration } from './index.js';

/**
 * Counts shared by the gateway processes of one database (ADR 0028): each
 * process's own count of a rate-limit window, or its current value of a
 * gauge (the webhook's pending turns), rewritten by that process only.
 *
 * - The primary key makes a process's report an upsert of its own row.
 * - `window_start` is the window's start in epoch milliseconds (bigint on
 *   PostgreSQL); gauges use 0. `cluster_counts_window` serves the read of one
 *   window and the pruning of past ones.
 * - `key` holds the rate group and the token fingerprint, never a token.
 * - The table is small and bounded: rows of past windows and of dead
 *   processes are deleted by the live ones.
 */
export const migration010: CapabilityMigration = {
  name: '010_cluster_counts',
  sqlite: [
    `create table cluster_counts (
      instance_id text not null,
      kind text not null check (kind in ('window', 'gauge')),
      key text not null,
      window_start integer not null,
      count integer not null,
      updated_at text not null,
      primary key (instance_id, kind, key, window_start)
    )`,
    'create index cluster_counts_window on cluster_counts (kind, window_start)',
  ],
  postgres: [
    `create table cluster_counts (
      instance_id text collate "C" not null,
      kind text collate "C" not null check (kind in ('window', 'gauge')),
      key text collate "C" not null,
      window_start bigint not null,
      count integer not null,
      updated_at text collate "C" not null,
      primary key (instance_id, kind, key, window_start)
    )`,
    'create index cluster_counts_window on cluster_counts (kind, window_start)',
  ],
};
