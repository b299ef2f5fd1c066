import { type Kysely, type Transaction, sql } from 'kysely';
import type { Database } from '../store/index.js';

/** `store.db`, a transaction, or a group-commit `trx`: every function here composes inside the caller's transaction. */
type Executor = Kysely<Database> | Transaction<Database>;

/**
 * Stores a new pairing code by its hash. Returns false (and writes nothing)
 * when a code with the same hash already exists, so the caller draws another.
 */
export async function insertPairingCode(
  ex: Executor,
  input: { codeHash: string; platform: string; now: string; expiresAt: string },
): Promise<boolean> {
  const result = await ex
    .insertInto('pairing_codes')
    .values({
      code_hash: input.codeHash,
      platform: input.platform,
      created_at: input.now,
      expires_at: input.expiresAt,
      used_at: null,
    })
    .onConflict((oc) => oc.column('code_hash').doNothing())
    .executeTakeFirst();
  return (result.numInsertedOrUpdatedRows ?? 0n) > 0n;
}

/**
 * Consumes a code in one conditional update: it succeeds only when a code
 * with `codeHash` exists for `platform`, is unused and has not expired at
 * `now`, and marks it used. Of any number of concurrent consumers exactly one
 * gets true.
 */
export async function consumePairingCode(
  ex: Executor,
  input: { codeHash: string; platform: string; now: string },
): Promise<boolean> {
  const row = await ex
    .updateTable('pairing_codes')
    .set({ used_at: input.now })
    .where('code_hash', '=', input.codeHash)
    .where('platform', '=', input.platform)
    .where('used_at', 'is', null)
    .where('expires_at', '>', input.now)
    .returning('code_hash')
    .executeTakeFirst();
  return row !== undefined;
}

/** Deletes codes that expired at or before `now` (used or not). Returns how many. */
export async function deleteExpiredPairingCodes(ex: Executor, now: string): Promise<number> {
  const result = await ex.deleteFrom('pairing_codes').where('expires_at', '<=', now).executeTakeFirst();
  return Number(result.numDeletedRows);
}

/** The attempt limit and lock of a reservation. */
export interface AttemptPolicy {
  /** Now, ISO 8601. */
  now: string;
  /** Reservations allowed before the key locks (5). */
  maxFailures: number;
  /** When a lock set by this reservation ends, ISO 8601 (now + 300 s). */
  lockUntil: string;
}

/** A reservation's outcome: the key's new count, or refused because the key is locked. */
export type Reservation = { ok: true; failures: number } | { ok: false };

/**
 * Reserves one verify attempt for `key` in a single conditional upsert,
 * before any code is checked. It succeeds only when the key is not locked
 * (no lock, or an expired one, which restarts the count at 0) and has fewer
 * than `maxFailures` reservations; it then returns the new count. The
 * reservation that reaches `maxFailures` also sets `locked_until` to
 * `lockUntil`, so later ones are refused even while it is still being
 * checked, and a crash after it leaves a lock that expires on its own. A
 * success must `resetPairAttempts`; a failure leaves the count as it is.
 */
export async function reservePairAttempt(ex: Executor, key: string, policy: AttemptPolicy): Promise<Reservation> {
  const { now, maxFailures, lockUntil } = policy;
  const expired = sql<boolean>`(pair_attempts.locked_until is not null and pair_attempts.locked_until <= ${now})`;
  const next = sql<number>`(case when ${expired} then 1 else pair_attempts.failures + 1 end)`;
  const row = await ex
    .insertInto('pair_attempts')
    .values({ key, failures: 1, locked_until: maxFailures <= 1 ? lockUntil : null, updated_at: now })
    .onConflict((oc) =>
      oc
        .column('key')
        .doUpdateSet({
          failures: next,
          locked_until: sql<string | null>`(case when ${next} >= ${maxFailures} then ${lockUntil} else null end)`,
          updated_at: now,
        })
        .where(
          sql<boolean>`((pair_attempts.locked_until is null and pair_attempts.failures < ${maxFailures}) or ${expired})`,
        ),
    )
    .returning('failures')
    .executeTakeFirst();
  return row ? { ok: true, failures: Number(row.failures) } : { ok: false };
}

/**
 * Takes back a reservation made earlier in the same transaction (the other
 * key of the attempt was locked): one count less and no lock, the state the
 * successful reservation started from.
 */
export async function releasePairAttempt(ex: Executor, key: string, now: string): Promise<void> {
  await ex
    .updateTable('pair_attempts')
    .set({
      failures: sql<number>`(case when failures > 0 then failures - 1 else 0 end)`,
      locked_until: null,
      updated_at: now,
    })
    .where('key', '=', key)
    .execute();
}

/**
 * Reserves one attempt on every key, in the given order, all or nothing:
 * when a key is locked the reservations already made in this call are
 * released, so a locked key never uses up another key's attempts. Run it in
 * one transaction (a group-commit op) so the partial state is never visible.
 * Returns the new count of each key, or refused.
 */
export async function reservePairAttempts(
  ex: Executor,
  keys: readonly string[],
  policy: AttemptPolicy,
): Promise<{ ok: true; failures: number[] } | { ok: false }> {
  const failures: number[] = [];
  for (const [i, key] of keys.entries()) {
    const reservation = await reservePairAttempt(ex, key, policy);
    if (!reservation.ok) {
      for (const reserved of keys.slice(0, i)) await releasePairAttempt(ex, reserved, policy.now);
      return { ok: false };
    }
    failures.push(reservation.failures);
  }
  return { ok: true, failures };
}

/** The latest unexpired lock end among `keys` at `now`, or null when none of them is locked. */
export async function pairLockedUntil(ex: Executor, keys: readonly string[], now: string): Promise<string | null> {
  if (keys.length === 0) return null;
  const rows = await ex
    .selectFrom('pair_attempts')
    .select('locked_until')
    .where('key', 'in', [...keys])
    .where('locked_until', '>', now)
    .execute();
  let latest: string | null = null;
  for (const row of rows)
    if (row.locked_until !== null && (latest === null || row.locked_until > latest)) latest = row.locked_until;
  return latest;
}

/** Resets the counters (and locks) of `keys` to 0: a success. */
export async function resetPairAttempts(ex: Executor, keys: readonly string[]): Promise<void> {
  if (keys.length === 0) return;
  await ex
    .deleteFrom('pair_attempts')
    .where('key', 'in', [...keys])
    .execute();
}

/** Deletes counters whose lock expired at or before `now` (an expired lock means a count of 0). Returns how many. */
export async function deleteExpiredPairLocks(ex: Executor, now: string): Promise<number> {
  const result = await ex.deleteFrom('pair_attempts').where('locked_until', '<=', now).executeTakeFirst();
  return Number(result.numDeletedRows);
}

/** Records a paired identity; pairing it again keeps the first `paired_at`. */
export async function insertPairedUser(
  ex: Executor,
  input: { platform: string; userId: string; now: string },
): Promise<void> {
  await ex
    .insertInto('paired_users')
    .values({ platform: input.platform, user_id: input.userId, paired_at: input.now })
    .onConflict((oc) => oc.columns(['platform', 'user_id']).doNothing())
    .execute();
}

/** True when `platform:userId` has been paired. */
export async function isPairedUser(ex: Executor, platform: string, userId: string): Promise<boolean> {
  const row = await ex
    .selectFrom('paired_users')
    .select('platform')
    .where('platform', '=', platform)
    .where('user_id', '=', userId)
    .executeTakeFirst();
  return row !== undefined;
}
