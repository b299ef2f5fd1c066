/**
 * Idempotent retries (spec rules 1–8, DECISIONS §6): key rules, scopes,
 * fingerprints and derived event ids (`idempotency.keys.ts`), and the
 * records in the store behind a per-scope LRU (`idempotency.service.ts`).
 * The message path (`turns/`) is its one user; entry points only name where
 * their key travels and which scope it lives in.
 */
export {
  canonicalJson,
  contentFingerprint,
  deriveEventId,
  fingerprint,
  MAX_KEY_LENGTH,
  principalScope,
  resolveKey,
  scopeId,
  validateKey,
  webhookScope,
  type Headers,
  type IdempotencyScope,
  type KeySources,
  type MessageContent,
  type ScopeKind,
} from './idempotency.keys.js';
export {
  DEFAULT_CACHE_SIZES,
  DEFAULT_CEILING,
  Idempotency,
  IDEMPOTENCY_TTL_MS,
  type IdempotencyOptions,
  type KeyedRequest,
  type Original,
} from './idempotency.service.js';
