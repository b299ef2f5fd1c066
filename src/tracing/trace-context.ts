/**
 * W3C Trace Context (https://www.w3.org/TR/trace-context/) as the gateway reads and writes it: `traceparent`
 * parsed strictly (version 00 layout, lower-case hex, ids not all zero), `tracestate` kept as the caller sent
 * it (bounded), and the ids of a turn's trace minted at its acceptance or, for a turn accepted without
 * tracing, derived from its event id so that every process agrees on them. No OpenTelemetry import here.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { StoredTrace, TraceCarrier } from '../turns/index.js';

/** A parsed `traceparent`. */
export interface ParentContext {
  traceId: string;
  spanId: string;
  flags: number;
}

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(?:-.*)?$/;
const ZERO_TRACE = '0'.repeat(32);
const ZERO_SPAN = '0'.repeat(16);
/** The W3C limit on `tracestate` (512 characters); a longer one is dropped rather than cut. */
const MAX_TRACESTATE = 512;

/** The first value of a header that may have been sent more than once. */
function first(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

/**
 * The parent a `traceparent` names, or null for none or an invalid one (which starts a new trace, as the
 * specification asks). A future version is read by its version-00 prefix; version `ff` is invalid.
 */
export function parseTraceparent(value: string | string[] | undefined): ParentContext | null {
  const text = first(value)?.trim();
  if (!text || text.length > 512) return null;
  const match = TRACEPARENT.exec(text);
  if (!match) return null;
  const [, version, traceId, spanId, flags] = match as unknown as [string, string, string, string, string];
  if (version === 'ff' || (version === '00' && text.length !== 55)) return null;
  if (traceId === ZERO_TRACE || spanId === ZERO_SPAN) return null;
  return { traceId, spanId, flags: parseInt(flags, 16) };
}

/** The `tracestate` to carry on, or undefined when absent, empty or over the limit. */
export function readTracestate(value: string | string[] | undefined): string | undefined {
  const text = Array.isArray(value) ? value.join(',') : value;
  const trimmed = text?.trim();
  return trimmed && trimmed.length <= MAX_TRACESTATE ? trimmed : undefined;
}

/** A `traceparent` header value. */
export function formatTraceparent(traceId: string, spanId: string, flags: number): string {
  return `00-${traceId}-${spanId}-${(flags & 0xff).toString(16).padStart(2, '0')}`;
}

/** Random non-zero hex ids of `bytes` bytes. */
function randomHex(bytes: number): string {
  for (;;) {
    const hex = randomBytes(bytes).toString('hex');
    if (!/^0+$/.test(hex)) return hex;
  }
}

/** The sampled flag of W3C trace flags. */
export const SAMPLED = 0x01;

/**
 * The trace of a message accepted now: the caller's trace (its span the turn span's parent, its flags and
 * state) when the request carried a valid `traceparent`, else a new trace; a new turn span id either way.
 */
export function newTurnTrace(carrier: TraceCarrier | undefined, startMs: number): StoredTrace {
  const parent = carrier ? parseTraceparent(carrier.traceparent) : null;
  const tracestate = parent && carrier ? readTracestate(carrier.tracestate) : undefined;
  return {
    trace_id: parent?.traceId ?? randomHex(16),
    span_id: randomHex(8),
    ...(parent ? { parent_span_id: parent.spanId } : {}),
    flags: parent ? parent.flags : SAMPLED,
    ...(tracestate ? { tracestate } : {}),
    start_ms: startMs,
  };
}

/**
 * The trace of a turn whose ledger record carries none (accepted by a gateway that did not trace): its ids
 * derived from the event id (SHA-256), so any process that runs it, and a retry of its outcome, agree.
 */
export function derivedTurnTrace(eventId: string, startMs: number): StoredTrace {
  const digest = createHash('sha256').update(`gatehouse.turn:${eventId}`).digest('hex');
  const traceId = digest.slice(0, 32) === ZERO_TRACE ? `${digest.slice(0, 31)}1` : digest.slice(0, 32);
  const spanId = digest.slice(32, 48) === ZERO_SPAN ? `${digest.slice(32, 47)}1` : digest.slice(32, 48);
  return { trace_id: traceId, span_id: spanId, flags: SAMPLED, start_ms: startMs };
}

/** The stored trace of a ledger payload, if it is a well-formed one. */
export function storedTraceOf(payload: unknown): StoredTrace | null {
  const trace = (payload as { trace?: unknown } | null)?.trace as Partial<StoredTrace> | undefined;
  if (!trace || typeof trace !== 'object') return null;
  const { trace_id: traceId, span_id: spanId, flags, start_ms: startMs } = trace;
  if (typeof traceId !== 'string' || !/^[0-9a-f]{32}$/.test(traceId)) return null;
  if (typeof spanId !== 'string' || !/^[0-9a-f]{16}$/.test(spanId)) return null;
  if (typeof flags !== 'number' || typeof startMs !== 'number') return null;
  return trace as StoredTrace;
}
