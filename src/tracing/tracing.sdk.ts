/**
 * The OpenTelemetry side of tracing (ADR 0039), loaded only when tracing is on (`tracing.ts` imports this file
 * dynamically): a tracer provider of the gateway's own (never the global one, so gateways sharing a process
 * stay apart), a batch processor and the OTLP/HTTP exporter, configured by the standard OTEL_* variables the
 * SDK reads itself; and the `TurnTracer` the message path is handed.
 *
 * One `gatehouse.turn` span per turn, whichever process runs it: its ids are stored with the turn at its
 * acceptance (`payload.trace`); the accepting process emits `accept` as its child, the running one emits
 * `queue`, `claim`, `chat <model>`, `execute_tool <name>`, `persist` and `deliver` as its children and, when
 * the turn first reaches an outcome, the turn span itself, started at the acceptance and given the stored id
 * (`PinnedIds`).
 */
import {
  createTraceState,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Context,
  type Span,
  type SpanContext,
  type Tracer,
} from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { defaultResource, detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources';
import {
  BasicTracerProvider,
  BatchSpanProcessor,
  RandomIdGenerator,
  type IdGenerator,
} from '@opentelemetry/sdk-trace-base';
import type { Config } from '../config/config.schema.js';
import type { ModelProvider, ModelRequest, ModelResponse, ToolSet } from '../runtime/index.js';
import type { Inbound, StoredTrace, TracedTurn, TurnIds, TurnTrace, TurnTracer } from '../turns/index.js';
import { derivedTurnTrace, formatTraceparent, newTurnTrace, storedTraceOf } from './trace-context.js';

/** The instrumentation scope of the gateway's spans. */
const SCOPE = 'gatehouse';
/** Turns whose start this process noted and whose run has not opened yet (bounded, oldest forgotten first). */
const MAX_NOTED = 4096;

/** What the SDK side hands back to `tracing.ts`. */
export interface TracingSdk {
  tracer: TurnTracer;
  flush(): Promise<void>;
  shutdown(): Promise<void>;
}

/**
 * Random ids, except the next span's (and, for a root span, trace's) when pinned: how `gatehouse.turn` gets
 * the ids stored with the turn while still being an ordinary span of the SDK (sampled, limited, exported as
 * any other). Pinning and starting the span happen in one synchronous step.
 */
class PinnedIds implements IdGenerator {
  readonly #random = new RandomIdGenerator();
  #spanId: string | null = null;
  #traceId: string | null = null;

  pin(traceId: string, spanId: string): void {
    this.#traceId = traceId;
    this.#spanId = spanId;
  }

  /** Drops what a span start did not take (a suppressed start takes no ids). */
  unpin(): void {
    this.#traceId = null;
    this.#spanId = null;
  }

  generateTraceId(): string {
    const id = this.#traceId;
    this.#traceId = null;
    return id ?? this.#random.generateTraceId();
  }

  generateSpanId(): string {
    const id = this.#spanId;
    this.#spanId = null;
    return id ?? this.#random.generateSpanId();
  }
}

/**
 * Epoch milliseconds for span times: sub-millisecond (the monotonic clock from the process's time origin) while
 * it agrees with the wall clock, else the wall clock itself, so spans of the processes sharing a turn stay on
 * one time line however long each has run.
 */
function nowMs(): number {
  const wall = Date.now();
  const precise = performance.timeOrigin + performance.now();
  return Math.abs(precise - wall) < 1 ? precise : wall;
}

/** Starts the SDK for `config.tracing`; `instanceId` and `version` describe this gateway in the resource. */
export function startTracingSdk(config: Config, about: { instanceId: string; version: string }): TracingSdk {
  const settings = config.tracing;
  // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES (read synchronously by the SDK's environment detector).
  const fromEnv = detectResources({ detectors: [envDetector] });
  const resource = defaultResource()
    .merge(
      resourceFromAttributes({
        'service.name': 'gatehouse',
        'service.version': about.version,
        'service.instance.id': about.instanceId,
      }),
    )
    .merge(fromEnv)
    .merge(settings.service_name ? resourceFromAttributes({ 'service.name': settings.service_name }) : null);
  const exporter = new OTLPTraceExporter(settings.endpoint ? { url: settings.endpoint } : {});
  const processor = new BatchSpanProcessor(exporter);
  const ids = new PinnedIds();
  const provider = new BasicTracerProvider({ resource, idGenerator: ids, spanProcessors: [processor] });
  const tracer = provider.getTracer(SCOPE, about.version);
  return {
    tracer: new SdkTurnTracer(tracer, ids, settings.capture_content),
    flush: () => provider.forceFlush(),
    shutdown: () => provider.shutdown(),
  };
}

/** The parent context of a turn's phase spans: the turn span, as a remote parent. */
function turnContext(stored: StoredTrace): Context {
  const context: SpanContext = {
    traceId: stored.trace_id,
    spanId: stored.span_id,
    traceFlags: stored.flags,
    isRemote: true,
    ...(stored.tracestate ? { traceState: createTraceState(stored.tracestate) } : {}),
  };
  return trace.setSpanContext(ROOT_CONTEXT, context);
}

/** The context of the turn span's own parent: the caller's span, or none (a root span). */
function callerContext(stored: StoredTrace): Context {
  if (!stored.parent_span_id) return ROOT_CONTEXT;
  return turnContext({ ...stored, span_id: stored.parent_span_id });
}

/** The ids every span of a turn carries. */
function idAttributes(ids: TurnIds): Attributes {
  const attributes: Attributes = { 'gatehouse.event_id': ids.eventId, 'gatehouse.session_key': ids.sessionKey };
  if (ids.source) attributes['gatehouse.source'] = ids.source;
  if (ids.channel) attributes['gatehouse.channel'] = ids.channel;
  if (ids.principal) attributes['gatehouse.principal'] = ids.principal;
  if (ids.agent) attributes['gatehouse.agent'] = ids.agent;
  return attributes;
}

/** The `TurnTracer` over one SDK tracer. */
class SdkTurnTracer implements TurnTracer {
  /** When each turn's current job started here (the end of `queue`), until its run opens. */
  readonly #started = new Map<string, number>();
  /** When turns accepted here were queued (the start of `queue` when they run here too). */
  readonly #queued = new Map<string, number>();

  constructor(
    readonly tracer: Tracer,
    readonly ids: PinnedIds,
    readonly captureContent: boolean,
  ) {}

  begin(inbound: Inbound): StoredTrace {
    return newTurnTrace(inbound.trace, nowMs());
  }

  accepted(ids: TurnIds, stored: StoredTrace, text: string): void {
    const end = nowMs();
    const span = this.tracer.startSpan(
      'accept',
      { startTime: stored.start_ms, attributes: idAttributes(ids) },
      turnContext(stored),
    );
    if (this.captureContent) span.setAttribute('gatehouse.message.text', text);
    span.end(end);
    note(this.#queued, ids.eventId, end);
  }

  started(eventId: string): void {
    note(this.#started, eventId, nowMs());
  }

  open(turn: TracedTurn, who: Pick<TurnIds, 'principal' | 'agent'>, resumed: boolean): TurnTrace {
    const acceptedMs = Date.parse(turn.acceptedAt);
    const stored = storedTraceOf(turn.payload) ?? derivedTurnTrace(turn.eventId, acceptedMs);
    const payload = turn.payload as { source?: unknown; channel?: unknown; text?: unknown } | null;
    const ids: TurnIds = {
      eventId: turn.eventId,
      sessionKey: turn.sessionKey,
      ...(typeof payload?.source === 'string' ? { source: payload.source } : {}),
      ...(typeof payload?.channel === 'string' ? { channel: payload.channel } : {}),
      ...who,
    };
    const queuedMs = take(this.#queued, turn.eventId) ?? acceptedMs;
    const startedMs = take(this.#started, turn.eventId) ?? nowMs();
    return new SdkTurnTrace(this, stored, ids, resumed, queuedMs, startedMs);
  }

  /** Emits `gatehouse.turn` with the stored ids, from the acceptance to now. */
  emitTurn(stored: StoredTrace, ids: TurnIds, status: string): void {
    this.ids.pin(stored.trace_id, stored.span_id);
    const span = this.tracer.startSpan(
      'gatehouse.turn',
      {
        kind: SpanKind.SERVER,
        startTime: stored.start_ms,
        attributes: { ...idAttributes(ids), 'gatehouse.turn.status': status },
      },
      callerContext(stored),
    );
    this.ids.unpin();
    if (status === 'failed') span.setStatus({ code: SpanStatusCode.ERROR });
    span.end(nowMs());
  }
}

/** Sets a turn's moment in a bounded map. */
function note(map: Map<string, number>, eventId: string, at: number): void {
  if (!map.has(eventId) && map.size >= MAX_NOTED) map.delete(map.keys().next().value!);
  map.set(eventId, at);
}

/** A turn's moment, forgotten once read. */
function take(map: Map<string, number>, eventId: string): number | undefined {
  const at = map.get(eventId);
  map.delete(eventId);
  return at;
}

/** One run of a turn here. */
class SdkTurnTrace implements TurnTrace {
  readonly traceparent: string;
  readonly #context: Context;
  #claimed = false;
  #answeredMs: number | null = null;
  #storedMs: number | null = null;

  constructor(
    private readonly owner: SdkTurnTracer,
    private readonly turnTrace: StoredTrace,
    private readonly ids: TurnIds,
    private readonly resumed: boolean,
    private readonly queuedMs: number,
    private readonly startedMs: number,
  ) {
    this.#context = turnContext(turnTrace);
    this.traceparent = formatTraceparent(turnTrace.trace_id, turnTrace.span_id, turnTrace.flags);
  }

  /** A phase span of the turn from `start` to `end`. */
  #phase(name: string, start: number, end: number): void {
    const span = this.owner.tracer.startSpan(
      name,
      { startTime: start, attributes: idAttributes(this.ids) },
      this.#context,
    );
    span.end(Math.max(start, end));
  }

  claimed(): void {
    if (this.#claimed) return;
    this.#claimed = true;
    if (this.resumed) return;
    const now = nowMs();
    this.#phase('queue', Math.min(this.queuedMs, this.startedMs), this.startedMs);
    this.#phase('claim', this.startedMs, now);
  }

  async chat(provider: ModelProvider, request: ModelRequest): Promise<ModelResponse> {
    const model = provider.model;
    const span = this.owner.tracer.startSpan(
      `chat ${model}`,
      {
        kind: SpanKind.CLIENT,
        attributes: {
          'gen_ai.operation.name': 'chat',
          'gen_ai.system': provider.type,
          'gen_ai.request.model': model,
          'gatehouse.event_id': this.ids.eventId,
        },
      },
      this.#context,
    );
    const context = span.spanContext();
    const headers: Record<string, string> = {
      traceparent: formatTraceparent(context.traceId, context.spanId, context.traceFlags),
    };
    if (this.turnTrace.tracestate) headers.tracestate = this.turnTrace.tracestate;
    if (this.owner.captureContent) span.setAttribute('gen_ai.input.messages', JSON.stringify(request.messages));
    try {
      const response = await provider.complete({ ...request, headers });
      span.setAttributes({
        'gen_ai.response.model': response.model,
        'gen_ai.response.finish_reasons': [response.finish_reason],
        'gen_ai.usage.input_tokens': response.usage.input_tokens,
        'gen_ai.usage.output_tokens': response.usage.output_tokens,
      });
      if (this.owner.captureContent) {
        span.setAttribute(
          'gen_ai.output.messages',
          JSON.stringify([{ role: 'assistant', content: response.content, tool_calls: response.tool_calls }]),
        );
      }
      return response;
    } catch (err) {
      failed(span, err);
      throw err;
    } finally {
      span.end();
    }
  }

  tools(tools: ToolSet): ToolSet {
    const tracer = this.owner.tracer;
    const context = this.#context;
    const capture = this.owner.captureContent;
    const eventId = this.ids.eventId;
    return {
      specs: () => tools.specs(),
      get: (name) => {
        const tool = tools.get(name);
        if (!tool) return undefined;
        return {
          spec: tool.spec,
          ...(tool.needsApproval ? { needsApproval: () => tool.needsApproval?.() === true } : {}),
          run: async (args, ctx) => {
            const span = tracer.startSpan(
              `execute_tool ${name}`,
              {
                attributes: {
                  'gen_ai.operation.name': 'execute_tool',
                  'gen_ai.tool.name': name,
                  'gatehouse.event_id': eventId,
                },
              },
              context,
            );
            if (capture) span.setAttribute('gen_ai.tool.call.arguments', JSON.stringify(args));
            try {
              const result = await tool.run(args, ctx);
              if (capture) span.setAttribute('gen_ai.tool.call.result', JSON.stringify(result ?? null));
              return result;
            } catch (err) {
              failed(span, err);
              throw err;
            } finally {
              span.end();
            }
          },
        };
      },
    };
  }

  answered(): void {
    this.#answeredMs = nowMs();
  }

  stored(): void {
    const now = nowMs();
    this.#storedMs = now;
    if (this.#answeredMs !== null) this.#phase('persist', this.#answeredMs, now);
  }

  delivered(status: string): void {
    if (this.#storedMs !== null) this.#phase('deliver', this.#storedMs, nowMs());
    if (!this.resumed) this.owner.emitTurn(this.turnTrace, this.ids, status);
  }
}

/** Marks a span failed with the error's class name (never its text: it may quote the upstream). */
function failed(span: Span, err: unknown): void {
  span.setStatus({ code: SpanStatusCode.ERROR });
  span.setAttribute('error.type', err instanceof Error ? err.name : 'Error');
}
