import { z } from 'zod';
import { logLevels } from '../config/config.schema.js';
import type { LogEntry } from './log-entry.js';
import type { LogPage } from './logs.service.js';

/**
 * The wire shapes of GET /logs (spec: Logs; DECISIONS §9): one page of
 * entries as `queryLogs` answers it. Describes the route in the OpenAPI
 * document (ADR 0016); the follow stream's `log` events are the same entry
 * (the AsyncAPI document).
 */
export const logEntrySchema = z
  .object({
    timestamp: z.string().meta({ description: 'ISO 8601 UTC with milliseconds' }),
    level: z.enum(logLevels),
    source: z.string().meta({ description: 'Component name (`http`, `audit`, `lifecycle`, …)' }),
    message: z.string(),
    metadata: z.record(z.string(), z.unknown()),
  })
  .meta({ id: 'LogEntry' }) satisfies z.ZodType<LogEntry>;

/** GET /logs without `follow`. */
export const logPageSchema = z
  .object({
    items: z.array(logEntrySchema).meta({ description: 'Newest first' }),
    total: z.number().int().min(0).meta({ description: 'Matching entries (a lower bound when `partial`)' }),
    limit: z.number().int().min(1),
    offset: z.number().int().min(0),
    partial: z.literal(true).optional().meta({ description: 'The day files were not read to the end' }),
  })
  .meta({ id: 'LogPage' }) satisfies z.ZodType<LogPage>;
