import type { AuthConfig } from '../config/config.schema.js';
import type { Clock } from '../lib/clock.js';
import type { AuditLog } from '../security/audit.js';
import type { Store } from '../store/index.js';

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

export interface PairingServiceOptions {
  store: Store;
  clock: Clock;
  auth: AuthConfig;
  audit: AuditLog;
}

/** Builds the pairing service. */
export function createPairingService(options: PairingServiceOptions): PairingService {
  void options;
  return {
    issue: () => Promise.reject(new Error('pairing not implemented yet')),
    verify: () => Promise.reject(new Error('pairing not implemented yet')),
    isPaired: () => Promise.resolve(false),
  };
}
