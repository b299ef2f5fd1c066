import type { Kysely, Transaction } from 'kysely';
import { errors, IdempotencyConflictError } from '../http/errors.js';
import type { Clock } from '../lib/clock.js';
import { isoTime } from '../lib/clock.js';
import type { Database, Store } from '../store/index.js';
import {
  claimIdempotencyKey,
  countUnexpired,
  getIdempotencyRecord,
  purgeExpired,
  setIdempotencyEventId,
  setIdempotencyExpiry,
  type IdempotencyRecord,
} from './idempotency.repo.js';
import { deriveEventId, scopeId, type IdempotencyScope, type ScopeKind } from './idempotency.keys.js';

/** spec: Limits — a record lives 3600 s from its turn's completion (an acknowledgement: from its creation). */
export const IDEMPOTENCY_TTL_MS = 3_600_000;
/** spec: Limits — persisted unexpired records; at the ceiling new keys get 503 (spec rule 7). */
export const DEFAULT_CEILING = 100_000;
/**
 * Seconds a client is told to wait (`Retry-After`) when the ceiling is reached. Room comes back only as
 * records expire (an hour after their turn), noticed at the next recount (every minute by default), so a
 * quick retry would most likely be refused again; 5 s keeps retries rare without making a client that is
 * let in at the next recount wait a full minute.
 */
export const CEILING_RETRY_AFTER_SECONDS = 5;
/** spec: Limits — the in-memory LRU in front of the store, per kind of scope (DECISIONS §6: 4096 gateway, 2048 webhook). */
export const DEFAULT_CACHE_SIZES: Readonly<Record<ScopeKind, number>> = { principal: 4096, webhook: 2048 };

type Executor = Kysely<Database> | Transaction<Database>;

/** One keyed request, as the message path hands it over. */
export interface KeyedRequest {
  scope: IdempotencyScope;
  key: string;
  fingerprint: string;
  /** Whether this request waits for the final result (what a retry of it will answer: spec rules 5–6). */
  wait: boolean;
}

/** The original a retry maps to (spec rule 3): its event, session and whether it waited. */
export interface Original {
  eventId: string;
  sessionKey: string;
  originalWait: boolean;
}

/** What one entry of the LRU remembers. */
interface CachedRecord {
  fingerprint: string;
  eventId: string;
  sessionKey: string;
  wait: boolean;
  /** Epoch ms after which the entry must be re-read from the store. */
  staleAfter: number;
}

/** A bounded LRU (Map insertion order). */
class Lru {
  private readonly map = new Map<string, CachedRecord>();
  constructor(private readonly capacity: number) {}

  get(id: string, now: number): CachedRecord | undefined {
    const hit = this.map.get(id);
    if (!hit) return undefined;
    this.map.delete(id);
    if (hit.staleAfter <= now) return undefined;
    this.map.set(id, hit);
    return hit;
  }

  set(id: string, record: CachedRecord): void {
    this.map.delete(id);
    this.map.set(id, record);
    while (this.map.size > this.capacity) this.map.delete(this.map.keys().next().value!);
  }
}

export interface IdempotencyOptions {
  store: Store;
  clock: Clock;
  /** LRU entries per kind of scope (default `DEFAULT_CACHE_SIZES`). */
  cacheSizes?: Partial<Record<ScopeKind, number>>;
  /** Unexpired records beyond which new keys are refused with 503 (default `DEFAULT_CEILING`). */
  ceiling?: number;
  /** How often expired records are purged and the rest recounted (default 60 s). */
  refreshMs?: number;
  /** Told of a failed background recount. */
  onError: (err: unknown) => void;
  /** Told of every request answered from an existing record (metrics). */
  onReplay?: () => void;
}

/**
 * Idempotent retries in one place (spec rules 1–8, DECISIONS §6): the
 * per-scope LRU in front of the store, the ceiling of unexpired records, the
 * claim inside the intake transaction, the replay of an original and the
 * start of a record's TTL when its turn completes.
 */
