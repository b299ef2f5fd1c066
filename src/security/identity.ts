import type { AuthMode } from '../config/config.schema.js';

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
