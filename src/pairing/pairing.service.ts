import { createHash, randomInt } from 'node:crypto';
import type { AuthConfig } from '../config/config.schema.js';
import { isoTime, type Clock } from '../lib/clock.js';
import type { AuditLog } from '../security/audit.js';
import type { Store } from '../store/index.js';
import {
  consumePairingCode,
  deleteExpiredPairLocks,
  deleteExpiredPairingCodes,
  insertPairedUser,
  insertPairingCode,
  isPairedUser,
  pairLockedUntil,
  reservePairAttempts,
  resetPairAttempts,
} from './pairing.repo.js';

/** The outcome of a verify attempt. */
export type VerifyResult =
  | { ok: true }
  | { ok: false; reason: 'invalid_code'; attempts: number }
  | { ok: false; reason: 'locked'; retryAfterSeconds: number; attempts?: number; justLocked: boolean };

/** Pairing codes, verification with lockout, and paired identities (spec: Pairing; DECISIONS §4). */
export interface PairingService {
  /** Issues a single-use code for `platform`, valid `pairing_ttl_seconds`. */
  issue(input: { platform: string; ip: string; issuer: string }): Promise<{ code: string; ttlSeconds: number }>;
  /** Verifies a code for an identity; counts failures per source IP and per identity. */
  verify(input: { platform: string; userId: string; code: string; ip: string }): Promise<VerifyResult>;
  /** True when `platform:userId` has been paired. */
  isPaired(platform: string, userId: string): Promise<boolean>;
}

/** What the pairing service needs. */
export interface PairingServiceOptions {
  store: Store;
  /** The only time source: code expiry and lockouts follow it. */
  clock: Clock;
  auth: AuthConfig;
  audit: AuditLog;
}

/** Code alphabet: upper-case letters and digits without the look-alikes 0/O, 1/I/L. */
export const PAIRING_CODE_ALPHABET = 'ABCDEFGHJKMNPQRSTUVWXYZ23456789';

/** Characters in a pairing code. */
export const PAIRING_CODE_LENGTH = 8;

/** Consecutive verify failures that lock a source IP or identity (spec: Limits). */
export const PAIRING_MAX_FAILURES = 5;

/** How long a lock lasts (spec: Limits). */
export const PAIRING_LOCKOUT_SECONDS = 300;

/** Draws a pairing code from crypto randomness, uniformly over the alphabet (no modulo bias). */
export function generatePairingCode(): string {
  let code = '';
  for (let i = 0; i < PAIRING_CODE_LENGTH; i++) code += PAIRING_CODE_ALPHABET[randomInt(PAIRING_CODE_ALPHABET.length)];
  return code;
}

/**
 * The stored form of a code: SHA-256 hex of the code with surrounding spaces
 * removed and letters upper-cased (a typed `abcd2345` matches `ABCD2345`).
 */
export function hashPairingCode(code: string): string {
  return createHash('sha256').update(code.trim().toUpperCase(), 'utf8').digest('hex');
}

/** The attempt-counter key of a source IP. */
export function ipAttemptKey(ip: string): string {
  return `ip:${ip}`;
}

/** The attempt-counter key of an identity; JSON keeps `a:b`+`c` apart from `a`+`b:c`. */
export function identityAttemptKey(platform: string, userId: string): string {
  return `user:${JSON.stringify([platform, userId])}`;
}

/** What the verify transaction decided; audit and the answer follow from it. */
type VerifyOutcome =
  { kind: 'paired' } | { kind: 'refused'; lockedUntil: string | null } | { kind: 'failed'; attempts: number };

const MAX_ISSUE_TRIES = 5;

/**
 * Builds the pairing service. Every write is one group-commit op, so it is a
 * single transaction that is durable when the promise resolves; all state is
 * in the database, so the lockout holds across processes sharing PostgreSQL.
 *
 * Verify, in one transaction: reserve an attempt on the IP key, then on the
 * identity key (all or nothing; a refused key releases the other's
 * reservation); refused → 429 without looking at the code. Then consume the
 * code with one conditional update (right hash and platform, unused,
 * unexpired). Success resets both counters and records the identity; failure
 * keeps the counts, and the reservation that reached 5 has already set the
 * 300 s lock, so it answers 429 and every other gets 401.
 */
