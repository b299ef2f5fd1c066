import type { Migration } from '../migrate.js';
import { capabilityMigrations } from '../migrations/index.js';

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
  // Differences from SQLite's 002, all for identical behaviour: `collate "C"`
  // on every text column that is sorted or range-compared (ids, keys, ISO
  // timestamps), so PostgreSQL orders bytes like SQLite's BINARY whatever the
  // database's locale; `bigserial` for turns.seq; `bigint` for cost_nano_usd.
  {
    name: '002_message_path',
    up: [
      `create table sessions (
        key text collate "C" primary key,
        channel text not null,
        status text not null default 'active',
        created_at text not null,
        last_active text collate "C" not null,
        message_count integer not null default 0,
        context_epoch integer not null default 0,
        metadata text not null default '{}',
        deleted_at text null
      )`,
      'create index sessions_live_by_activity on sessions (last_active, key) where deleted_at is null',
      `create table messages (
        id text collate "C" primary key,
        session_key text not null,
        context_epoch integer not null,
        role text not null,
        content text null,
        tool_calls text null,
        tool_call_id text null,
        name text null,
        event_id text null,
        created_at text not null
      )`,
      'create index messages_by_session on messages (session_key, context_epoch, id)',
      `create table turns (
        seq bigserial primary key,
        event_id text not null unique,
        session_key text not null,
        status text not null,
        current_tool text null,
        response text null,
        termination_reason text null,
        context_epoch integer not null default 0,
        accepted_at text not null,
        started_at text null,
        finished_at text null,
        updated_at text not null,
        payload text not null,
        result text null,
        pending text null,
        owner text null
      )`,
      'create index turns_by_session on turns (session_key, seq)',
      'create index turns_by_status on turns (status, seq)',
      `create table turn_events (
        event_id text not null,
        seq integer not null,
        type text not null,
        data text not null,
        created_at text not null,
        primary key (event_id, seq)
      )`,
      `create table idempotency_records (
        scope text not null,
        key text not null,
        fingerprint text not null,
        event_id text not null,
        session_key text not null,
        wait integer not null,
        created_at text not null,
        expires_at text collate "C" null,
        primary key (scope, key)
      )`,
      'create index idempotency_records_by_expiry on idempotency_records (expires_at)',
      'create index idempotency_records_by_event on idempotency_records (event_id)',
      `create table usage_records (
        id text primary key,
        event_id text not null,
        session_key text not null,
        channel text not null,
        model text not null,
        input_tokens integer not null,
        output_tokens integer not null,
        cost_nano_usd bigint not null,
        created_at text collate "C" not null
      )`,
      'create index usage_records_by_time on usage_records (created_at)',
      `create table gateway_instances (
        id text collate "C" primary key,
        started_at text not null,
        heartbeat_at text collate "C" not null
      )`,
    ],
  },
  {
    // Every turn asks for its session's paused turns before it is claimed; without this index
    // that read scans all of the session's turns.
    name: '003_turns_session_status',
    up: ['create index turns_session_status on turns (session_key, status, seq)'],
  },
  // Pairing codes (hash only), verify-attempt counters with their lock, paired identities.
  // `collate "C"` on the compared timestamps and the sortable identity columns, as in 002.
  {
    name: '004_pairing',
    up: [
      `create table pairing_codes (
        code_hash text primary key,
        platform text not null,
        created_at text not null,
        expires_at text collate "C" not null,
        used_at text null
      )`,
      'create index pairing_codes_by_expiry on pairing_codes (expires_at)',
      `create table pair_attempts (
        key text primary key,
        failures integer not null default 0,
        locked_until text collate "C" null,
        updated_at text collate "C" not null
      )`,
      `create table paired_users (
        platform text collate "C" not null,
        user_id text collate "C" not null,
        paired_at text collate "C" not null,
        primary key (platform, user_id)
      )`,
    ],
  },
  {
    // Usage analytics count messages by time.
    name: '005_messages_created_at',
    up: ['create index messages_created_at on messages (created_at)'],
  },
  ...capabilityMigrations.map((m) => ({ name: m.name, up: m.postgres })),
];
