import type { Migration } from '../migrate.js';

/**
 * SQLite schema, in order. Append new migrations at the end with the next
 * number and the same name as in `postgres/migrations.ts`; never edit one that
 * has shipped.
 */
export const migrations: readonly Migration[] = [
  {
    name: '001_init',
    up: [
      `create table gateway_meta (
        key text primary key,
        value text not null,
        updated_at text not null
      )`,
    ],
  },
];
