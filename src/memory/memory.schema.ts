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
