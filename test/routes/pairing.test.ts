import { readFileSync } from 'node:fs';
import type { LightMyRequestResponse } from 'fastify';
import { describe, expect, it } from 'vitest';
import { rateGroupOf } from '../../src/http/route.js';
import { auditLogPath } from '../../src/security/audit.js';
import { fingerprintToken } from '../../src/security/tokens.js';
import { ADMIN_TOKEN, API_TOKEN, adminHeaders, apiHeaders, useHarness, type Harness } from '../helpers/harness.js';
import { msg } from './builders.js';

const CODE_FORMAT = /^[ABCDEFGHJKMNPQRSTUVWXYZ23456789]{8}$/;
const IP_A = '198.51.100.1';
const IP_B = '198.51.100.2';
const IP_C = '198.51.100.3';

/** A well-formed code that differs from `code` (so it is certainly wrong). */
function wrongCode(code: string): string {
  return (code[0] === 'A' ? 'B' : 'A') + code.slice(1);
}

interface AuditLine {
  ts: string;
  event: string;
  ip: string;
  user: string;
  mode: string;
  reason?: string;
  attempts?: number;
  lockout_seconds?: number;
}

describe('pairing routes', () => {
  // Each test opens its own gateway, its time on a fresh ManualClock at 2026-11-21 10:00 UTC.
  const rig = useHarness({ clock: Date.UTC(2026, 10, 21, 10, 0, 0, 0), autoOpen: false });
  const open = (config: Record<string, unknown> = {}): Promise<Harness> => rig.open({ config });

  const pair = (h: Harness, body: unknown, headers: Record<string, string> = adminHeaders) =>
    h.inject({ method: 'POST', url: '/api/v1/pair', headers, payload: body as Record<string, unknown> });
  const issue = async (h: Harness, platform = 'telegram'): Promise<string> => {
    const res = await pair(h, { platform });
    expect(res.statusCode).toBe(201);
    return res.json<{ code: string }>().code;
  };
  const verify = (h: Harness, body: Record<string, unknown>, ip = IP_A): Promise<LightMyRequestResponse> =>
    h.inject({ method: 'POST', url: '/api/v1/pair/verify', headers: apiHeaders, payload: body, remoteAddress: ip });
  const attempt = (h: Harness, userId: string, code: string, ip = IP_A, platform = 'telegram') =>
    verify(h, { platform, user_id: userId, code }, ip);
  const auditLines = async (h: Harness): Promise<AuditLine[]> => {
    await h.internals.audit.flush();
    const text = readFileSync(auditLogPath(h.config.data_dir), 'utf8');
    return text
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => JSON.parse(line) as AuditLine);
  };
  const auditText = async (h: Harness): Promise<string> => {
    await h.internals.audit.flush();
    return readFileSync(auditLogPath(h.config.data_dir), 'utf8');
  };
  /** Codes checked so far: every failure that got to the code (401s and the lock trigger). */
  const checkedFailures = (lines: AuditLine[]) =>
    lines.filter(
      (l) => (l.event === 'auth_failure' && l.reason === 'invalid_pairing_code') || l.event === 'lockout_triggered',
    ).length;

  describe('POST /pair', () => {
    it('answers 201 {code, ttl_seconds} with an 8-character unambiguous code, not cached', async () => {
      const h = await open();
      const res = await pair(h, { platform: 'telegram' });
      expect(res.statusCode).toBe(201);
      const body = res.json<{ code: string; ttl_seconds: number }>();
      expect(Object.keys(body).sort()).toEqual(['code', 'ttl_seconds']);
      expect(body.code).toMatch(CODE_FORMAT);
      expect(body.ttl_seconds).toBe(300);
      expect(res.headers['cache-control']).toBe('no-store');
      const codes = new Set(await Promise.all(Array.from({ length: 20 }, () => issue(h))));
      expect(codes.size).toBe(20);
      for (const code of codes) expect(code).toMatch(CODE_FORMAT);
    });

    it('uses pairing_ttl_seconds and stores only a hash of the code', async () => {
      const h = await open({ gateway: { auth: { pairing_ttl_seconds: 60 } } });
      const res = await pair(h, { platform: 'discord' });
      expect(res.json()).toMatchObject({ ttl_seconds: 60 });
      const { code } = res.json<{ code: string }>();
      const rows = await h.internals.store.db.selectFrom('pairing_codes').selectAll().execute();
      expect(rows).toHaveLength(1);
      expect(rows[0]!.code_hash).toMatch(/^[0-9a-f]{64}$/);
      expect(JSON.stringify(rows)).not.toContain(code);
      expect(rows[0]).toMatchObject({
        platform: 'discord',
        expires_at: new Date(rig.clock.now() + 60_000).toISOString(),
      });
    });

    it('rejects a missing, empty or non-string platform and a non-object body with 400', async () => {
      const h = await open();
      for (const body of [{}, { platform: '' }, { platform: 7 }, [], 'telegram']) {
        const res = await pair(h, body);
        expect(res.statusCode, JSON.stringify(body)).toBe(400);
        expect(res.json()).toMatchObject({ error: { code: 'BAD_REQUEST' } });
      }
    });

    it('needs the admin token: an api token gets 403, no token 401', async () => {
      const h = await open();
      expect((await pair(h, { platform: 'telegram' }, apiHeaders)).statusCode).toBe(403);
      expect((await pair(h, { platform: 'telegram' }, {})).statusCode).toBe(401);
    });

    it('both routes count in the write rate group', async () => {
      const h = await open();
      const routes = h.internals.routes.filter((r) => r.path === '/pair' || r.path === '/pair/verify');
      expect(routes.map((r) => [r.path, r.permission, rateGroupOf(r)])).toEqual([
        ['/pair', 'admin', 'write'],
        ['/pair/verify', 'api', 'write'],
      ]);
    });
  });

  describe.each(['open', 'allowlist'])('auth mode %s', (mode) => {
    it('answers 404 NOT_FOUND on both routes, before looking at the body', async () => {
      const h = await open({ gateway: { auth: { mode } } });
      const issued = await pair(h, { platform: 'telegram' });
      expect(issued.statusCode).toBe(404);
      expect(issued.json()).toMatchObject({ error: { code: 'NOT_FOUND' } });
      expect((await pair(h, {})).statusCode).toBe(404);
      const verified = await attempt(h, 'u1', 'ABCDEFGH');
      expect(verified.statusCode).toBe(404);
      expect(verified.json()).toMatchObject({ error: { code: 'NOT_FOUND' } });
      expect((await verify(h, {})).statusCode).toBe(404);
    });
  });

  describe('POST /pair/verify', () => {
    it('pairs with the right code: 200 {status: paired, platform, user_id}', async () => {
      const h = await open();
      const code = await issue(h);
      const res = await attempt(h, 'u1', code);
      expect(res.statusCode).toBe(200);
      expect(res.json()).toEqual({ status: 'paired', platform: 'telegram', user_id: 'u1' });
      expect(await h.internals.pairing.isPaired('telegram', 'u1')).toBe(true);
      expect(await h.internals.pairing.isPaired('telegram', 'u2')).toBe(false);
      expect(await h.internals.pairing.isPaired('discord', 'u1')).toBe(false);
    });

    it('accepts the code typed in lower case', async () => {
      const h = await open();
      const code = await issue(h);
      expect((await attempt(h, 'u1', code.toLowerCase())).statusCode).toBe(200);
    });

    it('rejects missing, empty or non-string fields with 400, which do not count as failures', async () => {
      const h = await open();
      const bad = [
        {},
        { platform: 'telegram', user_id: 'u1' },
        { platform: 'telegram', user_id: '', code: 'ABCDEFGH' },
        { platform: '', user_id: 'u1', code: 'ABCDEFGH' },
        { platform: 'telegram', user_id: 'u1', code: '' },
        { platform: 'telegram', user_id: 7, code: 'ABCDEFGH' },
        { platform: 'telegram', user_id: 'u1', code: 12345678 },
      ];
      for (const body of bad) {
        const res = await verify(h, body);
        expect(res.statusCode, JSON.stringify(body)).toBe(400);
        expect(res.json()).toMatchObject({ error: { code: 'BAD_REQUEST' } });
      }
      const code = await issue(h);
      expect((await attempt(h, 'u1', code)).statusCode).toBe(200);
    });

    it('needs a token', async () => {
      const h = await open();
      const res = await h.inject({
        method: 'POST',
        url: '/api/v1/pair/verify',
        payload: { platform: 'telegram', user_id: 'u1', code: 'ABCDEFGH' },
      });
      expect(res.statusCode).toBe(401);
    });

    it('lockout: failures 1–4 are 401, the 5th 429 with Retry-After 300, then 429 even with the right code until 300 s pass', async () => {
      const h = await open({ gateway: { auth: { pairing_ttl_seconds: 3600 } } });
      const code = await issue(h);
      for (let i = 1; i <= 4; i++) {
        const res = await attempt(h, 'u1', wrongCode(code));
        expect(res.statusCode, `failure ${i}`).toBe(401);
        expect(res.json()).toMatchObject({ error: { code: 'UNAUTHORIZED' } });
      }
      const fifth = await attempt(h, 'u1', wrongCode(code));
      expect(fifth.statusCode).toBe(429);
      expect(fifth.headers['retry-after']).toBe('300');
      expect(fifth.json()).toMatchObject({ error: { code: 'RATE_LIMITED', details: { retry_after_seconds: 300 } } });

      const right = await attempt(h, 'u1', code);
      expect(right.statusCode).toBe(429);
      expect(right.headers['retry-after']).toBe('300');
      rig.clock.advance(200_000);
      const later = await attempt(h, 'u1', code);
      expect(later.statusCode).toBe(429);
      expect(later.headers['retry-after']).toBe('100');
      rig.clock.advance(99_999);
      expect((await attempt(h, 'u1', code)).statusCode).toBe(429);
      expect(await h.internals.pairing.isPaired('telegram', 'u1')).toBe(false);

      rig.clock.advance(1);
      const paired = await attempt(h, 'u1', code);
      expect(paired.statusCode).toBe(200);
      expect(paired.json()).toEqual({ status: 'paired', platform: 'telegram', user_id: 'u1' });
      // Only the 5 failures got to the code; the locked requests never did.
      expect(checkedFailures(await auditLines(h))).toBe(5);
    });

    it('after the lock expires the counter is back to 0: 4 × 401, then 429 again', async () => {
      const h = await open();
      for (let i = 0; i < 5; i++) await attempt(h, 'u1', 'ABCDEFGH');
      expect((await attempt(h, 'u1', 'ABCDEFGH')).statusCode).toBe(429);
      rig.clock.advance(300_000);
      const statuses: number[] = [];
      for (let i = 0; i < 5; i++) statuses.push((await attempt(h, 'u1', 'ABCDEFGH')).statusCode);
      expect(statuses).toEqual([401, 401, 401, 401, 429]);
    });

    it('a locked identity does not lock another identity from another IP, and costs that IP nothing', async () => {
      const h = await open();
      const code = await issue(h);
      for (let i = 0; i < 5; i++) await attempt(h, 'u1', wrongCode(code), IP_A);
      // The identity is locked from any IP.
      for (let i = 0; i < 3; i++) expect((await attempt(h, 'u1', code, IP_B)).statusCode).toBe(429);
      // IP_B was not charged for those: 4 failures for another identity are still 401.
      for (let i = 0; i < 4; i++) expect((await attempt(h, 'u3', wrongCode(code), IP_B)).statusCode).toBe(401);
      // Another identity from another IP pairs.
      expect((await attempt(h, 'u2', code, IP_C)).statusCode).toBe(200);
    });

    it('a locked IP locks every identity from it', async () => {
      const h = await open();
      const code = await issue(h);
      const statuses: number[] = [];
      for (let i = 1; i <= 5; i++) statuses.push((await attempt(h, `u${i}`, wrongCode(code), IP_A)).statusCode);
      expect(statuses).toEqual([401, 401, 401, 401, 429]);
      // A fresh identity with the right code from the locked IP: 429, code untouched.
      const res = await attempt(h, 'fresh', code, IP_A);
      expect(res.statusCode).toBe(429);
      expect(Number(res.headers['retry-after'])).toBe(300);
      // Each identity has only one failure, so from another IP they still get 401, and the code still works.
      expect((await attempt(h, 'u1', wrongCode(code), IP_B)).statusCode).toBe(401);
      expect((await attempt(h, 'fresh', code, IP_B)).statusCode).toBe(200);
    });

    it('success resets the counters: 3 failures, success, then 4 more failures are still 401', async () => {
      const h = await open();
      const first = await issue(h);
      for (let i = 0; i < 3; i++) expect((await attempt(h, 'u1', wrongCode(first))).statusCode).toBe(401);
      expect((await attempt(h, 'u1', first)).statusCode).toBe(200);
      const second = await issue(h);
      for (let i = 0; i < 4; i++) expect((await attempt(h, 'u1', wrongCode(second))).statusCode).toBe(401);
      expect((await attempt(h, 'u1', wrongCode(second))).statusCode).toBe(429);
      const failures = (await auditLines(h)).filter((l) => l.event === 'auth_failure').map((l) => l.attempts);
      expect(failures).toEqual([1, 2, 3, 1, 2, 3, 4]);
    });

    it('a code is single use', async () => {
      const h = await open();
      const code = await issue(h);
      expect((await attempt(h, 'u1', code)).statusCode).toBe(200);
      const again = await attempt(h, 'u2', code, IP_B);
      expect(again.statusCode).toBe(401);
      expect(again.json()).toMatchObject({ error: { code: 'UNAUTHORIZED' } });
      expect((await attempt(h, 'u1', code)).statusCode).toBe(401);
      expect(await h.internals.pairing.isPaired('telegram', 'u2')).toBe(false);
    });

    it('two concurrent uses of one code: exactly one pairs', async () => {
      const h = await open();
      const code = await issue(h);
      const results = await Promise.all([attempt(h, 'u1', code, IP_A), attempt(h, 'u2', code, IP_B)]);
      expect(results.map((r) => r.statusCode).sort()).toEqual([200, 401]);
    });

    it('an expired code is 401', async () => {
      const h = await open();
      const stale = await issue(h);
      rig.clock.advance(299_999);
      const fresh = await issue(h);
      expect((await attempt(h, 'u2', fresh)).statusCode).toBe(200); // still valid 1 ms before the ttl
      rig.clock.advance(1);
      const res = await attempt(h, 'u1', stale);
      expect(res.statusCode).toBe(401);
      expect(await h.internals.pairing.isPaired('telegram', 'u1')).toBe(false);
    });

    it('a code of another platform is 401 and stays usable on its own platform', async () => {
      const h = await open();
      const code = await issue(h, 'telegram');
      expect((await attempt(h, 'u1', code, IP_A, 'discord')).statusCode).toBe(401);
      expect(await h.internals.pairing.isPaired('discord', 'u1')).toBe(false);
      expect((await attempt(h, 'u1', code, IP_A, 'telegram')).statusCode).toBe(200);
    });

    it('20 concurrent wrong guesses for one identity and IP: 5 checked (4 × 401, the 5th 429), the rest 429 unchecked', async () => {
      const h = await open();
      const code = await issue(h);
      const results = await Promise.all(Array.from({ length: 20 }, () => attempt(h, 'u1', wrongCode(code))));
      const statuses = results.map((r) => r.statusCode);
      expect(statuses.filter((s) => s === 401)).toHaveLength(4);
      expect(statuses.filter((s) => s === 429)).toHaveLength(16);
      const lines = await auditLines(h);
      expect(checkedFailures(lines)).toBe(5);
      expect(lines.filter((l) => l.event === 'lockout_triggered')).toHaveLength(1);
      // The right code is refused too while locked.
      expect((await attempt(h, 'u1', code)).statusCode).toBe(429);
    });

    it('20 concurrent guesses from one IP for 20 identities, or from 20 IPs for one identity: at most 5 checked', async () => {
      const h = await open();
      const code = await issue(h);
      const byIp = await Promise.all(
        Array.from({ length: 20 }, (_, i) => attempt(h, `spray${i}`, wrongCode(code), IP_A)),
      );
      expect(byIp.filter((r) => r.statusCode === 401)).toHaveLength(4);
      expect(checkedFailures(await auditLines(h))).toBe(5);
      const byUser = await Promise.all(
        Array.from({ length: 20 }, (_, i) => attempt(h, 'target', wrongCode(code), `203.0.113.${i + 10}`)),
      );
      expect(byUser.filter((r) => r.statusCode === 401)).toHaveLength(4);
      expect(byUser.filter((r) => r.statusCode === 429)).toHaveLength(16);
      expect(checkedFailures(await auditLines(h))).toBe(10);
    });

    it('pairing and lockouts survive a gateway restart on the same data dir', async () => {
      const h = await open();
      const code = await issue(h);
      expect((await attempt(h, 'u1', code)).statusCode).toBe(200);
      for (let i = 0; i < 5; i++) await attempt(h, 'u2', 'ABCDEFGH', IP_B);
      await h.restart();
      expect(await h.internals.pairing.isPaired('telegram', 'u1')).toBe(true);
      expect((await attempt(h, 'u2', 'ABCDEFGH', IP_C)).statusCode).toBe(429);
    });
  });

  it('audit: pair_code_issued, auth_failure with attempts, lockout_triggered with lockout_seconds, paired; no code or token in clear', async () => {
    const h = await open({ gateway: { auth: { pairing_ttl_seconds: 3600 } } });
    const code = await issue(h);
    for (let i = 0; i < 5; i++) await attempt(h, 'u1', wrongCode(code));
    rig.clock.advance(300_000);
    expect((await attempt(h, 'u1', code)).statusCode).toBe(200);

    const lines = await auditLines(h);
    const pairing = lines.filter((l) =>
      ['pair_code_issued', 'auth_failure', 'lockout_triggered', 'paired'].includes(l.event),
    );
    const start = new Date(rig.clock.now() - 300_000).toISOString();
    expect(pairing).toEqual([
      { ts: start, event: 'pair_code_issued', ip: '127.0.0.1', user: fingerprintToken(ADMIN_TOKEN), mode: 'pairing' },
      ...[1, 2, 3, 4].map((attempts) => ({
        ts: start,
        event: 'auth_failure',
        ip: IP_A,
        user: 'telegram:u1',
        mode: 'pairing',
        reason: 'invalid_pairing_code',
        attempts,
      })),
      {
        ts: start,
        event: 'lockout_triggered',
        ip: IP_A,
        user: 'telegram:u1',
        mode: 'pairing',
        reason: 'invalid_pairing_code',
        attempts: 5,
        lockout_seconds: 300,
      },
      { ts: new Date(rig.clock.now()).toISOString(), event: 'paired', ip: IP_A, user: 'telegram:u1', mode: 'pairing' },
    ]);
    const text = await auditText(h);
    expect(text).not.toContain(code);
    expect(text).not.toContain(wrongCode(code));
    expect(text).not.toContain(ADMIN_TOKEN);
    expect(text).not.toContain(API_TOKEN);
  });

  describe('identity check', () => {
    it('in pairing mode a non-loopback caller with an unpaired identity gets 403; after pairing 202', async () => {
      const h = await open();
      const remote = '203.0.113.7';
      const send = () =>
        h.inject({
          method: 'POST',
          url: '/api/v1/message',
          headers: apiHeaders,
          payload: msg('hello', 'c1', { platform: 'telegram', user_id: 'u7' }),
          remoteAddress: remote,
        });
      const before = await send();
      expect(before.statusCode).toBe(403);
      expect(before.json()).toMatchObject({ error: { code: 'FORBIDDEN' } });

      const code = await issue(h);
      expect((await attempt(h, 'u7', code, remote)).statusCode).toBe(200);
      const after = await send();
      expect(after.statusCode).toBe(202);
      const { event_id: eventId } = after.json<{ event_id: string }>();
      await h.internals.messages.waitFor(eventId, 5_000);

      // The pairing is for telegram:u7 only.
      const other = await h.inject({
        method: 'POST',
        url: '/api/v1/message',
        headers: apiHeaders,
        payload: msg('hello', 'c1', { platform: 'discord', user_id: 'u7' }),
        remoteAddress: remote,
      });
      expect(other.statusCode).toBe(403);
    });
  });
});
