import { z } from 'zod';
import { objectBody, q } from '../http/validation.js';

/** `{session_id}`: the session key, URL-encoded in the path (DECISIONS §5). */
export const sessionParams = z.object({ session_id: z.string().min(1) });

/** GET /sessions (cursor pagination, DECISIONS §2). */
export const listQuery = z.object({
  channel: z.string().min(1).optional(),
  status: z.enum(['active', 'archived', 'all']).optional(),
  limit: q.int(1, 100, 20),
  cursor: z.string().min(1).optional(),
});

/** POST /sessions `{channel, metadata}`. */
export const createBody = objectBody({
  channel: z
    .string()
    .regex(/^[A-Za-z0-9_.-]{1,64}$/, 'letters, digits, _ . - (1..64)')
    .optional(),
  metadata: z.record(z.string(), z.unknown()).optional(),
}).optional();

/** GET /sessions/{id}/history. */
export const historyQuery = z.object({ limit: q.int(1, 500, 100) });

/** POST /sessions/{id}/messages `{content, role: "user"}`. */
export const messageBody = objectBody({
  content: z.string({ error: 'content is required' }).min(1, 'content must not be empty'),
  role: z.literal('user', { error: 'role must be "user"' }).optional(),
});

/** POST /sessions/{id}/messages query. */
export const messageQuery = z.object({ timeout_seconds: q.optionalInt(1, 600) });
