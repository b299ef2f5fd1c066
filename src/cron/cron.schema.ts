import { z } from 'zod';
import { objectBody, q } from '../http/validation.js';
import { parseSchedule } from './cron.schedule.js';

/** A five-field UTC cron expression, normalised to single spaces; anything else is a 400 saying why. */
const schedule = z.string().transform((value, ctx) => {
  const parsed = parseSchedule(value);
  if (parsed.ok) return parsed.schedule.expression;
  ctx.addIssue({ code: 'custom', message: parsed.error });
  return z.NEVER;
});

/** The text the job's turn sends; kept as given, but never blank. */
const prompt = z.string().refine((value) => value.trim().length > 0, 'must not be empty');

/** `{cron_id}` path segment. */
export const cronParams = z.object({ cron_id: z.string().min(1) });

/** POST /cron: `enabled` defaults to true; unknown fields are dropped. A new job is never authorised. */
export const createCronBody = objectBody({
  schedule,
  prompt,
  enabled: z.boolean().optional(),
});

/** PUT /cron/{id}: any subset of the create fields; only those present are checked and changed. */
export const updateCronBody = objectBody({
  schedule: schedule.optional(),
  prompt: prompt.optional(),
  enabled: z.boolean().optional(),
});

/** GET /cron/{id}/runs: `limit` 1..100, default 10, no offset (spec: Cron execution history). */
export const cronRunsQuery = z.object({ limit: q.int(1, 100, 10) });

/** Validated POST /cron body. */
export type CreateCronInput = z.output<typeof createCronBody>;
/** Validated PUT /cron/{id} body. */
export type UpdateCronInput = z.output<typeof updateCronBody>;

/*
 * Response shapes (the presenter's output), declared on the routes for the
 * OpenAPI document; the response-schema test parses real answers with them.
 */

/** ISO 8601 UTC with milliseconds (DECISIONS §2). */
const timestamp = z.iso.datetime({ precision: 3 }).describe('ISO 8601 UTC with milliseconds');

/** A cron job (spec: Cron job, plus `created_at`/`updated_at`). */
export const cronJobSchema = z
  .object({
    id: z.string(),
    schedule: z.string().describe('Five-field cron expression, UTC, normalised to single spaces'),
    prompt: z.string(),
    enabled: z.boolean(),
    authorized: z.boolean().describe('Needed to run under the standard and extended profiles'),
    last_run: timestamp.nullable(),
    next_run: timestamp.nullable().describe('The next slot; null while disabled (or with no slot ahead)'),
    created_at: timestamp,
    updated_at: timestamp,
  })
  .meta({ id: 'CronJob', description: 'A cron job' });

/** GET /cron. */
export const cronJobListSchema = z
  .object({ items: z.array(cronJobSchema) })
  .meta({ id: 'CronJobList', description: 'Every cron job, oldest first' });

/** One run of a job (DECISIONS §9, plus `triggered_by`). */
export const cronRunSchema = z
  .object({
    id: z.string(),
    cron_id: z.string(),
    scheduled_at: timestamp.describe('The slot it ran for, or when it was triggered'),
    started_at: timestamp.nullable().describe('When its turn was submitted; null for a skipped run'),
    finished_at: timestamp.nullable(),
    status: z.enum(['running', 'completed', 'failed', 'skipped']).describe('`running`: its turn has no outcome yet'),
    event_id: z.string().nullable().describe('Its turn; null for a skipped run'),
    reason: z.string().nullable().describe('Why it was skipped or failed (`not_authorized`…); null when completed'),
    triggered_by: z.enum(['schedule', 'manual']),
  })
  .meta({ id: 'CronRun', description: 'One run of a cron job' });

/** GET /cron/{id}/runs. */
export const cronRunListSchema = z
  .object({ items: z.array(cronRunSchema) })
  .meta({ id: 'CronRunList', description: "A cron job's runs, newest first" });

/** DELETE /cron/{id}. */
export const cronJobDeletedSchema = z
  .object({ id: z.string(), deleted: z.literal(true) })
  .describe('The job and its run history are deleted');