export class Idempotency {
  private readonly caches = new Map<ScopeKind, Lru>();
  private count = 0;
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly options: IdempotencyOptions) {
    const sizes = { ...DEFAULT_CACHE_SIZES, ...options.cacheSizes };
    for (const kind of Object.keys(sizes) as ScopeKind[]) this.caches.set(kind, new Lru(sizes[kind]));
  }

  /** The event id a keyed request gets when it is new (spec: derived from scope + key). */
  derivedEventId(request: Pick<KeyedRequest, 'scope' | 'key'>): string {
    return deriveEventId(scopeId(request.scope), request.key);
  }

  /**
   * The original of a retry from memory (spec rule 3), or null when the
   * cache does not know the key. Throws the 409 conflict (spec rule 4) when
   * the key is known with other content.
   */
  recall(request: KeyedRequest): Original | null {
    const hit = this.cache(request).get(this.cacheId(request), this.options.clock.now());
    if (!hit) return null;
    return this.answer(request, hit);
  }

  /** The original of a retry from the store (a cold cache at the bounds, e.g. after a restart), or null. */
  async lookup(request: KeyedRequest): Promise<Original | null> {
    const now = isoTime(this.options.clock.now());
    const existing = await getIdempotencyRecord(this.options.store.db, scopeId(request.scope), request.key, now);
    return existing ? this.replay(request, existing) : null;
  }

  /**
   * Throws 503 with `Retry-After: CEILING_RETRY_AFTER_SECONDS` when the ceiling of unexpired records is
   * reached (spec rule 7: nothing is published).
   */
  assertRoom(): void {
    const ceiling = this.options.ceiling ?? DEFAULT_CEILING;
    if (this.count >= ceiling) {
      throw errors.unavailableFor(CEILING_RETRY_AFTER_SECONDS, 'idempotency storage is full; retry later', {
        reason: 'idempotency_ceiling',
      });
    }
  }

  /**
   * Claims the key inside the caller's transaction, for `eventId` (spec
   * rule 3: exactly one of concurrent claims creates). Null when this call
   * created the record; else the original it maps to (or the 409 conflict).
   */
  async claim(
    trx: Executor,
    request: KeyedRequest,
    record: { eventId: string; sessionKey: string; nowMs: number },
  ): Promise<Original | null> {
    const claim = await claimIdempotencyKey(trx, {
      scope: scopeId(request.scope),
      key: request.key,
      fingerprint: request.fingerprint,
      eventId: record.eventId,
      sessionKey: record.sessionKey,
      wait: request.wait,
      createdAt: isoTime(record.nowMs),
      // An acknowledgement is complete once given; a waited result expires from its turn's end.
      expiresAt: request.wait ? null : isoTime(record.nowMs + IDEMPOTENCY_TTL_MS),
    });
    return claim.created ? null : this.replay(request, claim.existing);
  }

  /** Points a just-claimed key at another event (its derived id was used by an expired earlier life of the key). */
  async repoint(trx: Executor, request: KeyedRequest, eventId: string): Promise<void> {
    await setIdempotencyEventId(trx, scopeId(request.scope), request.key, eventId);
  }

  /** After the claim committed: counts the record and caches it. */
  remember(request: KeyedRequest, original: { eventId: string; sessionKey: string }): void {
    this.count++;
    this.cache(request).set(this.cacheId(request), {
      fingerprint: request.fingerprint,
      eventId: original.eventId,
      sessionKey: original.sessionKey,
      wait: request.wait,
      staleAfter: this.options.clock.now() + IDEMPOTENCY_TTL_MS,
    });
  }

  /** In the transaction that ends a turn: the TTL of its records starts now (spec: Limits). */
  async settle(trx: Executor, eventId: string): Promise<void> {
    await setIdempotencyExpiry(trx, eventId, this.settledExpiry());
  }

  /** When the records of a turn ending now expire (what `settle` writes). */
  settledExpiry(): string {
    return isoTime(this.options.clock.now() + IDEMPOTENCY_TTL_MS);
  }

  /** Unexpired records as last counted (metrics). */
  get records(): number {
    return this.count;
  }

  /** Counts the records, then purges and recounts every `refreshMs`. */
  async start(): Promise<void> {
    await this.refresh();
    clearInterval(this.timer);
    this.timer = setInterval(() => {
      this.refresh().catch(this.options.onError);
    }, this.options.refreshMs ?? 60_000);
    this.timer.unref();
  }

  /** Purges expired rows (a bounded batch) and recounts. */
  async refresh(): Promise<void> {
    const now = isoTime(this.options.clock.now());
    await purgeExpired(this.options.store.db, now, 10_000);
    this.count = await countUnexpired(this.options.store.db, now);
  }

  /** Stops the background recount. */
  close(): void {
    clearInterval(this.timer);
  }

  /** The answer to a retry whose record is in the store: 409 for changed content, else its original. */
  private replay(request: KeyedRequest, existing: IdempotencyRecord): Original {
    const cached: CachedRecord = {
      fingerprint: existing.fingerprint,
      eventId: existing.eventId,
      sessionKey: existing.sessionKey,
      wait: existing.wait,
      staleAfter: Date.parse(existing.createdAt) + IDEMPOTENCY_TTL_MS,
    };
    const original = this.answer(request, cached);
    this.cache(request).set(this.cacheId(request), cached);
    return original;
  }

  private answer(request: KeyedRequest, record: CachedRecord): Original {
    // spec rule 4: the same key with other content is a conflict.
    if (record.fingerprint !== request.fingerprint) throw new IdempotencyConflictError();
    this.options.onReplay?.();
    return { eventId: record.eventId, sessionKey: record.sessionKey, originalWait: record.wait };
  }

  private cache(request: KeyedRequest): Lru {
    return this.caches.get(request.scope.kind)!;
  }

  private cacheId(request: KeyedRequest): string {
    return `${scopeId(request.scope)}\u0000${request.key}`;
  }
}
