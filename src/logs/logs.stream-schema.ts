import { z } from 'zod';
import { logLevels } from '../config/config.schema.js';

/** The payload of GET /logs?follow=true (ADR 0017), owned beside the route that sends it; `docs/` documents it. */

/** `log`: one log entry of GET /logs?follow=true (spec: Log entry). */
export const logEventSchema = z
  .object({
    timestamp: z.string().meta({ description: 'ISO 8601 UTC with milliseconds' }),
    level: z.enum(logLevels),
    source: z.string(),
    message: z.string(),
    metadata: z.record(z.string(), z.unknown()),
  })
  .meta({ title: 'log' });

/** The SSE event `log` of the log follow. */
export type LogEvent = z.output<typeof logEventSchema>;

/** SSE events of GET /logs?follow=true. */
export const LOG_STREAM_EVENTS = { log: logEventSchema } as const;
