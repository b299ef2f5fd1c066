import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { adminTokenPath, ensureAdminToken, startupRefusal } from './admin-token.js';

let dataDir: string;

beforeEach(() => {
  dataDir = mkdtempSync(join(tmpdir(), 'gatehouse-admin-'));
});

afterEach(() => {
  rmSync(dataDir, { recursive: true, force: true });
});

function writeToken(content: string): void {
  mkdirSync(join(dataDir, 'gateway_auth'), { recursive: true });
  writeFileSync(adminTokenPath(dataDir), content, { mode: 0o600 });
}

describe('ensureAdminToken', () => {
  it('generates a 32-byte base64url token on a loopback bind, mode 0600 in a 0700 dir', () => {
    const result = ensureAdminToken({ dataDir, profile: 'standard', configuredTokens: 0, bindHost: '127.0.0.1' });
    expect(result.generated).toBe(true);
    expect(result.path).toBe(join(dataDir, 'gateway_auth', 'admin_token'));
    expect(result.token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(Buffer.from(result.token ?? '', 'base64url')).toHaveLength(32);
    expect(readFileSync(result.path, 'utf8').trim()).toBe(result.token);
    expect(statSync(result.path).mode & 0o777).toBe(0o600);
    expect(statSync(join(dataDir, 'gateway_auth')).mode & 0o777).toBe(0o700);
    // no temp files left behind
    expect(readdirSync(join(dataDir, 'gateway_auth'))).toEqual(['admin_token']);
  });

  it('reuses the stored token on the next start', () => {
    const first = ensureAdminToken({ dataDir, profile: 'extended', configuredTokens: 0, bindHost: 'localhost' });
    const second = ensureAdminToken({ dataDir, profile: 'extended', configuredTokens: 0, bindHost: 'localhost' });
    expect(second).toEqual({ token: first.token, generated: false, path: first.path });
  });

  it('generates a different token for a different data dir', () => {
    const other = mkdtempSync(join(tmpdir(), 'gatehouse-admin-'));
    try {
      const a = ensureAdminToken({ dataDir, profile: 'standard', configuredTokens: 0, bindHost: '::1' });
      const b = ensureAdminToken({ dataDir: other, profile: 'standard', configuredTokens: 0, bindHost: '::1' });
      expect(a.token).not.toBe(b.token);
    } finally {
      rmSync(other, { recursive: true, force: true });
    }
  });

  it('reads an existing file trimmed, and tightens a loose mode', () => {
    writeToken('  hand-made-token\n');
    chmodSync(adminTokenPath(dataDir), 0o644);
    const result = ensureAdminToken({ dataDir, profile: 'standard', configuredTokens: 0, bindHost: '127.0.0.1' });
    expect(result).toMatchObject({ token: 'hand-made-token', generated: false });
    expect(statSync(adminTokenPath(dataDir)).mode & 0o777).toBe(0o600);
  });

  it('replaces a blank file with a generated token', () => {
    writeToken('   \n');
    const result = ensureAdminToken({ dataDir, profile: 'standard', configuredTokens: 0, bindHost: '127.0.0.1' });
    expect(result.generated).toBe(true);
    expect(readFileSync(adminTokenPath(dataDir), 'utf8').trim()).toBe(result.token);
  });

  it('profile minimal → no token, nothing written', () => {
    const result = ensureAdminToken({ dataDir, profile: 'minimal', configuredTokens: 0, bindHost: '127.0.0.1' });
    expect(result).toEqual({ token: null, generated: false, path: adminTokenPath(dataDir) });
    expect(existsSync(join(dataDir, 'gateway_auth'))).toBe(false);
  });

  it('configured tokens → nothing generated, but an existing file stays valid', () => {
    const none = ensureAdminToken({ dataDir, profile: 'standard', configuredTokens: 2, bindHost: '127.0.0.1' });
    expect(none).toEqual({ token: null, generated: false, path: adminTokenPath(dataDir) });
    expect(existsSync(adminTokenPath(dataDir))).toBe(false);

    writeToken('earlier-generated\n');
    const kept = ensureAdminToken({ dataDir, profile: 'standard', configuredTokens: 2, bindHost: '0.0.0.0' });
    expect(kept).toEqual({ token: 'earlier-generated', generated: false, path: adminTokenPath(dataDir) });
  });

  it('non-loopback bind with no tokens and no file → throws, writes nothing', () => {
    for (const bindHost of ['0.0.0.0', '::', '', '192.168.1.5']) {
      expect(() => ensureAdminToken({ dataDir, profile: 'standard', configuredTokens: 0, bindHost })).toThrow(
        /gateway\.auth\.api_tokens/,
      );
    }
    expect(existsSync(adminTokenPath(dataDir))).toBe(false);
  });

  it('non-loopback bind with an existing file → returns it', () => {
    writeToken('from-an-earlier-loopback-start');
    const result = ensureAdminToken({ dataDir, profile: 'standard', configuredTokens: 0, bindHost: '0.0.0.0' });
    expect(result).toMatchObject({ token: 'from-an-earlier-loopback-start', generated: false });
  });
});

describe('startupRefusal', () => {
  it('refuses profile minimal on a non-loopback address', () => {
    for (const bindHost of ['0.0.0.0', '::', '', '10.1.2.3']) {
      const message = startupRefusal({ profile: 'minimal', bindHost, configuredTokens: 5, adminTokenFileExists: true });
      expect(message, bindHost).toMatch(/minimal is for local development only/);
    }
  });

  it('allows profile minimal on loopback', () => {
    for (const bindHost of ['127.0.0.1', '127.0.0.2', '::1', 'localhost']) {
      expect(
        startupRefusal({ profile: 'minimal', bindHost, configuredTokens: 0, adminTokenFileExists: false }),
      ).toBeNull();
    }
  });

  it('refuses standard/extended on a non-loopback address with no tokens at all', () => {
    for (const profile of ['standard', 'extended'] as const) {
      const message = startupRefusal({
        profile,
        bindHost: '0.0.0.0',
        configuredTokens: 0,
        adminTokenFileExists: false,
      });
      expect(message).toMatch(/no tokens are configured/);
      expect(message).toMatch(/gateway\.auth\.api_tokens/);
    }
  });

  it('allows a non-loopback address with configured tokens or an admin_token file', () => {
    expect(
      startupRefusal({ profile: 'standard', bindHost: '0.0.0.0', configuredTokens: 1, adminTokenFileExists: false }),
    ).toBeNull();
    expect(
      startupRefusal({ profile: 'extended', bindHost: '::', configuredTokens: 0, adminTokenFileExists: true }),
    ).toBeNull();
  });

  it('allows standard on loopback with no tokens (one is generated)', () => {
    expect(
      startupRefusal({ profile: 'standard', bindHost: '127.0.0.1', configuredTokens: 0, adminTokenFileExists: false }),
    ).toBeNull();
  });
});
