import type { Kysely } from 'kysely';
import { afterEach, beforeEach, expect, it } from 'vitest';
import type { Database } from '../store/database.js';
import { type TestStore, describeBackends } from '../../test/helpers/stores.js';
import {
  consumePairingCode,
  deleteExpiredPairLocks,
  deleteExpiredPairingCodes,
  insertPairedUser,
  insertPairingCode,
  isPairedUser,
  pairLockedUntil,
  reservePairAttempt,
  reservePairAttempts,
  resetPairAttempts,
  type AttemptPolicy,
} from './pairing.repo.js';

const BASE = Date.UTC(2026, 10, 21, 10, 0, 0, 0);
const at = (seconds: number): string => new Date(BASE + seconds * 1000).toISOString();
/** The policy of the service at `seconds`: 5 reservations, then a 300 s lock. */
const policy = (seconds: number): AttemptPolicy => ({ now: at(seconds), maxFailures: 5, lockUntil: at(seconds + 300) });

describeBackends('pairing repository', (backend) => {
  let t: TestStore;
  let db: Kysely<Database>;

  beforeEach(async () => {
    t = await backend.open();
    db = t.store.db;
  });
  afterEach(async () => {
    await t.cleanup();
  });

  const issue = (codeHash: string, platform = 'telegram', ttl = 300) =>
    insertPairingCode(db, { codeHash, platform, now: at(0), expiresAt: at(ttl) });

  it('stores a code once per hash', async () => {
    expect(await issue('h1')).toBe(true);
    expect(await issue('h1')).toBe(false);
    const rows = await db.selectFrom('pairing_codes').selectAll().execute();
    expect(rows).toEqual([
      { code_hash: 'h1', platform: 'telegram', created_at: at(0), expires_at: at(300), used_at: null },
    ]);
  });

  it('a code is single use: of two concurrent consumers exactly one wins', async () => {
    await issue('h1');
    const results = await Promise.all([
      t.store.writer.run((trx) => consumePairingCode(trx, { codeHash: 'h1', platform: 'telegram', now: at(10) })),
      consumePairingCode(db, { codeHash: 'h1', platform: 'telegram', now: at(10) }),
    ]);
    expect(results.filter(Boolean)).toHaveLength(1);
    expect(await consumePairingCode(db, { codeHash: 'h1', platform: 'telegram', now: at(11) })).toBe(false);
    const row = await db.selectFrom('pairing_codes').select('used_at').executeTakeFirstOrThrow();
    expect(row.used_at).toBe(at(10));
  });

  it('many concurrent consumers in separate transactions: exactly one wins', async () => {
    await issue('h1');
    const results = await Promise.all(
      Array.from({ length: 10 }, () =>
        db
          .transaction()
          .execute((trx) => consumePairingCode(trx, { codeHash: 'h1', platform: 'telegram', now: at(10) })),
      ),
    );
    expect(results.filter(Boolean)).toHaveLength(1);
  });

  it('a code expires at its ttl', async () => {
    await issue('h1', 'telegram', 300);
    await issue('h2', 'telegram', 300);
    expect(await consumePairingCode(db, { codeHash: 'h1', platform: 'telegram', now: at(300) })).toBe(false);
    expect(await consumePairingCode(db, { codeHash: 'h2', platform: 'telegram', now: at(299.999) })).toBe(true);
  });

  it('a code is bound to its platform, and an unknown hash matches nothing', async () => {
    await issue('h1', 'telegram');
    expect(await consumePairingCode(db, { codeHash: 'h1', platform: 'discord', now: at(1) })).toBe(false);
    expect(await consumePairingCode(db, { codeHash: 'nope', platform: 'telegram', now: at(1) })).toBe(false);
    expect(await consumePairingCode(db, { codeHash: 'h1', platform: 'telegram', now: at(1) })).toBe(true);
  });

  it('deletes expired codes only', async () => {
    await issue('h1', 'telegram', 100);
    await issue('h2', 'telegram', 300);
    expect(await deleteExpiredPairingCodes(db, at(100))).toBe(1);
    const rows = await db.selectFrom('pairing_codes').select('code_hash').execute();
    expect(rows.map((r) => r.code_hash)).toEqual(['h2']);
  });

  it('reservations count to 5; the 5th sets the lock and later ones are refused', async () => {
    const counts: Array<number | null> = [];
    for (let i = 0; i < 7; i++) {
      const r = await reservePairAttempt(db, 'ip:a', policy(i));
      counts.push(r.ok ? r.failures : null);
    }
    expect(counts).toEqual([1, 2, 3, 4, 5, null, null]);
    const row = await db.selectFrom('pair_attempts').selectAll().executeTakeFirstOrThrow();
    expect(row).toMatchObject({ key: 'ip:a', failures: 5, locked_until: at(4 + 300) });
    expect(await pairLockedUntil(db, ['ip:a', 'user:x'], at(10))).toBe(at(304));
  });

  it('20 concurrent reservations on one key: exactly 5 succeed', async () => {
    const results = await Promise.all(
      Array.from({ length: 20 }, () => db.transaction().execute((trx) => reservePairAttempt(trx, 'ip:a', policy(0)))),
    );
    const granted = results.filter((r) => r.ok).map((r) => (r.ok ? r.failures : 0));
    expect(granted.sort((a, b) => a - b)).toEqual([1, 2, 3, 4, 5]);
  });

  it('20 concurrent two-key reservations: exactly 5 succeed, and a refusal leaves no count behind', async () => {
    const keys = ['ip:a', 'user:["api","u1"]'];
    const results = await Promise.all(
      Array.from({ length: 20 }, () => db.transaction().execute((trx) => reservePairAttempts(trx, keys, policy(0)))),
    );
    expect(results.filter((r) => r.ok)).toHaveLength(5);
    const rows = await db.selectFrom('pair_attempts').select(['key', 'failures']).orderBy('key').execute();
    expect(rows).toEqual([
      { key: 'ip:a', failures: 5 },
      { key: 'user:["api","u1"]', failures: 5 },
    ]);
  });

  it('a locked second key releases the first key: a locked identity does not use up the IP', async () => {
    for (let i = 0; i < 5; i++) expect((await reservePairAttempts(db, ['ip:a', 'user:u1'], policy(0))).ok).toBe(true);
    // ip:a is locked now too; a fresh IP against the locked identity is refused and keeps no count.
    expect(await reservePairAttempts(db, ['ip:b', 'user:u1'], policy(1))).toEqual({ ok: false });
    const b = await db.selectFrom('pair_attempts').selectAll().where('key', '=', 'ip:b').executeTakeFirstOrThrow();
    expect(b).toMatchObject({ failures: 0, locked_until: null });
    // The same IP with another identity still gets its reservation.
    expect(await reservePairAttempts(db, ['ip:b', 'user:u2'], policy(2))).toEqual({ ok: true, failures: [1, 1] });
  });

  it('a lock ends after its time: the count starts again from 0', async () => {
    for (let i = 0; i < 5; i++) await reservePairAttempt(db, 'ip:a', policy(0));
    expect((await reservePairAttempt(db, 'ip:a', policy(299.999))).ok).toBe(false);
    expect(await pairLockedUntil(db, ['ip:a'], at(300))).toBeNull();
    expect(await reservePairAttempt(db, 'ip:a', policy(300))).toEqual({ ok: true, failures: 1 });
    const row = await db.selectFrom('pair_attempts').selectAll().executeTakeFirstOrThrow();
    expect(row).toMatchObject({ failures: 1, locked_until: null });
  });

  it('reset clears counts and locks; expired locks are purged', async () => {
    for (let i = 0; i < 3; i++) await reservePairAttempts(db, ['ip:a', 'user:u1'], policy(0));
    for (let i = 0; i < 5; i++) await reservePairAttempt(db, 'ip:z', policy(0));
    await resetPairAttempts(db, ['ip:a', 'user:u1']);
    expect(await reservePairAttempt(db, 'ip:a', policy(1))).toEqual({ ok: true, failures: 1 });
    expect(await deleteExpiredPairLocks(db, at(299))).toBe(0);
    expect(await deleteExpiredPairLocks(db, at(300))).toBe(1);
    const keys = await db.selectFrom('pair_attempts').select('key').execute();
    expect(keys.map((k) => k.key)).toEqual(['ip:a']);
  });

  it('paired users are durable and pairing again keeps the first time', async () => {
    expect(await isPairedUser(db, 'telegram', 'u1')).toBe(false);
    await insertPairedUser(db, { platform: 'telegram', userId: 'u1', now: at(0) });
    await insertPairedUser(db, { platform: 'telegram', userId: 'u1', now: at(5) });
    expect(await isPairedUser(db, 'telegram', 'u1')).toBe(true);
    expect(await isPairedUser(db, 'discord', 'u1')).toBe(false);
    const other = await t.reopen();
    expect(await isPairedUser(other.db, 'telegram', 'u1')).toBe(true);
    const rows = await other.db.selectFrom('paired_users').selectAll().execute();
    expect(rows).toEqual([{ platform: 'telegram', user_id: 'u1', paired_at: at(0) }]);
  });
});
