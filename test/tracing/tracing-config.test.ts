/**
 * How tracing is turned on (DECISIONS §21): the config block, the standard OTEL_* variables through the config
 * loader, and the W3C trace context the gateway reads.
 */
import { describe, expect, it } from 'vitest';
import { applyEnvironment } from '../../src/config/config.load.js';
import { defaultConfig, validateConfig } from '../../src/config/config.schema.js';
import { formatTraceparent, parseTraceparent, readTracestate } from '../../src/tracing/index.js';
import { derivedTurnTrace, newTurnTrace } from '../../src/tracing/trace-context.js';

/** The tracing block after the environment `env` is applied over the file `file`. */
function tracingOf(file: Record<string, unknown>, env: Record<string, string>) {
  const raw = structuredClone(file);
  applyEnvironment(raw, env);
  const result = validateConfig(raw);
  if (!result.ok) throw new Error(JSON.stringify(result.errors));
  return result.config.tracing;
}

describe('tracing configuration', () => {
  it('is off by default, content not captured', () => {
    expect(defaultConfig().tracing).toEqual({
      enabled: false,
      endpoint: null,
      service_name: null,
      capture_content: false,
    });
    expect(tracingOf({}, {}).enabled).toBe(false);
  });

  it('an OTLP endpoint in the environment turns it on; the exporter reads the endpoint itself', () => {
    expect(tracingOf({}, { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' })).toMatchObject({
      enabled: true,
      endpoint: null,
    });
    expect(tracingOf({}, { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://collector:4318/v1/traces' }).enabled).toBe(true);
  });

  it('the file decides over the endpoint variables; OTEL_SDK_DISABLED=true turns it off whatever else says', () => {
    const endpoint = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' };
    expect(tracingOf({ tracing: { enabled: false } }, endpoint).enabled).toBe(false);
    expect(tracingOf({ tracing: { enabled: true } }, { OTEL_SDK_DISABLED: 'true' }).enabled).toBe(false);
    expect(tracingOf({}, { ...endpoint, OTEL_SDK_DISABLED: 'TRUE' }).enabled).toBe(false);
    expect(tracingOf({ tracing: { capture_content: true } }, endpoint)).toMatchObject({
      enabled: true,
      capture_content: true,
    });
  });

  it('refuses an endpoint that is not an http(s) URL', () => {
    const result = validateConfig({ tracing: { enabled: true, endpoint: 'collector:4318' } });
    expect(result.ok).toBe(false);
    expect(validateConfig({ tracing: { endpoint: 'https://collector.example/v1/traces' } }).ok).toBe(true);
  });
});

describe('W3C trace context', () => {
  const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
  const spanId = '00f067aa0ba902b7';

  it('reads a valid traceparent (a header sent twice: its first value)', () => {
    expect(parseTraceparent(`00-${traceId}-${spanId}-01`)).toEqual({ traceId, spanId, flags: 1 });
    expect(parseTraceparent([`00-${traceId}-${spanId}-00`, 'junk'])).toEqual({ traceId, spanId, flags: 0 });
    // A later version is read by the version-00 fields it starts with.
    expect(parseTraceparent(`01-${traceId}-${spanId}-01-more`)).toEqual({ traceId, spanId, flags: 1 });
    expect(formatTraceparent(traceId, spanId, 1)).toBe(`00-${traceId}-${spanId}-01`);
  });

  it('ignores an invalid one', () => {
    for (const bad of [
      undefined,
      '',
      'garbage',
      `00-${'0'.repeat(32)}-${spanId}-01`,
      `00-${traceId}-${'0'.repeat(16)}-01`,
      `00-${traceId.toUpperCase()}-${spanId}-01`,
      `ff-${traceId}-${spanId}-01`,
      `00-${traceId}-${spanId}-01-extra`,
    ]) {
      expect(parseTraceparent(bad), String(bad)).toBeNull();
    }
  });

  it('keeps a tracestate within the limit only', () => {
    expect(readTracestate(' a=1,b=2 ')).toBe('a=1,b=2');
    expect(readTracestate(['a=1', 'b=2'])).toBe('a=1,b=2');
    expect(readTracestate('x'.repeat(513))).toBeUndefined();
  });

  it('a turn continues the caller’s trace, or starts its own; one without a stored trace gets ids from its event id', () => {
    const continued = newTurnTrace({ traceparent: `00-${traceId}-${spanId}-01`, tracestate: 'k=v' }, 1000);
    expect(continued).toMatchObject({ trace_id: traceId, parent_span_id: spanId, flags: 1, tracestate: 'k=v' });
    expect(continued.span_id).toMatch(/^[0-9a-f]{16}$/);
    const own = newTurnTrace({}, 1000);
    expect(own.trace_id).toMatch(/^[0-9a-f]{32}$/);
    expect(own.parent_span_id).toBeUndefined();
    expect(derivedTurnTrace('evt_1', 5)).toEqual(derivedTurnTrace('evt_1', 5));
    expect(derivedTurnTrace('evt_1', 5).trace_id).not.toBe(derivedTurnTrace('evt_2', 5).trace_id);
  });
});
