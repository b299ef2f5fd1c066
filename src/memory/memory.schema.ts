import { z } from 'zod';
import { MEMORY_ID_PREFIX } from './memory.service.js';

/**
 * Field rules shared by the memory routes and tools. Text may not hold NUL
 * (PostgreSQL text cannot store it); tags and keys hold no control
 * characters at all.
 */

/** True when `v` holds no NUL character. */
const noNul = (v: string): boolean => !v.includes('\0');
const NO_CONTROL = /^[^\p{Cc}]*$/u;

/** Entry content: non-blank text. */
export const memoryContent = z
  .string({ error: 'content must be a string' })
  .refine((v) => v.trim() !== '', 'content must not be empty')
  .refine((v) => noNul(v), 'content must not contain NUL characters');

/** One tag: 1..100 characters, no control characters. */
export const memoryTag = z
  .string({ error: 'tag must be a string' })
  .min(1, 'tag must not be empty')
  .max(100, 'tag must be at most 100 characters')
  .regex(NO_CONTROL, 'tag must not contain control characters');

/** The tags of an entry: at most 50. */
export const memoryTags = z.array(memoryTag, { error: 'tags must be an array of strings' }).max(50, 'at most 50 tags');

/** A unique key: 1..200 characters, no control characters, not shaped like an id (`mem_…`). */
export const memoryKey = z
  .string({ error: 'key must be a string' })
  .min(1, 'key must not be empty')
  .max(200, 'key must be at most 200 characters')
  .regex(NO_CONTROL, 'key must not contain control characters')
  .refine((v) => !v.startsWith(MEMORY_ID_PREFIX), `key must not start with "${MEMORY_ID_PREFIX}" (reserved for ids)`);

/** A search query: at most 1000 characters, no NUL. */
export const memoryQueryText = z
  .string()
  .max(1000, 'query must be at most 1000 characters')
  .refine(noNul, 'query must not contain NUL characters');

/*
 * Response shapes (the presenter's output), declared on the routes for the
 * OpenAPI document; the response-schema test parses real answers with them.
 */

/** ISO 8601 UTC with milliseconds (DECISIONS §2). */
const timestamp = z.iso.datetime({ precision: 3 }).describe('ISO 8601 UTC with milliseconds');

/** A memory entry (spec: Memory entry; DECISIONS §9). */
export const memoryEntrySchema = z
  .object({
    id: z.string(),
    key: z.string().nullable().describe('The unique key given on create; null without one'),
    content: z.string(),
    tags: z.array(z.string()),
    created_at: timestamp,
    last_accessed: timestamp.describe('Moves when a search returns the entry or the agent uses it'),
    relevance_score: z.number().min(0).max(1).describe('The match score of a search with `query`; 0 otherwise'),
  })
  .meta({ id: 'MemoryEntry', description: 'A memory entry' });

/** GET /memory: one page (`limit` + `offset`). */
export const memoryListSchema = z
  .object({
    items: z.array(memoryEntrySchema),
    total: z
      .number()
      .int()
      .min(0)
      .describe('Entries matching the filters, all pages (with `query`: the ranked matches, at most 1000)'),
    limit: z.number().int(),
    offset: z.number().int(),
  })
  .meta({ id: 'MemoryList', description: 'Memory entries, newest first or best match first with `query`' });

/** DELETE /memory/{id}: the id of the entry deleted (also when addressed by key). */
export const memoryDeletedSchema = z
  .object({ id: z.string(), deleted: z.literal(true) })
  .describe('The entry is deleted; `id` is its id, also when it was addressed by key');
