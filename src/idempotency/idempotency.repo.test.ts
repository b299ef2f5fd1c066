import type { Kysely } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Database } from '../store/database.js';
import { type TestStore, describeBackends } from '../../test/helpers/stores.js';
import {
  type IdempotencyRecord,
  claimIdempotencyKey,
  countUnexpired,
  getIdempotencyRecord,
  purgeExpired,
  setIdempotencyExpiry,
} from './idempotency.repo.js';

const BASE = Date.UTC(2026, 10, 21, 10, 0, 0, 0);
const at = (seconds: number): string => new Date(BASE + seconds * 1000).toISOString();
const range = (n: number): number[] => Array.from({ length: n }, (_, i) => i);

function record(overrides: Partial<IdempotencyRecord> = {}): IdempotencyRecord {
  return {
    scope: 'principal:abc|gateway:api:1',
    key: 'key-1',
    fingerprint: 'fp-1',
    eventId: 'evt_1',
    sessionKey: 'gateway:api:1',
    wait: false,
    createdAt: at(0),
    expiresAt: null,
    ...overrides,
  };
}

describeBackends('idempotency repository', (backend) => {
  let t: TestStore;
  let db: Kysely<Database>;

  beforeEach(async () => {
    t = await backend.open();
    db = t.store.db;
  });
  afterEach(async () => {
    await t.cleanup();
  });

  /** Executors on separate connections where the backend has them (PostgreSQL pools), for real races. */
  async function executors(): Promise<Kysely<Database>[]> {
    if (backend.name === 'sqlite') return [db];
    const others = await Promise.all(range(3).map(() => t.reopen()));
    return [db, ...others.map((s) => s.db)];
  }

  describe('claiming', () => {
    it('creates a free key, then answers with the holder', async () => {
      const original = record({ wait: true });
      expect(await claimIdempotencyKey(db, original)).toEqual({ created: true });
      const retry = record({ fingerprint: 'fp-2', eventId: 'evt_2', createdAt: at(5) });
      expect(await claimIdempotencyKey(db, retry)).toEqual({ created: false, existing: original });
      expect(await getIdempotencyRecord(db, original.scope, original.key, at(5))).toEqual(original);
    });

    it('keeps scopes and keys apart', async () => {
      expect(await claimIdempotencyKey(db, record())).toEqual({ created: true });
      expect(await claimIdempotencyKey(db, record({ scope: 'principal:other|gateway:api:1' }))).toEqual({
        created: true,
      });
      expect(await claimIdempotencyKey(db, record({ key: 'key-2' }))).toEqual({ created: true });
      expect(await countUnexpired(db, at(0))).toBe(3);
    });

    it('exactly one of 10 concurrent claims creates; the rest see the winner', async () => {
      const dbs = await executors();
      const results = await Promise.all(
        range(10).map((i) => claimIdempotencyKey(dbs[i % dbs.length]!, record({ eventId: `evt_${i}` }))),
      );
      const created = results.flatMap((r, i) => (r.created ? [i] : []));
      expect(created).toHaveLength(1);
      const winner = `evt_${created[0]}`;
      for (const r of results) if (!r.created) expect(r.existing.eventId).toBe(winner);
    });

    it('replaces an expired record (expiry at or before the new claim)', async () => {
      await claimIdempotencyKey(db, record());
      await setIdempotencyExpiry(db, 'evt_1', at(100));

      const early = record({ eventId: 'evt_2', fingerprint: 'fp-2', createdAt: at(99) });
      expect(await claimIdempotencyKey(db, early)).toMatchObject({
        created: false,
        existing: { eventId: 'evt_1', expiresAt: at(100) },
      });

      const replacement = record({ eventId: 'evt_3', fingerprint: 'fp-3', wait: true, createdAt: at(100) });
      expect(await claimIdempotencyKey(db, replacement)).toEqual({ created: true });
      expect(await getIdempotencyRecord(db, replacement.scope, replacement.key, at(100))).toEqual(replacement);
    });

    it('exactly one of concurrent claims replaces an expired record', async () => {
      await claimIdempotencyKey(db, record());
      await setIdempotencyExpiry(db, 'evt_1', at(10));
      const dbs = await executors();
      const results = await Promise.all(
        range(10).map((i) =>
          claimIdempotencyKey(dbs[i % dbs.length]!, record({ eventId: `evt_new_${i}`, createdAt: at(20) })),
        ),
      );
      expect(results.filter((r) => r.created)).toHaveLength(1);
      const holder = await getIdempotencyRecord(db, record().scope, record().key, at(20));
      for (const r of results) if (!r.created) expect(r.existing.eventId).toBe(holder!.eventId);
      expect(holder!.eventId).toMatch(/^evt_new_/);
    });
  });

  describe('expiry', () => {
    it('getIdempotencyRecord hides an expired record', async () => {
      await claimIdempotencyKey(db, record());
      await setIdempotencyExpiry(db, 'evt_1', at(60));
      expect(await getIdempotencyRecord(db, record().scope, record().key, at(59))).toMatchObject({
        expiresAt: at(60),
      });
      expect(await getIdempotencyRecord(db, record().scope, record().key, at(60))).toBeNull();
      expect(await getIdempotencyRecord(db, 'nope', 'nope', at(0))).toBeNull();
    });

    it('setIdempotencyExpiry sets every record of the event that has none, and only those', async () => {
      await claimIdempotencyKey(db, record({ key: 'a' }));
      await claimIdempotencyKey(db, record({ key: 'b', scope: 'webhook:s|c' }));
      await claimIdempotencyKey(db, record({ key: 'c', expiresAt: at(5) }));
      await claimIdempotencyKey(db, record({ key: 'd', eventId: 'evt_other' }));
      expect(await setIdempotencyExpiry(db, 'evt_1', at(3600))).toBe(2);
      expect(await setIdempotencyExpiry(db, 'evt_1', at(7200))).toBe(0);
      const rows = await db.selectFrom('idempotency_records').select(['key', 'expires_at']).orderBy('key').execute();
      expect(rows).toEqual([
        { key: 'a', expires_at: at(3600) },
        { key: 'b', expires_at: at(3600) },
        { key: 'c', expires_at: at(5) },
        { key: 'd', expires_at: null },
      ]);
    });

    it('countUnexpired counts open and not-yet-expired records; purgeExpired deletes at most limit expired ones', async () => {
      for (const i of range(5)) {
        await claimIdempotencyKey(db, record({ key: `exp-${i}`, eventId: `evt_exp_${i}` }));
        await setIdempotencyExpiry(db, `evt_exp_${i}`, at(10 + i));
      }
      await claimIdempotencyKey(db, record({ key: 'open', eventId: 'evt_open' }));
      await claimIdempotencyKey(db, record({ key: 'later', eventId: 'evt_later', expiresAt: at(1000) }));

      expect(await countUnexpired(db, at(0))).toBe(7);
      expect(await countUnexpired(db, at(12))).toBe(4); // exp-0..2 expired (expiry <= now)

      expect(await purgeExpired(db, at(12), 2)).toBe(2);
      expect(await purgeExpired(db, at(12), 10)).toBe(1);
      expect(await purgeExpired(db, at(12), 10)).toBe(0);
      const keys = await db.selectFrom('idempotency_records').select('key').orderBy('key').execute();
      expect(keys.map((row) => row.key)).toEqual(['exp-3', 'exp-4', 'later', 'open']);
      expect(await countUnexpired(db, at(12))).toBe(4);
    });

    it('purgeExpired removes the earliest expiries first', async () => {
      for (const i of [3, 1, 2]) {
        await claimIdempotencyKey(db, record({ key: `k${i}`, eventId: `evt_${i}`, expiresAt: at(i) }));
      }
      expect(await purgeExpired(db, at(10), 2)).toBe(2);
      const keys = await db.selectFrom('idempotency_records').select('key').execute();
      expect(keys.map((row) => row.key)).toEqual(['k3']);
    });
  });
});
