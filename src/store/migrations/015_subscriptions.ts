import type { CapabilityMigration } from './index.js';

/**
 * Event subscriptions (DECISIONS §20, ADR 0040): `subscriptions` (a URL, the
 * event types it wants, its signing secret) and `subscription_deliveries`,
 * the outbox: one row per event and subscription, written in the commit of
 * the change it reports, claimed by one gateway at a time through a lease
 * (`lease_owner`, `lease_until`) and retried on `retry_schedule` until it is
 * `delivered` or `failed`.
 */
export const migration015: CapabilityMigration = {
  name: '015_subscriptions',
  sqlite: [
    `create table subscriptions (
      id text primary key,
      url text not null,
      events text not null,
      description text,
      secret text not null,
      enabled integer not null default 1,
      created_at text not null,
      updated_at text not null
    )`,
    `create table subscription_deliveries (
      id text primary key,
      subscription_id text not null,
      event_type text not null,
      body text not null,
      status text not null,
      attempts integer not null default 0,
      next_attempt_at text not null,
      lease_owner text,
      lease_until text,
      last_status integer,
      last_error text,
      created_at text not null,
      delivered_at text
    )`,
    'create index subscription_deliveries_due on subscription_deliveries (status, next_attempt_at)',
    'create index subscription_deliveries_by_subscription on subscription_deliveries (subscription_id, created_at)',
  ],
  postgres: [
    `create table subscriptions (
      id text collate "C" primary key,
      url text not null,
      events text not null,
      description text,
      secret text not null,
      enabled integer not null default 1,
      created_at text collate "C" not null,
      updated_at text collate "C" not null
    )`,
    `create table subscription_deliveries (
      id text collate "C" primary key,
      subscription_id text collate "C" not null,
      event_type text not null,
      body text not null,
      status text collate "C" not null,
      attempts integer not null default 0,
      next_attempt_at text collate "C" not null,
      lease_owner text,
      lease_until text collate "C",
      last_status integer,
      last_error text,
      created_at text collate "C" not null,
      delivered_at text collate "C"
    )`,
    'create index subscription_deliveries_due on subscription_deliveries (status, next_attempt_at)',
    'create index subscription_deliveries_by_subscription on subscription_deliveries (subscription_id, created_at)',
  ],
};
