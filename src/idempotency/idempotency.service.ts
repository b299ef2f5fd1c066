import { createHash } from 'node:crypto';
import { errors } from '../http/errors.js';
import type { Clock } from '../lib/clock.js';
import { isoTime } from '../lib/clock.js';
import type { Store } from '../store/index.js';
import { countUnexpired, purgeExpired } from './idempotency.repo.js';

/** spec: Limits — key length 1..200, no control characters. */
export const MAX_KEY_LENGTH = 200;
/** spec: Limits — persisted unexpired records. */
export const DEFAULT_CEILING = 100_000;

// Control characters: C0, DEL and C1.
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

/**
 * Validates an idempotency key (spec rule 1). A blank key is 400: spaces are
 * not trimmed away into validity (DECISIONS §6).
 */
export function validateKey(key: string, where: string): string {
  if (key.length === 0 || key.trim().length === 0)
    throw errors.badRequest(`${where}: idempotency key must not be empty`);
  if (key.length > MAX_KEY_LENGTH)
    throw errors.badRequest(`${where}: idempotency key longer than ${MAX_KEY_LENGTH} characters`);
  if (CONTROL.test(key)) throw errors.badRequest(`${where}: idempotency key contains control characters`);
  return key;
}

function headerValue(headers: Record<string, string | string[] | undefined>, name: string): string | undefined {
  const value = headers[name];
  if (Array.isArray(value)) {
    if (new Set(value).size > 1) throw errors.badRequest(`conflicting ${name} headers`);
    return value[0];
  }
  return value;
}

/**
 * The request's idempotency key from `Idempotency-Key`, `X-Idempotency-Key`
 * and (where allowed) a body/frame field. Keys given in several places must
 * agree (spec rule 2), else 400. Undefined when none is given.
 */
export function resolveKey(
  headers: Record<string, string | string[] | undefined>,
  bodyKey?: unknown,
): string | undefined {
  const found: Array<[string, string]> = [];
  const a = headerValue(headers, 'idempotency-key');
  const b = headerValue(headers, 'x-idempotency-key');
  if (a !== undefined) found.push(['Idempotency-Key', validateKey(a, 'Idempotency-Key')]);
  if (b !== undefined) found.push(['X-Idempotency-Key', validateKey(b, 'X-Idempotency-Key')]);
  if (bodyKey !== undefined && bodyKey !== null) {
    if (typeof bodyKey !== 'string') throw errors.badRequest('idempotency_key must be a string');
    found.push(['idempotency_key', validateKey(bodyKey, 'idempotency_key')]);
  }
  if (found.length === 0) return undefined;
  const first = found[0]![1];
  for (const [where, key] of found) {
    if (key !== first) throw errors.badRequest(`${where} differs from ${found[0]![0]}`, { field: where });
  }
  return first;
}

/** Canonical JSON: object keys sorted at every level, so equal meaning hashes equal. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value ?? null);
}

/** SHA-256 of the canonical JSON of a request's meaning (DECISIONS §6: what counts as "same content"). */
export function fingerprint(content: Record<string, unknown>): string {
  return createHash('sha256').update(canonicalJson(content)).digest('hex');
}

/** The event id of a keyed request: derived from scope + key, so every retry and the ledger agree. */
export function deriveEventId(scope: string, key: string): string {
  return `evt_${createHash('sha256').update(scope).update('\u0000').update(key).digest('hex').slice(0, 32)}`;
}

/** What is cached of one record. */
export interface CachedRecord {
  fingerprint: string;
  eventId: string;
  sessionKey: string;
  wait: boolean;
  /** Epoch ms after which the cache entry must be re-read from the store. */
  staleAfter: number;
}

/** A bounded LRU (Map insertion order) in front of the store. */
export class IdempotencyCache {
  private readonly map = new Map<string, CachedRecord>();
  constructor(private readonly capacity: number) {}

  get(scope: string, key: string, now: number): CachedRecord | undefined {
    const id = `${scope}\u0000${key}`;
    const hit = this.map.get(id);
    if (!hit) return undefined;
    this.map.delete(id);
    if (hit.staleAfter <= now) return undefined;
    this.map.set(id, hit);
    return hit;
  }

  set(scope: string, key: string, record: CachedRecord): void {
    const id = `${scope}\u0000${key}`;
    this.map.delete(id);
    this.map.set(id, record);
    while (this.map.size > this.capacity) this.map.delete(this.map.keys().next().value!);
  }

  get size(): number {
    return this.map.size;
  }
}

/**
 * Keeps an estimate of unexpired records for the ceiling check (spec rule 7)
 * without counting rows on every request: counted at start, incremented on
 * every new record, recounted (and expired rows purged) every `intervalMs`.
 */
export class IdempotencyLedgerGauge {
  private count = 0;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly options: {
      store: Store;
      clock: Clock;
      ceiling: number;
      intervalMs?: number;
      onError: (err: unknown) => void;
    },
  ) {}

  async start(): Promise<void> {
    await this.refresh();
    this.timer = setInterval(() => {
      this.refresh().catch(this.options.onError);
    }, this.options.intervalMs ?? 60_000);
    this.timer.unref();
  }

  /** Purges expired rows (a bounded batch) and recounts. */
  async refresh(): Promise<void> {
    const now = isoTime(this.options.clock.now());
    await purgeExpired(this.options.store.db, now, 10_000);
    this.count = await countUnexpired(this.options.store.db, now);
  }

  /** Throws 503 when the ceiling of unexpired records is reached (nothing is published). */
  assertRoom(): void {
    if (this.count >= this.options.ceiling) throw errors.unavailable('idempotency storage is full; retry later');
  }

  added(): void {
    this.count++;
  }

  get value(): number {
    return this.count;
  }

  stop(): void {
    clearInterval(this.timer);
  }
}
