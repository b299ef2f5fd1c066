import { createHash } from 'node:crypto';
import { errors } from '../http/errors.js';
import { canonicalJson } from '../lib/json.js';

/**
 * The pure rules of idempotency keys (spec: idempotent retries; DECISIONS §6):
 * where a key is read from and what makes it valid, the scope a key lives
 * in for every kind of entry point, the content fingerprint and the derived
 * event id. Nothing here touches the store.
 */

/** spec: Limits — key length 1..200, no control characters. */
export const MAX_KEY_LENGTH = 200;

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

/** Request headers as Node parses them. */
export type Headers = Record<string, string | string[] | undefined>;

/** Where one request may carry its key (DECISIONS §6). */
export interface KeySources {
  /** `Idempotency-Key` and `X-Idempotency-Key` (HTTP requests). */
  headers?: Headers;
  /** The body's `idempotency_key` (POST /message, webhook) or the frame's (WebSocket); unvalidated. */
  field?: unknown;
  /** A key of last resort, used only when no other is given (the webhook's Standard Webhooks `webhook-id`). */
  fallback?: { value: string; where: string } | null;
}

function headerValue(headers: Headers, name: string): string | undefined {
  const value = headers[name];
  if (Array.isArray(value)) {
    if (new Set(value).size > 1) throw errors.badRequest(`conflicting ${name} headers`);
    return value[0];
  }
  return value;
}

/**
 * The request's idempotency key from its headers, its body/frame field and
 * its fallback. Keys given in several places must agree (spec rule 2), else
 * 400; each is validated (spec rule 1). Undefined when none is given.
 */
export function resolveKey(sources: KeySources): string | undefined {
  const found: Array<[string, string]> = [];
  const headers = sources.headers ?? {};
  const a = headerValue(headers, 'idempotency-key');
  const b = headerValue(headers, 'x-idempotency-key');
  if (a !== undefined) found.push(['Idempotency-Key', validateKey(a, 'Idempotency-Key')]);
  if (b !== undefined) found.push(['X-Idempotency-Key', validateKey(b, 'X-Idempotency-Key')]);
  const field = sources.field;
  if (field !== undefined && field !== null) {
    if (typeof field !== 'string') throw errors.badRequest('idempotency_key must be a string');
    found.push(['idempotency_key', validateKey(field, 'idempotency_key')]);
  }
  if (found.length === 0) {
    const fallback = sources.fallback;
    return fallback ? validateKey(fallback.value, fallback.where) : undefined;
  }
  const first = found[0]![1];
  for (const [where, key] of found) {
    if (key !== first) throw errors.badRequest(`${where} differs from ${found[0]![0]}`, { field: where });
  }
  return first;
}

/**
 * The scope a key lives in (DECISIONS §6), one kind per family of entry
 * points: `principal` — the token's principal plus the session key, shared
 * by HTTP and WebSocket so a retry may switch transport; `webhook` — the
 * sender plus the chat (spec: scope table).
 */
export type IdempotencyScope =
  { kind: 'principal'; principal: string; sessionKey: string } | { kind: 'webhook'; senderId: string; chatId: string };

/** The kinds of scope; each has its own in-memory LRU in front of the store. */
export type ScopeKind = IdempotencyScope['kind'];

/** Scope of an HTTP or WebSocket caller: its principal (`anonymous` or the token's hash) and the session key. */
export function principalScope(principal: { scope: string }, sessionKey: string): IdempotencyScope {
  return { kind: 'principal', principal: principal.scope, sessionKey };
}

/** Scope of a webhook delivery: its sender and chat. */
export function webhookScope(senderId: string, chatId: string): IdempotencyScope {
  return { kind: 'webhook', senderId, chatId };
}

/** The stored scope string: unambiguous for any ids. */
export function scopeId(scope: IdempotencyScope): string {
  switch (scope.kind) {
    case 'principal':
      return `${scope.principal}|${scope.sessionKey}`;
    case 'webhook':
      return `webhook|${JSON.stringify([scope.senderId, scope.chatId])}`;
  }
}

/** Canonical JSON (object keys sorted at every level, iterative), shared with knowledge metadata hashes. */
export { canonicalJson };

/** SHA-256 of the canonical JSON of a request's meaning (DECISIONS §6: what counts as "same content"). */
export function fingerprint(content: Record<string, unknown>): string {
  return createHash('sha256').update(canonicalJson(content)).digest('hex');
}

/** What a message means, whatever carried it. */
export interface MessageContent {
  platform: string;
  userId: string;
  chatId: string;
  text: string;
  /** Earlier messages the request carries itself (OpenAI-compatible fresh sessions); content only when present. */
  context?: ReadonlyArray<{ role: string; content: string }>;
}

/**
 * The fingerprint of a message in its scope (DECISIONS §6): for /message and
 * the WebSocket `platform, user_id, chat_id, text` (plus `context` when the
 * request carries its own earlier messages); for the webhook
 * `sender_id, chat_id, text`. `wait`, `timeout_seconds` and where the key
 * travelled are not content.
 */
export function contentFingerprint(kind: ScopeKind, content: MessageContent): string {
  switch (kind) {
    case 'principal':
      return fingerprint({
        platform: content.platform,
        user_id: content.userId,
        chat_id: content.chatId,
        text: content.text,
        ...(content.context?.length
          ? { context: content.context.map((m) => ({ role: m.role, content: m.content })) }
          : {}),
      });
    case 'webhook':
      return fingerprint({ sender_id: content.userId, chat_id: content.chatId, text: content.text });
  }
}

/** The event id of a keyed request: derived from scope + key, so every retry and the ledger agree (DECISIONS §6). */
export function deriveEventId(scope: string, key: string): string {
  return `evt_${createHash('sha256').update(scope).update('\u0000').update(key).digest('hex').slice(0, 32)}`;
}
