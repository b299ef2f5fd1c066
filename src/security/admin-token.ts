import { randomBytes } from 'node:crypto';
import {
  closeSync,
  fsyncSync,
  linkSync,
  openSync,
  readFileSync,
  renameSync,
  statSync,
  unlinkSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';
import type { SecurityProfile } from '../config/config.schema.js';
import { ensurePrivateDirSync, tightenPrivateFileSync } from '../lib/private-files.js';
import { gatewayAuthDir } from './audit.js';
import { isLoopbackHost } from './host-origin.js';

/**
 * The first-start admin token (DECISIONS §4): with profile standard/extended
 * and no tokens configured, generate an admin token, store it in
 * `data_dir/gateway_auth/admin_token` (0600) and let the caller print it once.
 * Refuse to start bound to a non-loopback address with no tokens at all, and
 * refuse profile `minimal` on a non-loopback address.
 */

/** `<dataDir>/gateway_auth/admin_token`. */
export function adminTokenPath(dataDir: string): string {
  return join(gatewayAuthDir(dataDir), 'admin_token');
}

/** The outcome of `ensureAdminToken`. */
export interface AdminTokenResult {
  /** The stored admin token (always admin, see `createTokenBook`'s `extraAdminTokens`), or null. */
  token: string | null;
  /** True when this call created it: the caller prints it once with the URL. */
  generated: boolean;
  /** Where it is (or would be) stored. */
  path: string;
}

/** Options of `ensureAdminToken`. */
export interface EnsureAdminTokenOptions {
  dataDir: string;
  profile: SecurityProfile;
  /** Number of configured `api_tokens` + `admin_tokens`. */
  configuredTokens: number;
  /** `gateway.host`. */
  bindHost: string;
}

/** Reads the stored token (trimmed); null when the file is absent or blank. Tightens a loose mode. */
function readStoredToken(path: string): string | null {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
  tightenPrivateFileSync(path);
  const token = text.trim();
  return token === '' ? null : token;
}

/** Best-effort fsync of a directory, so the renamed/linked entry survives a crash. */
function syncDirSync(dir: string): void {
  try {
    const fd = openSync(dir, 'r');
    try {
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
  } catch {
    // not supported everywhere
  }
}

/**
 * Writes `token` to `path` without ever exposing a half-written file: the
 * content goes to a 0600 temp file (fsync'd) that is then linked into place —
 * failing if another process got there first, in which case its token wins —
 * or renamed over a blank file. Returns the token that is in place.
 */
function writeTokenAtomically(dir: string, path: string, token: string, replaceExisting: boolean): string {
  ensurePrivateDirSync(dir);
  const tmp = join(dir, `.admin_token.${process.pid}.${randomBytes(6).toString('hex')}.tmp`);
  const fd = openSync(tmp, 'wx', 0o600);
  try {
    writeSync(fd, `${token}\n`);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  try {
    if (replaceExisting) {
      renameSync(tmp, path);
      return token;
    }
    try {
      linkSync(tmp, path); // atomic create-if-absent
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'EEXIST') {
        const existing = readStoredToken(path);
        if (existing !== null) return existing;
        renameSync(tmp, path);
        return token;
      }
      if (code === 'EPERM' || code === 'ENOTSUP' || code === 'EOPNOTSUPP' || code === 'ENOSYS') {
        renameSync(tmp, path); // filesystem without hard links
        return token;
      }
      throw err;
    }
    return token;
  } finally {
    syncDirSync(dir);
    try {
      unlinkSync(tmp);
    } catch {
      // already renamed away
    }
  }
}

/**
 * Ensures the first-start admin token (DECISIONS §4):
 * - profile `minimal` → no token;
 * - tokens configured → nothing generated, but an existing `admin_token` file
 *   is still returned (it stays valid);
 * - no tokens configured: an existing file is read (`generated: false`);
 *   otherwise, on a loopback bind, 32 random bytes (base64url) are written with
 *   mode 0600 (`generated: true`); on a non-loopback bind this throws, since a
 *   non-loopback bind needs configured tokens.
 */
export function ensureAdminToken(options: EnsureAdminTokenOptions): AdminTokenResult {
  const dir = gatewayAuthDir(options.dataDir);
  const path = adminTokenPath(options.dataDir);
  if (options.profile === 'minimal') return { token: null, generated: false, path };

  const existing = readStoredToken(path);
  if (existing !== null) return { token: existing, generated: false, path };
  if (options.configuredTokens > 0) return { token: null, generated: false, path };

  if (!isLoopbackHost(options.bindHost)) {
    throw new Error(
      `gateway.host ${JSON.stringify(options.bindHost)} is not a loopback address and no tokens are configured: ` +
        'a non-loopback bind needs gateway.auth.api_tokens or gateway.auth.admin_tokens ' +
        '(or bind to 127.0.0.1 to get a generated admin token)',
    );
  }

  const fileExists = (() => {
    try {
      statSync(path);
      return true;
    } catch {
      return false;
    }
  })();
  const candidate = randomBytes(32).toString('base64url');
  const token = writeTokenAtomically(dir, path, candidate, fileExists);
  return { token, generated: token === candidate, path };
}

/**
 * Replaces the stored admin token with `token` (`gatehouse token rotate`): written 0600 to a temp file, fsync'd
 * and renamed over the old one, so a crash leaves either token whole. A running gateway keeps the token it
 * read at start-up until it restarts.
 */
export function replaceAdminToken(dataDir: string, token: string): void {
  writeTokenAtomically(gatewayAuthDir(dataDir), adminTokenPath(dataDir), token, true);
}

/**
 * The one-click sign-in link of the first-start banner (DECISIONS §14): the dashboard's URL with the token in
 * the fragment (`http://host:port/#token=…`). A fragment is never sent in a request, so the token reaches no
 * request log; the dashboard moves it into `sessionStorage` and removes it from the address bar at once.
 */
export function dashboardSignInLink(baseUrl: string, token: string): string {
  return `${baseUrl.replace(/\/+$/, '')}/#token=${encodeURIComponent(token)}`;
}

/** Options of `startupRefusal`. */
export interface StartupRefusalOptions {
  profile: SecurityProfile;
  /** `gateway.host`. */
  bindHost: string;
  /** Number of configured `api_tokens` + `admin_tokens`. */
  configuredTokens: number;
  /** Whether `data_dir/gateway_auth/admin_token` holds a token. */
  adminTokenFileExists: boolean;
}

/**
 * Why the gateway must not start, or null (DECISIONS §4):
 * - profile `minimal` on a non-loopback address (minimal is for local development only);
 * - profile standard/extended on a non-loopback address with no tokens at all
 *   (neither configured nor an `admin_token` file).
 */
export function startupRefusal(options: StartupRefusalOptions): string | null {
  if (isLoopbackHost(options.bindHost)) return null;
  const where = `gateway.host ${JSON.stringify(options.bindHost)} is not a loopback address`;
  if (options.profile === 'minimal') {
    return (
      `refusing to start: security.profile is minimal and ${where}; ` +
      'minimal is for local development only — bind to 127.0.0.1 or use profile standard'
    );
  }
  if (options.configuredTokens === 0 && !options.adminTokenFileExists) {
    return (
      `refusing to start: ${where} and no tokens are configured; ` +
      'set gateway.auth.api_tokens or gateway.auth.admin_tokens'
    );
  }
  return null;
}