export function createPairingService(options: PairingServiceOptions): PairingService {
  const { store, clock, auth, audit } = options;
  const ttlSeconds = auth.pairing_ttl_seconds;

  return {
    async issue(input) {
      for (let attempt = 0; attempt < MAX_ISSUE_TRIES; attempt++) {
        const code = generatePairingCode();
        const nowMs = clock.now();
        const now = isoTime(nowMs);
        const inserted = await store.writer.run(async (trx) => {
          await deleteExpiredPairingCodes(trx, now);
          await deleteExpiredPairLocks(trx, now);
          return insertPairingCode(trx, {
            codeHash: hashPairingCode(code),
            platform: input.platform,
            now,
            expiresAt: isoTime(nowMs + ttlSeconds * 1000),
          });
        });
        if (inserted) {
          audit.record({ event: 'pair_code_issued', ip: input.ip, user: input.issuer, mode: auth.mode });
          return { code, ttlSeconds };
        }
      }
      throw new Error(`could not draw an unused pairing code in ${MAX_ISSUE_TRIES} tries`);
    },

    async verify(input) {
      const nowMs = clock.now();
      const now = isoTime(nowMs);
      const identity = `${input.platform}:${input.userId}`;
      const keys = [ipAttemptKey(input.ip), identityAttemptKey(input.platform, input.userId)];
      const codeHash = hashPairingCode(input.code);
      const outcome = await store.writer.run(async (trx): Promise<VerifyOutcome> => {
        const reservation = await reservePairAttempts(trx, keys, {
          now,
          maxFailures: PAIRING_MAX_FAILURES,
          lockUntil: isoTime(nowMs + PAIRING_LOCKOUT_SECONDS * 1000),
        });
        if (!reservation.ok) return { kind: 'refused', lockedUntil: await pairLockedUntil(trx, keys, now) };
        if (await consumePairingCode(trx, { codeHash, platform: input.platform, now })) {
          await resetPairAttempts(trx, keys);
          await insertPairedUser(trx, { platform: input.platform, userId: input.userId, now });
          return { kind: 'paired' };
        }
        return { kind: 'failed', attempts: Math.max(...reservation.failures) };
      });

      const base = { ip: input.ip, user: identity, mode: auth.mode };
      switch (outcome.kind) {
        case 'paired':
          audit.record({ event: 'paired', ...base });
          return { ok: true };
        case 'refused': {
          // No lock end to read only if the row changed under us; answer with a full lock then.
          const remainingMs =
            outcome.lockedUntil === null ? PAIRING_LOCKOUT_SECONDS * 1000 : Date.parse(outcome.lockedUntil) - nowMs;
          const retryAfterSeconds = Math.min(PAIRING_LOCKOUT_SECONDS, Math.max(1, Math.ceil(remainingMs / 1000)));
          return { ok: false, reason: 'locked', retryAfterSeconds, justLocked: false };
        }
        case 'failed':
          if (outcome.attempts >= PAIRING_MAX_FAILURES) {
            audit.record({
              event: 'lockout_triggered',
              ...base,
              reason: 'invalid_pairing_code',
              attempts: outcome.attempts,
              lockout_seconds: PAIRING_LOCKOUT_SECONDS,
            });
            return {
              ok: false,
              reason: 'locked',
              retryAfterSeconds: PAIRING_LOCKOUT_SECONDS,
              attempts: outcome.attempts,
              justLocked: true,
            };
          }
          audit.record({ event: 'auth_failure', ...base, reason: 'invalid_pairing_code', attempts: outcome.attempts });
          return { ok: false, reason: 'invalid_code', attempts: outcome.attempts };
      }
    },

    isPaired(platform, userId) {
      return isPairedUser(store.db, platform, userId);
    },
  };
}
