import type { Config } from '../config/config.schema.js';
import type { MemoryHealth } from '../health/index.js';
import { errors, type ApiError } from '../http/errors.js';
import type { Logger } from '../lib/logger.js';
import type { GatewayMetrics } from '../metrics/index.js';
import type { LoadShedder, QueueLoad } from '../turns/index.js';
import { LoadSampler, type LoadProbes, type LoadSample } from './load-sampler.js';

/** Why new work was refused: the `reason` of the error's details and of `gatehouse_shed_total`. */
export type ShedReason = 'memory' | 'event_loop' | 'queue_wait' | 'queue_full';

/** Seconds a client is told to wait, per reason (the queue's own: its expected wait, at least this). */
const RETRY_AFTER_SECONDS: Record<ShedReason, number> = { memory: 2, event_loop: 1, queue_wait: 1, queue_full: 5 };
/** The longest `Retry-After` the queue's wait gives. */
const MAX_QUEUE_RETRY_AFTER_SECONDS = 30;
/**
 * Sessions waiting for a slot that never make a turn refused for its wait: a queue no deeper than the slots
 * (and never under this) is what `agent.max_concurrent_turns` is for, not overload.
 */
const MIN_READY_ALWAYS_TAKEN = 8;
/** A queue wait under this never refuses: bursts of fast turns pass. */
const MIN_QUEUE_WAIT_MS = 50;
/**
 * The wait allowed, as a share of a turn's mean run time: an accepted turn ends within about 1.5× its unloaded
 * time, which leaves room, within the 2× that accepted work is held to, for the CPU a flood's refusals take.
 */
const QUEUE_WAIT_SHARE_OF_RUN = 0.5;

const MB = 1024 * 1024;

/** What `openOverload` is built from. */
export interface OverloadOptions {
  config: Pick<Config, 'limits'>;
  logger: Logger;
  metrics: Pick<GatewayMetrics, 'shed' | 'loadGauges'>;
  /** Replaces how memory, time and the sampling timer are read (tests, embedding). */
  probes?: LoadProbes;
}

/**
 * Load shedding (ADR 0043): the door's `LoadShedder` (which starts and closes
 * its sampling with the message path), the guard's early refusal
 * (`pressure`), and health's `memory` component.
 */
export interface Overload extends Required<LoadShedder> {
  /** The `memory` component of GET /health. */
  memoryHealth(): MemoryHealth;
}

/** The 503 UNAVAILABLE of shed work, with `Retry-After` (also in the details, for the WebSocket's error frame). */
function shedError(reason: ShedReason, message: string, seconds: number, extra: Record<string, unknown> = {}) {
  return errors.unavailableFor(seconds, message, { reason, ...extra });
}

/**
 * Opens load shedding (`limits.overload`, ADR 0043). New work the gateway
 * cannot take now is refused with 503 UNAVAILABLE and `Retry-After`:
 * - the process is over a limit — the memory measure above its watermark,
 *   or the event loop late by more than `max_event_loop_delay_ms` at two
 *   samples in a row (one stall alone never sheds) — decided
 *   from the last sample (twice a second): API writes first thing in the
 *   guard, before the body is read, webhook messages likewise, anything else
 *   at the door (WebSocket messages);
 * - the turn queue cannot start the turn in time (`refuse`): more sessions
 *   wait for a slot than there are slots (at least 8), and the turn would
 *   wait longer than the budget, or the turn longest in line already has —
 *   the queue's age, as CoDel judges a standing queue —; or the queue is at
 *   `agent.max_queued_turns`.
 * Reads, health and metrics always pass.
 */
