import { z } from 'zod';
import { about, positiveInt } from '../schema-meta.js';

/**
 * `limits.overload`: new work the gateway cannot take now is refused at once with 503 UNAVAILABLE and
 * `Retry-After` (ADR 0043), rather than queued until memory or latency give way.
 */
export const overloadSchema = z
  .strictObject({
    memory_measure: z
      .enum(['rss', 'heap'])
      .default('heap')
      .meta(
        about(
          'What the memory watermark compares: `heap`, the V8 heap in use plus the memory JavaScript objects hold',
          "outside it (Buffers), which falls again once a spike is collected; or `rss`, the process's resident set",
          "size (what the kernel and a container's limit count), which can stay high after a spike.",
        ),
      ),
    memory_watermark_mb: positiveInt
      .nullable()
      .default(256)
      .meta(
        about(
          'Above this many MB of the measure, sampled twice a second, new work (writes on the API, webhook',
          'messages, WebSocket messages) is refused with 503 UNAVAILABLE and Retry-After, and health reports',
          '`degraded`; reads, health and metrics still answer. null: no watermark.',
        ),
      ),
    max_event_loop_delay_ms: positiveInt
      .nullable()
      .default(1000)
      .meta(
        about(
          'When the event loop ran more than this many ms late at two samples in a row (twice a second), new work',
          'is refused with 503 and Retry-After before its body is read, until a sample is on time again. null: not',
          'checked.',
        ),
      ),
    max_queue_wait_ms: positiveInt
      .default(30_000)
      .meta(
        about(
          'When more sessions wait for a turn slot than there are slots (at least 8), a new turn is refused with 503',
          'and Retry-After if it would wait longer than this for a free turn slot',
          '(the turns ready ahead of it over agent.max_concurrent_turns, times the mean run time of a turn) or the',
          'turn longest in line has waited longer. The wait is also held to half the mean run time of a turn (never',
          'under 50 ms), so an accepted turn ends within about 1.5 times its unloaded time.',
        ),
      ),
  })
  .prefault({})
  .meta(about('Shedding new work the gateway cannot take now.'));
