import type { AuthMode } from '../config/config.schema.js';
import { errors } from '../http/errors.js';
import type { AuditLog } from './audit.js';

/** The verdict for one user identity. */
export type IdentityVerdict = 'admin' | 'allowed' | 'denied';

/**
 * Whether `platform:userId` matches a list of `allowed_users`-style entries.
 * A `platform:user` entry beats a plain one (spec: allowed_users formats):
 * returns 'qualified' or 'plain' for the strongest match, or null.
 */
export function matchUser(entries: readonly string[], platform: string, userId: string): 'qualified' | 'plain' | null {
  const qualified = `${platform}:${userId}`;
  let plain = false;
  for (const entry of entries) {
    if (entry === qualified) return 'qualified';
    if (entry === userId) plain = true;
  }
  return plain ? 'plain' : null;
}

/**
 * Decides a user identity by auth mode (DECISIONS §4): open → everyone;
 * allowlist → `allowed_users`/`admin_users`; pairing → those plus paired
 * identities. `admin_users` grant admin; when both lists match, the
 * platform-qualified entry decides which one applies.
 */
export function judgeIdentity(options: {
  mode: AuthMode;
  allowedUsers: readonly string[];
  adminUsers: readonly string[];
  platform: string;
  userId: string;
  paired: boolean;
}): IdentityVerdict {
  const admin = matchUser(options.adminUsers, options.platform, options.userId);
  const allowed = matchUser(options.allowedUsers, options.platform, options.userId);
  if (admin && (admin === 'qualified' || allowed !== 'qualified')) return 'admin';
  if (options.mode === 'open') return 'allowed';
  if (allowed) return 'allowed';
  if (options.mode === 'pairing' && options.paired) return 'allowed';
  return 'denied';
}

/**
 * Checks a user identity by the auth mode (DECISIONS §4) for every message
 * that carries a user: POST /message, the webhook sender, the WebSocket
 * identity. Resolves when allowed; throws ApiError 403 when not.
 */
export type IdentityCheck = (input: {
  platform: string;
  userId: string;
  /** Loopback peer with an accepted Host and loopback_trust on: skip the check (spec: loopback exemption). */
  loopbackTrusted: boolean;
  ip: string;
}) => Promise<void>;

/** The user-identity policy of the running gateway. */
export interface IdentityPolicy {
  /** The check every entry point's messages pass (through the message path). */
  check: IdentityCheck;
  /** True when `platform:userId` is among `admin_users` (chat commands `/approve`, `/deny`). */
  isAdminUser: (platform: string, userId: string) => boolean;
}

/**
 * Builds the identity policy from the auth block: `judgeIdentity` with the
 * paired identities (pairing mode), an `auth_failure` audit line for every
 * refusal (reason `user_not_allowed`) and 403.
 */
export function createIdentityPolicy(options: {
  auth: { mode: AuthMode; allowed_users: readonly string[]; admin_users: readonly string[] };
  /** Whether the identity completed pairing (read only in pairing mode). */
  isPaired: (platform: string, userId: string) => Promise<boolean>;
  audit: Pick<AuditLog, 'record'>;
}): IdentityPolicy {
  const { auth } = options;
  const judge = (platform: string, userId: string, paired: boolean): IdentityVerdict =>
    judgeIdentity({
      mode: auth.mode,
      allowedUsers: auth.allowed_users,
      adminUsers: auth.admin_users,
      platform,
      userId,
      paired,
    });
  return {
    async check(input) {
      if (input.loopbackTrusted) return; // loopback exemption (spec); tokens were still required
      const paired = auth.mode === 'pairing' ? await options.isPaired(input.platform, input.userId) : false;
      if (judge(input.platform, input.userId, paired) !== 'denied') return;
      options.audit.record({
        event: 'auth_failure',
        ip: input.ip,
        user: `${input.platform}:${input.userId}`,
        mode: auth.mode,
        reason: 'user_not_allowed',
      });
      throw errors.forbidden(`user ${input.platform}:${input.userId} is not authorised`);
    },
    isAdminUser: (platform, userId) => judge(platform, userId, false) === 'admin',
  };
}