export function openOverload(options: OverloadOptions): Overload {
  const settings = options.config.limits.overload;
  const { metrics } = options;
  const log = options.logger.child({ source: 'overload' });
  const measure = settings.memory_measure;
  const watermarkBytes = settings.memory_watermark_mb === null ? null : settings.memory_watermark_mb * MB;
  const maxDelayMs = settings.max_event_loop_delay_ms;
  let memoryOver = false;
  let loopLate = false;
  /** The previous sample ran late too: a single stall (a GC, a large parse) never sheds on its own. */
  let lateBefore = false;

  const judge = (sample: LoadSample): void => {
    const wasMemory = memoryOver;
    const wasLoop = loopLate;
    memoryOver = watermarkBytes !== null && sample.memoryBytes > watermarkBytes;
    const late = maxDelayMs !== null && sample.eventLoopDelayMs > maxDelayMs;
    loopLate = late && lateBefore;
    lateBefore = late;
    const mb = Math.round(sample.memoryBytes / MB);
    if (memoryOver !== wasMemory) {
      const line = { measure, value_mb: mb, watermark_mb: settings.memory_watermark_mb };
      if (memoryOver) log.warn(line, 'memory above the watermark: new work is refused');
      else log.info(line, 'memory back under the watermark: new work is taken again');
    }
    if (loopLate !== wasLoop) {
      const line = { event_loop_delay_ms: Math.round(sample.eventLoopDelayMs), max_ms: maxDelayMs };
      if (loopLate) log.warn(line, 'event loop late: new work is refused');
      else log.info(line, 'event loop on time again: new work is taken again');
    }
  };
  const sampler = new LoadSampler(measure, judge, options.probes, watermarkBytes);
  sampler.sample(); // health and the first requests have a value before the timer's first tick

  metrics.loadGauges({
    measure,
    memoryBytes: () => sampler.current.memoryBytes,
    watermarkBytes,
    eventLoopDelayMs: () => sampler.current.eventLoopDelayMs,
    shedding: () => memoryOver || loopLate,
  });

  const shed = (reason: ShedReason, error: ApiError): ApiError => {
    metrics.shed.inc({ reason });
    return error;
  };

  const pressure = (): ApiError | null => {
    if (memoryOver) {
      const mb = Math.round(sampler.current.memoryBytes / MB);
      const message = `gateway is over its memory watermark (${measure} ${mb} MB of ${settings.memory_watermark_mb} MB); retry later`;
      return shed('memory', shedError('memory', message, RETRY_AFTER_SECONDS.memory));
    }
    if (loopLate) {
      const message = 'gateway is overloaded (event loop delay); retry later';
      return shed('event_loop', shedError('event_loop', message, RETRY_AFTER_SECONDS.event_loop));
    }
    return null;
  };

  const refuse = (load: QueueLoad): ApiError | null => {
    if (load.queued >= load.maxQueued) {
      const message = 'too many messages queued; retry later';
      return shed('queue_full', shedError('queue_full', message, RETRY_AFTER_SECONDS.queue_full));
    }
    const budgetMs = Math.min(
      settings.max_queue_wait_ms,
      Math.max(MIN_QUEUE_WAIT_MS, load.meanRunMs * QUEUE_WAIT_SHARE_OF_RUN),
    );
    if (load.ready < Math.max(load.maxConcurrent, MIN_READY_ALWAYS_TAKEN)) return null;
    const expectedMs = (load.ready / load.maxConcurrent) * load.meanRunMs;
    const waitMs = Math.max(expectedMs, load.oldestWaitMs);
    if (waitMs <= budgetMs) return null;
    const seconds = Math.min(
      MAX_QUEUE_RETRY_AFTER_SECONDS,
      Math.max(RETRY_AFTER_SECONDS.queue_wait, Math.ceil(waitMs / 1000)),
    );
    const message = 'gateway is overloaded (turn queue); retry later';
    const extra = { expected_wait_ms: Math.round(waitMs), max_wait_ms: Math.round(budgetMs) };
    return shed('queue_wait', shedError('queue_wait', message, seconds, extra));
  };

  const memoryHealth = (): MemoryHealth => {
    const valueMb = Math.round(sampler.current.memoryBytes / MB);
    const watermarkMb = settings.memory_watermark_mb;
    return {
      status: memoryOver ? 'degraded' : 'ok',
      ...(memoryOver
        ? { message: `${measure} ${valueMb} MB above the watermark of ${watermarkMb} MB: new work is refused` }
        : {}),
      measure,
      value_mb: valueMb,
      watermark_mb: watermarkMb,
      shedding: memoryOver,
    };
  };

  return {
    pressure,
    refuse,
    memoryHealth,
    start: () => sampler.start(),
    close: () => sampler.close(),
  };
}
