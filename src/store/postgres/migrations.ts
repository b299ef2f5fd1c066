import type { Migration } from '../migrate.js';

/**
 * PostgreSQL schema, in order. Append new migrations at the end with the next
 * number and the same name as in `sqlite/migrations.ts`; never edit one that
 * has shipped. Tables are created unqualified so they land in the store's
 * schema (search_path).
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
