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
