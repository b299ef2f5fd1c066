import { closeSync, fdatasync, fstatSync, ftruncateSync, writeSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { join } from 'node:path';
import { isoTime, type Clock } from '../lib/clock.js';
import { ensurePrivateDirSync, openPrivateFileSync } from '../lib/private-files.js';
import { createWindowCounter } from './rate-limit.js';

/**
 * The audit log (spec "Authentication" → "Audit log"; DECISIONS §4):
 * `data_dir/gateway_auth/audit.jsonl`, one JSON object a line, appended and
 * fsync'd. Fields `ts` (ISO), `event`, `ip`, `user`, `mode`, optional
 * `reason`, `attempts`, `lockout_seconds`, `path`. Tokens appear only as
 * fingerprints (`tok_…`), never in clear.
 */

/** Every audit event kind (DECISIONS §4). */
export const AUDIT_EVENTS = [
  'auth_success',
  'auth_failure',
  'lockout_triggered',
  'token_used',
  'paired',
  'pair_code_issued',
] as const;

/** An audit event kind. */
export type AuditEvent = (typeof AUDIT_EVENTS)[number];

/** One audit record as the caller gives it; `ts` is added from the clock. */
export interface AuditEntry {
  event: AuditEvent;
  /** Source IP (socket peer). */
  ip: string;
  /** Who: a `platform:user_id` identity or a token fingerprint (`tok_…`); never a raw token. */
  user: string;
  /** The principal the token belongs to (DECISIONS §18); absent where no token was resolved. */
  principal?: string;
  /** The auth mode in force (`open`, `allowlist`, `pairing`). */
  mode: string;
  reason?: string;
  attempts?: number;
  lockout_seconds?: number;
  path?: string;
}

/** Counters of an audit log, for health reports and tests. */
export interface AuditStats {
  /** Lines written to the file. */
  written: number;
  /** Records dropped because the queue was full, a write failed, or a line could not be made safe. */
  dropped: number;
  /** `datasync` calls made; many records share one. */
  syncs: number;
}

/** The append-only audit log. */
export interface AuditLog {
  /** Queues one record; never blocks, never throws. A no-op after `close()`. */
  record(entry: AuditEntry): void;
  /** Resolves once every record queued so far is written and synced (or reported as failed). */
  flush(): Promise<void>;
  /** Flushes everything, then closes the file. Idempotent. */
  close(): Promise<void>;
  /** Counters so far. */
  stats(): AuditStats;
}

/** Options of `createAuditLog`. */
export interface AuditLogOptions {
  /** `data_dir`; the log lives in `<dataDir>/gateway_auth/audit.jsonl`. */
  dataDir: string;
  clock: Clock;
  /** Told about write failures and queue overflow (once per episode). */
  onError?: (err: Error) => void;
  /** Queue bound in lines; default 10 000. Records beyond it are dropped and counted. */
  maxQueue?: number;
  /** Applied to every string value and to every serialized line, e.g. `createTokenScrubber(tokens)`. */
  scrub?: (text: string) => string;
}

/** Default bound of the write queue, in lines. */
export const DEFAULT_AUDIT_MAX_QUEUE = 10_000;

/** `<dataDir>/gateway_auth`, the directory of the audit log and the admin token (mode 0700). */
export function gatewayAuthDir(dataDir: string): string {
  return join(dataDir, 'gateway_auth');
}

/** `<dataDir>/gateway_auth/audit.jsonl`. */
export function auditLogPath(dataDir: string): string {
  return join(gatewayAuthDir(dataDir), 'audit.jsonl');
}

/** The shortest configured secret value the log scrubber removes. */
export const MIN_SCRUBBED_LENGTH = 6;

/**
 * Returns a function that replaces every occurrence of any configured secret
 * (also in its JSON-escaped spelling) with `***`. Longer secrets are replaced
 * first so a secret that contains another is removed whole. Values shorter than `MIN_SCRUBBED_LENGTH` are
 * ignored: a value that short (an MCP server's `env: {DEBUG: "1"}`) is no credential worth the name, and
 * replacing it would blank every "1" of every line (ADR 0038).
 */
export function createTokenScrubber(secrets: readonly string[]): (text: string) => string {
  const forms = new Set<string>();
  for (const secret of secrets) {
    if (secret.length < MIN_SCRUBBED_LENGTH) continue;
    forms.add(secret);
    forms.add(JSON.stringify(secret).slice(1, -1));
  }
  const ordered = [...forms].sort((a, b) => b.length - a.length);
  if (ordered.length === 0) return (text) => text;
  return (text: string): string => {
    let out = text;
    for (const form of ordered) if (out.includes(form)) out = out.split(form).join('***');
    return out;
  };
}

/** Best-effort fsync of a directory, so a newly created entry survives a crash. */
async function syncDir(dir: string): Promise<void> {
  try {
    const fh = await open(dir, 'r');
    try {
      await fh.sync();
    } finally {
      await fh.close();
    }
  } catch {
    // not supported everywhere (e.g. Windows); the file's own datasync still runs
  }
}

function closeQuietly(descriptor: number): void {
  try {
    closeSync(descriptor);
  } catch {
    // already gone
  }
}

/**
 * Appends `text` whole or not at all: a short write (the disk filled up in the
 * middle of the line) is continued, and when the rest is refused the torn
 * start is cut off again, so the file stays one JSON object per line and the
 * next line, once there is room, starts on a line of its own.
 */
function appendWhole(descriptor: number, text: string): void {
  const data = Buffer.from(text, 'utf8');
  let done = 0;
  try {
    while (done < data.length) done += writeSync(descriptor, data, done, data.length - done);
  } catch (err) {
    if (done > 0) {
      try {
        ftruncateSync(descriptor, fstatSync(descriptor).size - done);
      } catch {
        // nothing more to do: the failure is reported by the caller
      }
    }
    throw err;
  }
}

/**
 * Opens the audit log. Lines are appended to a file created with mode 0600 in
 * a directory created with mode 0700. `record` appends its line at once (a
 * synchronous write to the OS, so the line is in the file before the response
 * that caused it leaves); the fsync is batched: one async `fdatasync` covers
 * every line written since the last one. A write failure drops that line,
 * reports through `onError`, and the next record reopens the file.
 */
export function createAuditLog(options: AuditLogOptions): AuditLog {
  const maxQueue = options.maxQueue ?? DEFAULT_AUDIT_MAX_QUEUE;
  const dir = gatewayAuthDir(options.dataDir);
  const file = auditLogPath(options.dataDir);
  const scrub = options.scrub;

  let unsynced = 0; // lines written but not yet fsync'd
  let loop: Promise<void> | null = null;
  let fd: number | null = null;
  let closed = false;
  let closing: Promise<void> | null = null;
  let overflowReported = false;
  let failureReported = false;
  /** Descriptors given up after a failed write whose earlier lines still await their fsync. */
  const retired: Array<{ descriptor: number; count: number }> = [];
  const stats: AuditStats = { written: 0, dropped: 0, syncs: 0 };

  function report(err: Error): void {
    try {
      options.onError?.(err);
    } catch {
      // an error reporter must not break the audit loop
    }
  }

  function serialize(entry: AuditEntry): string | null {
    const clean = (value: string): string => (scrub ? scrub(value) : value);
    const line: Record<string, string | number> = {
      ts: isoTime(options.clock.now()),
      event: entry.event,
      ip: clean(entry.ip),
      user: clean(entry.user),
      mode: clean(entry.mode),
    };
    if (entry.reason !== undefined) line.reason = clean(entry.reason);
    if (entry.attempts !== undefined) line.attempts = entry.attempts;
    if (entry.lockout_seconds !== undefined) line.lockout_seconds = entry.lockout_seconds;
    if (entry.path !== undefined) line.path = clean(entry.path);
    const text = JSON.stringify(line);
    if (!scrub) return text;
    const scrubbed = scrub(text);
    if (scrubbed === text) return text;
    // A secret matched the line's structure; write it only if it is still one JSON object.
    try {
      JSON.parse(scrubbed);
      return scrubbed;
    } catch {
      return null;
    }
  }

  function ensureOpen(): number {
    if (fd !== null) return fd;
    ensurePrivateDirSync(dir);
    const created = openPrivateFileSync(file, 'a'); // 0600, or tightened when an older file is wider
    fd = created;
    void syncDir(dir);
    return created;
  }

  function datasync(descriptor: number): Promise<void> {
    return new Promise((resolve, reject) => fdatasync(descriptor, (err) => (err ? reject(err) : resolve())));
  }

  /** The next lines to make durable: those of a descriptor retired by a failed write first, then the current one's. */
  function nextSync(): { descriptor: number; count: number; current: boolean } | null {
    const old = retired.shift();
    if (old) return { ...old, current: false };
    if (unsynced === 0) return null;
    const count = unsynced;
    unsynced = 0;
    if (fd === null) {
      stats.dropped += count; // no descriptor is left to sync them through (not expected: a failure retires it)
      return null;
    }
    return { descriptor: fd, count, current: true };
  }

  async function drain(): Promise<void> {
    for (let next = nextSync(); next !== null; next = nextSync()) {
      const { descriptor, count, current } = next;
      try {
        await datasync(descriptor);
        stats.syncs += 1;
        stats.written += count;
        if (current) {
          failureReported = false;
          overflowReported = false;
        }
      } catch (err) {
        stats.dropped += count;
        if (!failureReported) {
          failureReported = true;
          const cause = err instanceof Error ? err : new Error(String(err));
          report(new Error(`audit log sync failed (${count} records at risk): ${cause.message}`, { cause }));
        }
      } finally {
        if (!current) closeQuietly(descriptor);
      }
    }
  }

  function schedule(): void {
    if (loop !== null) return;
    // Start on a later microtask so a synchronous burst of records shares one fsync.
    loop = Promise.resolve()
      .then(drain)
      .finally(() => {
        loop = null;
        if (unsynced > 0 || retired.length > 0) schedule();
      });
  }

  async function flush(): Promise<void> {
    while (loop !== null) await loop;
  }

  return {
    record(entry: AuditEntry): void {
      if (closed) return;
      if (unsynced >= maxQueue) {
        stats.dropped += 1;
        if (!overflowReported) {
          overflowReported = true;
          report(new Error(`audit queue full (${maxQueue} lines); dropping records`));
        }
        return;
      }
      let line: string | null;
      try {
        line = serialize(entry);
      } catch (err) {
        line = null;
        report(err instanceof Error ? err : new Error(String(err)));
      }
      if (line === null) {
        stats.dropped += 1;
        report(new Error('audit record withheld: it could not be written without a secret'));
        return;
      }
      try {
        appendWhole(ensureOpen(), line + '\n');
      } catch (err) {
        // Disk full, I/O error: this line is dropped; the next record reopens the file. Lines written
        // before it still get their fsync through the old descriptor, which the drain closes after.
        stats.dropped += 1;
        const old = fd;
        fd = null;
        if (old !== null && unsynced > 0) {
          retired.push({ descriptor: old, count: unsynced });
          unsynced = 0;
          schedule();
        } else if (old !== null) {
          closeQuietly(old);
        }
        if (!failureReported) {
          failureReported = true;
          const cause = err instanceof Error ? err : new Error(String(err));
          report(new Error(`audit log write failed: ${cause.message}`, { cause }));
        }
        return;
      }
      unsynced += 1;
      schedule();
    },
    flush,
    close(): Promise<void> {
      if (closing) return closing;
      closed = true;
      closing = (async () => {
        await flush();
        const descriptor = fd;
        fd = null;
        if (descriptor !== null) closeSync(descriptor);
      })();
      return closing;
    },
    stats(): AuditStats {
      return { ...stats };
    },
  };
}

/** Decides whether an `auth_failure` from a source may be written now. */
export interface FailureThrottle {
  /** True if a failure record for `ip` may be written; counts it. */
  allow(ip: string): boolean;
  /** How many failures were refused so far (the caller may log a summary). */
  suppressed(): number;
}

/** Options of `createFailureThrottle`. */
export interface FailureThrottleOptions {
  clock: Clock;
  /** Failure records per source per minute; default 20. */
  perMinute?: number;
  /** Failure records per minute from all sources together; default 600. */
  globalPerMinute?: number;
  /** Hard cap on tracked sources; default 10 000. */
  maxKeys?: number;
}

/**
 * Bounds how fast `auth_failure` records can grow the audit file: at most
 * `perMinute` per source IP and `globalPerMinute` overall, in fixed one-minute
 * windows, with a cap on tracked sources — so an attacker cannot fill the disk
 * at request speed, even from many addresses.
 */
export function createFailureThrottle(options: FailureThrottleOptions): FailureThrottle {
  const perMinute = options.perMinute ?? 20;
  const globalPerMinute = options.globalPerMinute ?? 600;
  const perSource = createWindowCounter({ clock: options.clock, maxKeys: options.maxKeys ?? 10_000 });
  const overall = createWindowCounter({ clock: options.clock, maxKeys: 1 });
  let suppressed = 0;
  return {
    allow(ip: string): boolean {
      const ok = perSource.hit(ip, perMinute).allowed && overall.hit('*', globalPerMinute).allowed;
      if (!ok) suppressed += 1;
      return ok;
    },
    suppressed(): number {
      return suppressed;
    },
  };
}
