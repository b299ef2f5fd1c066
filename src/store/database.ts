import type { Generated } from 'kysely';

/**
 * Table types for Kysely, one interface per table, keyed by table name in
 * `Database`. A migration that adds a table adds its interface here.
 *
 * Conventions that keep SQLite and PostgreSQL answering identically:
 * - timestamps are ISO 8601 UTC text with milliseconds (`isoTime()` from
 *   lib/clock), so they sort and compare the same as text on both;
 * - booleans are `integer` 0/1 (SQLite has no boolean type);
 * - JSON is stored as `text` and parsed by the repository;
 * - integer columns come back as JS numbers on both (PostgreSQL int8 is
 *   parsed to number by the store, exact below 2^53).
 */

/** `schema_migrations`: one row per applied migration (written by migrate.ts only). */
export interface SchemaMigrationsTable {
  name: string;
  applied_at: string;
}

/** `gateway_meta`: small key/value facts about this gateway instance. */
export interface GatewayMetaTable {
  key: string;
  value: string;
  updated_at: string;
}

/** Every table the store knows, for `Kysely<Database>`. */
export interface Database {
  schema_migrations: SchemaMigrationsTable;
  gateway_meta: GatewayMetaTable;
}

/*
 * Migration 002_message_path: sessions, messages, the turn ledger and its
 * events, idempotency records, usage and live gateway instances. The
 * interfaces below are appended rather than merged into `Database` above so
 * each migration's tables stay together; `Database` is their union.
 */

/** `sessions`: one row per session key; a deleted session keeps its row (`deleted_at` set) so the key's context epoch survives. */
export interface SessionsTable {
  key: string;
  channel: string;
  /** `active` | `archived`. */
  status: string;
  created_at: string;
  last_active: string;
  message_count: number;
  /** Incremented by `/new`, deletion and revival; messages of older epochs leave the model's context. */
  context_epoch: number;
  /** JSON object as text. */
  metadata: string;
  deleted_at: string | null;
  /** The agent that runs it, decided at creation (migration 012). */
  agent: string;
  /** The principal that owns it (migration 012). */
  principal: string;
}

/** `messages`: the conversation, per session and context epoch; `id` is time-sortable, so `order by id` is chronological. */
export interface MessagesTable {
  id: string;
  session_key: string;
  context_epoch: number;
  role: string;
  content: string | null;
  /** JSON array as text. */
  tool_calls: string | null;
  tool_call_id: string | null;
  name: string | null;
  event_id: string | null;
  created_at: string;
}

/** `turns`: the durable turn ledger, one row per inbound event; `seq` gives arrival order across processes. */
export interface TurnsTable {
  seq: Generated<number>;
  event_id: string;
  session_key: string;
  status: string;
  current_tool: string | null;
  response: string | null;
  termination_reason: string | null;
  context_epoch: number;
  accepted_at: string;
  started_at: string | null;
  finished_at: string | null;
  updated_at: string;
  /** JSON: what the turn needs to run (the inbound event). */
  payload: string;
  /** JSON: the final result delivered to waiters; null until finished. */
  result: string | null;
  /** JSON: what a waiting turn waits for (approval request, question); null otherwise. */
  pending: string | null;
  /** Id of the gateway instance running (or last running) the turn. */
  owner: string | null;
}

/** `turn_events`: the replayable event stream of each turn, numbered 1, 2, … per turn. */
export interface TurnEventsTable {
  event_id: string;
  seq: number;
  type: string;
  /** JSON as text. */
  data: string;
  created_at: string;
}

/** `idempotency_records`: one per (scope, key); `expires_at` is null until the turn completes. */
export interface IdempotencyRecordsTable {
  scope: string;
  key: string;
  fingerprint: string;
  event_id: string;
  session_key: string;
  /** 0/1: whether the original request waited for the final result. */
  wait: number;
  created_at: string;
  expires_at: string | null;
}

/** `usage_records`: one per model call, for cost accounting and budgets. */
export interface UsageRecordsTable {
  id: string;
  event_id: string;
  session_key: string;
  channel: string;
  model: string;
  input_tokens: number;
  output_tokens: number;
  /** Cost in nano-USD (1e-9 USD); bigint on PostgreSQL, parsed to number (exact below 2^53). */
  cost_nano_usd: number;
  created_at: string;
}

/** `gateway_instances`: gateway processes sharing the database, with their heartbeat. */
export interface GatewayInstancesTable {
  id: string;
  started_at: string;
  heartbeat_at: string;
}

/** `Database` with the tables of 002_message_path. */
export interface Database {
  sessions: SessionsTable;
  messages: MessagesTable;
  turns: TurnsTable;
  turn_events: TurnEventsTable;
  idempotency_records: IdempotencyRecordsTable;
  usage_records: UsageRecordsTable;
  gateway_instances: GatewayInstancesTable;
}

/*
 * Migration 004_pairing: pairing codes, the verify-attempt counters behind
 * the lockout, and paired identities (spec: Pairing; DECISIONS §4).
 */

/** `pairing_codes`: one row per issued code; only the code's SHA-256 is stored, never the code. */
export interface PairingCodesTable {
  /** SHA-256 hex of the normalised code. */
  code_hash: string;
  /** The platform the code was issued for; it pairs only identities of that platform. */
  platform: string;
  created_at: string;
  expires_at: string;
  /** Set when the code is consumed by a successful verify; a code is single use. */
  used_at: string | null;
}

/** `pair_attempts`: the verify-failure counter of one key (`ip:…` or `user:…`), with its lock. */
export interface PairAttemptsTable {
  key: string;
  /** Attempts reserved since the last success or lock expiry (failed or in flight). */
  failures: number;
  /** The lock's end; null when not locked. A past value means the lock has expired. */
  locked_until: string | null;
  updated_at: string;
}

/** `paired_users`: identities bound by a pairing code, durable across restarts. */
export interface PairedUsersTable {
  platform: string;
  user_id: string;
  paired_at: string;
}

/** `Database` with the tables of 004_pairing. */
export interface Database {
  pairing_codes: PairingCodesTable;
  pair_attempts: PairAttemptsTable;
  paired_users: PairedUsersTable;
}

/*
 * Migration 010_cluster_counts: the counts gateway processes sharing one
 * database exchange for cluster-wide limits (ADR 0028).
 */

/** `cluster_counts`: one process's count in one rate-limit window, or its current value of one gauge. */
export interface ClusterCountsTable {
  /** The reporting gateway instance. */
  instance_id: string;
  /** `window`: a count within the window starting at `window_start`; `gauge`: a current value (`window_start` 0). */
  kind: 'window' | 'gauge';
  /** What is counted: `<rate group>:<token fingerprint>`, or the gauge's name. Never a secret. */
  key: string;
  /** The window's start, epoch milliseconds; 0 for a gauge. */
  window_start: number;
  count: number;
  updated_at: string;
}

/** `Database` with the table of 010_cluster_counts. */
export interface Database {
  cluster_counts: ClusterCountsTable;
}

/*
 * Migration 011_platform_replies: the replies chat-platform channels delivered (DECISIONS §16).
 */

/** `platform_replies`: a turn whose reply a platform channel posted, with the status it showed. */
export interface PlatformRepliesTable {
  event_id: string;
  /** The channel: `telegram`, `slack`. */
  platform: string;
  /** The turn status the reply showed. */
  status: string;
  delivered_at: string;
}

/** `Database` with the table of 011_platform_replies. */
export interface Database {
  platform_replies: PlatformRepliesTable;
}
