import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../lib/clock.js';
import {
  auditLogPath,
  createAuditLog,
  createFailureThrottle,
  createTokenScrubber,
  MIN_SCRUBBED_LENGTH,
  type AuditEntry,
  type AuditLog,
} from './audit.js';
import { fingerprintToken } from './tokens.js';

const T0 = Date.UTC(2026, 10, 21, 10, 0, 0, 0);

let dataDir: string;
let opened: AuditLog[];

beforeEach(() => {
  dataDir = mkdtempSync(join(tmpdir(), 'gatehouse-audit-'));
  opened = [];
});

afterEach(async () => {
  for (const log of opened) await log.close().catch(() => undefined);
  rmSync(dataDir, { recursive: true, force: true });
});

function open(extra: Partial<Parameters<typeof createAuditLog>[0]> = {}): {
  log: AuditLog;
  clock: ManualClock;
  errors: Error[];
} {
  const clock = new ManualClock(T0);
  const errors: Error[] = [];
  const log = createAuditLog({ dataDir, clock, onError: (e) => errors.push(e), ...extra });
  opened.push(log);
  return { log, clock, errors };
}

function readLines(): Record<string, unknown>[] {
  const text = readFileSync(auditLogPath(dataDir), 'utf8');
  expect(text.endsWith('\n')).toBe(true);
  return text
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

describe('createAuditLog', () => {
  it('writes one parseable JSON object per line with ts from the clock', async () => {
    const { log, clock } = open();
    log.record({
      event: 'auth_success',
      ip: '127.0.0.1',
      user: 'tok_0123abcd',
      mode: 'pairing',
      path: '/api/v1/sessions',
    });
    clock.advance(1500);
    log.record({
      event: 'lockout_triggered',
      ip: '10.0.0.9',
      user: 'telegram:42',
      mode: 'pairing',
      reason: 'too many failures',
      attempts: 5,
      lockout_seconds: 300,
    });
    await log.flush();
    const raw = readFileSync(auditLogPath(dataDir), 'utf8');
    expect(raw.split('\n')[0]).toBe(
      '{"ts":"2026-11-21T10:00:00.000Z","event":"auth_success","ip":"127.0.0.1","user":"tok_0123abcd","mode":"pairing","path":"/api/v1/sessions"}',
    );
    expect(readLines()).toEqual([
      {
        ts: '2026-11-21T10:00:00.000Z',
        event: 'auth_success',
        ip: '127.0.0.1',
        user: 'tok_0123abcd',
        mode: 'pairing',
        path: '/api/v1/sessions',
      },
      {
        ts: '2026-11-21T10:00:01.500Z',
        event: 'lockout_triggered',
        ip: '10.0.0.9',
        user: 'telegram:42',
        mode: 'pairing',
        reason: 'too many failures',
        attempts: 5,
        lockout_seconds: 300,
      },
    ]);
    expect(log.stats()).toMatchObject({ written: 2, dropped: 0 });
  });

  it('keeps one record per line even with newlines in values', async () => {
    const { log } = open();
    log.record({ event: 'auth_failure', ip: '1.2.3.4', user: 'evil\n{"event":"auth_success"}', mode: 'open' });
    await log.flush();
    const lines = readLines();
    expect(lines).toHaveLength(1);
    expect(lines[0]?.user).toBe('evil\n{"event":"auth_success"}');
  });

  it('creates the file with mode 0600 and the directory with mode 0700', async () => {
    const { log } = open();
    log.record({ event: 'paired', ip: '127.0.0.1', user: 'webhook:bob', mode: 'pairing' });
    await log.flush();
    expect(statSync(auditLogPath(dataDir)).mode & 0o777).toBe(0o600);
    expect(statSync(join(dataDir, 'gateway_auth')).mode & 0o777).toBe(0o700);
  });

  it('appends to an existing file and tightens its mode', async () => {
    const first = open().log;
    first.record({ event: 'pair_code_issued', ip: '127.0.0.1', user: 'tok_aaaaaaaa', mode: 'pairing' });
    await first.close();
    const { chmodSync } = await import('node:fs');
    chmodSync(auditLogPath(dataDir), 0o644);
    const second = open().log;
    second.record({ event: 'paired', ip: '127.0.0.1', user: 'cli:me', mode: 'pairing' });
    await second.flush();
    expect(readLines().map((l) => l.event)).toEqual(['pair_code_issued', 'paired']);
    expect(statSync(auditLogPath(dataDir)).mode & 0o777).toBe(0o600);
  });

  it('batches: a burst of records is written with one fsync', async () => {
    const { log } = open();
    for (let i = 0; i < 500; i++) log.record({ event: 'token_used', ip: '127.0.0.1', user: `tok_${i}`, mode: 'open' });
    await log.flush();
    const lines = readLines();
    expect(lines).toHaveLength(500);
    expect(lines.map((l) => l.user)).toEqual(Array.from({ length: 500 }, (_, i) => `tok_${i}`));
    expect(log.stats()).toEqual({ written: 500, dropped: 0, syncs: 1 });
  });

  it('records arriving while a batch is being written go in the next batch', async () => {
    const { log } = open();
    log.record({ event: 'token_used', ip: 'a', user: 'u1', mode: 'open' });
    await Promise.resolve();
    await Promise.resolve(); // the loop has taken the first batch
    for (let i = 0; i < 50; i++) log.record({ event: 'token_used', ip: 'b', user: `u${i + 2}`, mode: 'open' });
    await log.flush();
    expect(readLines()).toHaveLength(51);
    expect(log.stats().syncs).toBeLessThanOrEqual(2);
  });

  it('close flushes everything, closes the file, and later records are no-ops', async () => {
    const { log } = open();
    for (let i = 0; i < 20; i++) log.record({ event: 'auth_failure', ip: '10.0.0.1', user: 'x', mode: 'allowlist' });
    await log.close();
    expect(readLines()).toHaveLength(20);
    log.record({ event: 'auth_success', ip: '10.0.0.1', user: 'x', mode: 'allowlist' });
    await log.flush();
    await log.close(); // idempotent
    expect(readLines()).toHaveLength(20);
  });

  it('bounds the queue: overflow drops and reports once', async () => {
    const { log, errors } = open({ maxQueue: 5 });
    for (let i = 0; i < 8; i++) log.record({ event: 'auth_failure', ip: '10.0.0.1', user: `u${i}`, mode: 'open' });
    await log.flush();
    expect(readLines().map((l) => l.user)).toEqual(['u0', 'u1', 'u2', 'u3', 'u4']);
    expect(log.stats()).toMatchObject({ written: 5, dropped: 3 });
    expect(errors).toHaveLength(1);
    expect(errors[0]?.message).toMatch(/queue full/);
    // after draining, the queue accepts records again
    log.record({ event: 'auth_failure', ip: '10.0.0.1', user: 'later', mode: 'open' });
    await log.flush();
    expect(readLines()).toHaveLength(6);
  });

  it('reports write failures through onError instead of throwing', async () => {
    writeFileSync(join(dataDir, 'gateway_auth'), 'not a directory');
    const { log, errors } = open();
    expect(() => log.record({ event: 'auth_success', ip: '1.1.1.1', user: 'u', mode: 'open' })).not.toThrow();
    await log.flush();
    expect(errors).toHaveLength(1);
    expect(errors[0]?.message).toMatch(/audit log write failed/);
    expect(log.stats()).toMatchObject({ written: 0, dropped: 1 });
  });

  it('scrubs configured secrets from every line', async () => {
    const secret = 'sk-super-secret-token-value';
    const { log } = open({ scrub: createTokenScrubber([secret, 'adm"in\\tok']) });
    const entries: AuditEntry[] = [
      { event: 'auth_failure', ip: '10.0.0.1', user: secret, mode: 'open', reason: `bad token ${secret}` },
      {
        event: 'auth_failure',
        ip: '10.0.0.1',
        user: fingerprintToken(secret),
        mode: 'open',
        path: `/x?token=${secret}`,
      },
      { event: 'auth_failure', ip: '10.0.0.1', user: 'adm"in\\tok', mode: 'open' },
    ];
    for (const entry of entries) log.record(entry);
    await log.flush();
    const raw = readFileSync(auditLogPath(dataDir), 'utf8');
    expect(raw).not.toContain(secret);
    expect(raw).not.toContain('adm\\"in\\\\tok');
    const lines = readLines();
    expect(lines[0]).toMatchObject({ user: '***', reason: 'bad token ***' });
    expect(lines[1]).toMatchObject({ user: fingerprintToken(secret), path: '/x?token=***' });
    expect(lines[2]).toMatchObject({ user: '***' });
  });

  it('withholds a record a secret would make unparseable', async () => {
    // a (silly) secret equal to a field name still never reaches the file, and the file stays valid JSONL
    const { log, errors } = open({ scrub: createTokenScrubber(['"ip":"1']) });
    log.record({ event: 'auth_success', ip: '10.0.0.1', user: 'u', mode: 'open' });
    await log.flush();
    expect(errors.map((e) => e.message)).toEqual(['audit record withheld: it could not be written without a secret']);
    expect(log.stats().dropped).toBe(1);
  });
});

describe('createTokenScrubber', () => {
  it('replaces every occurrence, longest secret first, and ignores empty secrets', () => {
    const scrub = createTokenScrubber(['abcdef', 'abcdefghij', '']);
    expect(scrub('x abcdefghij y abcdef z abcdefabcdef')).toBe('x *** y *** z ******');
    expect(scrub('nothing here')).toBe('nothing here');
    expect(createTokenScrubber([])('abc')).toBe('abc');
  });

  it('leaves values shorter than MIN_SCRUBBED_LENGTH alone, so a short env value does not blank the logs', () => {
    const scrub = createTokenScrubber(['1', 'true', 'abcde', 'abcdef']);
    expect(scrub('port 1 is true: abcde, abcdef')).toBe('port 1 is true: abcde, ***');
    expect(MIN_SCRUBBED_LENGTH).toBe(6);
  });
});

describe('createFailureThrottle', () => {
  it('allows perMinute failure records per source per minute', () => {
    const clock = new ManualClock(T0);
    const throttle = createFailureThrottle({ clock, perMinute: 20, maxKeys: 10_000 });
    for (let i = 0; i < 20; i++) expect(throttle.allow('10.0.0.1')).toBe(true);
    expect(throttle.allow('10.0.0.1')).toBe(false);
    expect(throttle.allow('10.0.0.1')).toBe(false);
    expect(throttle.suppressed()).toBe(2);
    // other sources are unaffected
    expect(throttle.allow('10.0.0.2')).toBe(true);
    // next minute: allowed again
    clock.advance(60_000);
    expect(throttle.allow('10.0.0.1')).toBe(true);
  });

  it('caps the total across sources', () => {
    const clock = new ManualClock(T0);
    const throttle = createFailureThrottle({ clock, perMinute: 20, globalPerMinute: 50 });
    let allowed = 0;
    for (let i = 0; i < 200; i++) if (throttle.allow(`10.0.${i}.1`)) allowed += 1;
    expect(allowed).toBe(50);
    expect(throttle.suppressed()).toBe(150);
  });

  it('bounds tracked sources', () => {
    const clock = new ManualClock(T0);
    const throttle = createFailureThrottle({ clock, perMinute: 1, maxKeys: 2, globalPerMinute: 1000 });
    expect(throttle.allow('a')).toBe(true);
    expect(throttle.allow('a')).toBe(false);
    expect(throttle.allow('b')).toBe(true);
    expect(throttle.allow('c')).toBe(true); // evicts a
    expect(throttle.allow('a')).toBe(true);
  });
});
