/**
 * What the message path tells tracing about a turn (DECISIONS §21, ADR 0039): a port the tracing capability
 * implements and the composition root hands in. Absent (null) when tracing is off: each phase then costs one
 * null check. The trace context travels with the turn in the ledger's payload (`StoredTrace`), so whichever
 * process runs the turn continues the trace the accepting one began.
 */
import type { ModelProvider, ModelRequest, ModelResponse, ToolSet } from '../runtime/index.js';
import type { Inbound, StoredTrace } from './inbound.js';

export type { StoredTrace, TraceCarrier } from './inbound.js';

/** The ids a turn's spans carry (never message text). */
export interface TurnIds {
  eventId: string;
  sessionKey: string;
  source?: string;
  channel?: string;
  principal?: string | null;
  agent?: string | null;
}

/** The ledger fields a running turn's trace is rebuilt from. */
export interface TracedTurn {
  eventId: string;
  sessionKey: string;
  acceptedAt: string;
  payload: unknown;
}

/** Tracing of the message path; one per process. */
export interface TurnTracer {
  /** The trace of a message about to be accepted (stored with the turn), continuing the request's context. */
  begin(inbound: Inbound): StoredTrace;
  /** The acceptance committed: the `accept` span. */
  accepted(ids: TurnIds, trace: StoredTrace, text: string): void;
  /** A job of the turn starts in this process: where `queue` ends. */
  started(eventId: string): void;
  /**
   * The turn runs here: its trace, from the ledger record. `resumed`: the turn continues after a pause (its
   * `gatehouse.turn` span was emitted when it paused; the spans of this run join it).
   */
  open(turn: TracedTurn, ids: Pick<TurnIds, 'principal' | 'agent'>, resumed: boolean): TurnTrace;
}

/** One run of a turn in this process. */
export interface TurnTrace {
  /** The W3C `traceparent` of the turn span (tests, logs). */
  readonly traceparent: string;
  /** One model call, as the span `chat <model>`; the call carries the span's `traceparent`. */
  chat(provider: ModelProvider, request: ModelRequest): Promise<ModelResponse>;
  /** The agent's tools, each call a span `execute_tool <name>`. */
  tools(tools: ToolSet): ToolSet;
  /** The claim is durable and the first model call starts: the `queue` and `claim` spans. */
  claimed(): void;
  /** The agent loop ended: `persist` starts. */
  answered(): void;
  /** The outcome is committed: `persist` ends, `deliver` starts. */
  stored(): void;
  /** The outcome reached waiters and streams: `deliver` ends, and `gatehouse.turn` with `status` (first run). */
  delivered(status: string): void;
}
