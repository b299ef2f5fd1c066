/**
 * OpenTelemetry tracing of turns (DECISIONS §21, ADR 0039): one trace per turn, across the processes that
 * accept and run it. The message path knows it only as its `TurnTracer` port.
 */
export { openTracing, tracingSdkLoaded, type Tracing } from './tracing.js';
export { formatTraceparent, parseTraceparent, readTracestate, type ParentContext } from './trace-context.js';
