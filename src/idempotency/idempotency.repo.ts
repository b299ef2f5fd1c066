import type { Kysely, Selectable, Transaction } from 'kysely';
import { prepared, type Database, type IdempotencyRecordsTable } from '../store/index.js';

/** `store.db`, a transaction, or a group-commit `trx`: every function here composes inside the caller's transaction. */
type Executor = Kysely<Database> | Transaction<Database>;

/** One idempotency key claimed within its scope. Expired when `expiresAt <= now`; never expires while null. */
export interface IdempotencyRecord {
  /** Principal + session key (HTTP, WebSocket) or sender + chat (webhook). */
  scope: string;
  key: string;
  /** SHA-256 of the request's canonical content: a retry with another fingerprint is a conflict. */
  fingerprint: string;
  /** The event the key maps to; its turn holds the response or final result to replay. */
  eventId: string;
  sessionKey: string;
  /** Whether the original request waited for the final result. */
  wait: boolean;
  createdAt: string;
  /** Null until the turn completes (then completion + TTL). */
  expiresAt: string | null;
}

/** What `claimIdempotencyKey` answers. */
export type IdempotencyClaim = { created: true } | { created: false; existing: IdempotencyRecord };

const MAX_RACE_RETRIES = 5;

/**
 * Claims `(record.scope, record.key)`. `created: true` when this call stored
 * the record: the key was free, or its record had expired (`expires_at <=
 * record.createdAt`) and was replaced. Otherwise `created: false` with the
 * unexpired record that holds the key (its fingerprint tells a replay from a
 * conflict). Race-safe across connections and processes: exactly one of
 * concurrent claims creates (`insert … on conflict do nothing`, then a
 * conditional replace of an expired row, then a read).
 */
export async function claimIdempotencyKey(ex: Executor, record: IdempotencyRecord): Promise<IdempotencyClaim> {
  const row = toRow(record);
  for (let attempt = 0; attempt < MAX_RACE_RETRIES; attempt++) {
    if ((await insertRecord.rows(ex, row)).length > 0) return { created: true };
    if ((await replaceExpired.rows(ex, row)).length > 0) return { created: true };
    const existing = await recordOf.first(ex, { scope: record.scope, key: record.key });
    if (existing) return { created: false, existing: toRecord(existing) };
    // Purged between the insert and the read: claim again.
  }
  throw new Error('claimIdempotencyKey: the record kept changing under concurrent purges');
}

type RecordRow = Selectable<IdempotencyRecordsTable>;

const insertRecord = prepared((ex, row: RecordRow) =>
  ex
    .insertInto('idempotency_records')
    .values({
      scope: row.scope,
      key: row.key,
      fingerprint: row.fingerprint,
      event_id: row.event_id,
      session_key: row.session_key,
      wait: row.wait,
      created_at: row.created_at,
      expires_at: row.expires_at,
    })
    .onConflict((oc) => oc.columns(['scope', 'key']).doNothing())
    .returning('scope'),
);

/** Takes over the key when its record has expired by the claim's creation time. */
const replaceExpired = prepared((ex, row: RecordRow) =>
  ex
    .updateTable('idempotency_records')
    .set({
      fingerprint: row.fingerprint,
      event_id: row.event_id,
      session_key: row.session_key,
      wait: row.wait,
      created_at: row.created_at,
      expires_at: row.expires_at,
    })
    .where('scope', '=', row.scope)
    .where('key', '=', row.key)
    .where('expires_at', 'is not', null)
    .where('expires_at', '<=', row.created_at)
    .returning('scope'),
);

const recordOf = prepared((ex, input: { scope: string; key: string }) =>
  ex.selectFrom('idempotency_records').selectAll().where('scope', '=', input.scope).where('key', '=', input.key),
);

/** The unexpired record of `(scope, key)` at `now`, or null. */
export async function getIdempotencyRecord(
  ex: Executor,
  scope: string,
  key: string,
  now: string,
): Promise<IdempotencyRecord | null> {
  const row = await ex
    .selectFrom('idempotency_records')
    .selectAll()
    .where('scope', '=', scope)
    .where('key', '=', key)
    .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', now)]))
    .executeTakeFirst();
  return row ? toRecord(row) : null;
}

/**
 * Starts the TTL of every record of `eventId` that has none yet (the turn
 * completed): sets `expires_at`. Returns how many records it set.
 */
export async function setIdempotencyExpiry(ex: Executor, eventId: string, expiresAt: string): Promise<number> {
  return expiry.affected(ex, { eventId, expiresAt });
}

const expiry = prepared((ex, input: { eventId: string; expiresAt: string }) =>
  ex
    .updateTable('idempotency_records')
    .set({ expires_at: input.expiresAt })
    .where('event_id', '=', input.eventId)
    .where('expires_at', 'is', null),
);

/**
 * Points the record of `(scope, key)` at another event (a key reused after its
 * earlier record expired: the derived event id is already in the ledger).
 */
export async function setIdempotencyEventId(ex: Executor, scope: string, key: string, eventId: string): Promise<void> {
  await ex
    .updateTable('idempotency_records')
    .set({ event_id: eventId })
    .where('scope', '=', scope)
    .where('key', '=', key)
    .execute();
}

/** Records not expired at `now` (the ceiling check). */
export async function countUnexpired(ex: Executor, now: string): Promise<number> {
  const row = await ex
    .selectFrom('idempotency_records')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', now)]))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** Deletes at most `limit` records expired at `now`, earliest expiry first; returns how many. */
export async function purgeExpired(ex: Executor, now: string, limit: number): Promise<number> {
  const result = await ex
    .deleteFrom('idempotency_records')
    .where((eb) =>
      eb(
        eb.refTuple('scope', 'key'),
        'in',
        eb
          .selectFrom('idempotency_records as expired')
          .select(['expired.scope', 'expired.key'])
          .where('expired.expires_at', '<=', now)
          .orderBy('expired.expires_at')
          .limit(limit)
          .$asTuple('scope', 'key'),
      ),
    )
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}

function toRow(record: IdempotencyRecord): Selectable<IdempotencyRecordsTable> {
  return {
    scope: record.scope,
    key: record.key,
    fingerprint: record.fingerprint,
    event_id: record.eventId,
    session_key: record.sessionKey,
    wait: record.wait ? 1 : 0,
    created_at: record.createdAt,
    expires_at: record.expiresAt,
  };
}

function toRecord(row: Selectable<IdempotencyRecordsTable>): IdempotencyRecord {
  return {
    scope: row.scope,
    key: row.key,
    fingerprint: row.fingerprint,
    eventId: row.event_id,
    sessionKey: row.session_key,
    wait: row.wait === 1,
    createdAt: row.created_at,
    expiresAt: row.expires_at,
  };
}
