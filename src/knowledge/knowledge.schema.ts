import { z } from 'zod';
import { parseJsonBounded } from '../lib/json.js';
import { KNOWLEDGE_MAX_CONTENT_BYTES } from './knowledge.service.js';

/**
 * Field rules shared by the knowledge routes and tool. Text stored as is may
 * not hold NUL (PostgreSQL text cannot store it); metadata values may (they
 * are stored as JSON, escaped), metadata keys may not.
 */

/** True when `v` holds no NUL character. */
const noNul = (v: string): boolean => !v.includes('\0');

/** Most top-level metadata keys of a document or a filter. */
export const MAX_METADATA_KEYS = 100;

/** Largest metadata object, as JSON text. */
export const MAX_METADATA_BYTES = 64 * 1024;

/** Request body cap of POST /knowledge: the 10 MiB of content plus room for JSON escaping and the other fields. */
export const KNOWLEDGE_BODY_LIMIT = KNOWLEDGE_MAX_CONTENT_BYTES + 1024 * 1024;

const text = (name: string, max: number) =>
  z
    .string({ error: `${name} must be a string` })
    .refine((v) => v.trim() !== '', `${name} must not be empty`)
    .refine((v) => v.length <= max, `${name} must be at most ${max} characters`)
    .refine((v) => noNul(v), `${name} must not contain NUL characters`);

/** A metadata object: JSON object, at most MAX_METADATA_KEYS keys (no NUL), at most 64 KiB as JSON. */
export const knowledgeMetadata = z
  .record(z.string(), z.unknown(), { error: 'metadata must be an object' })
  .superRefine((value, ctx) => {
    const keys = Object.keys(value);
    if (keys.length > MAX_METADATA_KEYS) ctx.addIssue({ code: 'custom', message: `at most ${MAX_METADATA_KEYS} keys` });
    if (keys.some((key) => key.length > 200 || !noNul(key))) {
      ctx.addIssue({ code: 'custom', message: 'keys must be at most 200 characters, without NUL' });
    }
    if (Buffer.byteLength(JSON.stringify(value), 'utf8') > MAX_METADATA_BYTES) {
      ctx.addIssue({ code: 'custom', message: `must be at most ${MAX_METADATA_BYTES} bytes as JSON` });
    }
  });

/** POST /knowledge body. */
export const knowledgeCreateFields = {
  title: text('title', 500),
  // The 10 MiB content cap is checked by the route (413, like any body over its cap).
  content: text('content', Number.MAX_SAFE_INTEGER),
  // A file path, URL or label; optional (the spec marks only the task title as required).
  source: text('source', 2000).optional().default('api'),
  metadata: knowledgeMetadata.optional(),
};

/** A search query: at most 1000 characters, no NUL. */
export const knowledgeQueryText = z
  .string()
  .max(1000, 'query must be at most 1000 characters')
  .refine(noNul, 'query must not contain NUL characters');

/** An exact source filter. */
export const knowledgeSource = z.string().min(1).max(2000).refine(noNul, 'source must not contain NUL characters');

/**
 * Parses `?filter=`: a JSON object of metadata equalities, within the
 * bounds of every JSON body (ADR 0013). Returns the object, or a message
 * saying why it is not one.
 */
export function parseMetadataFilter(
  raw: string,
): { ok: true; value: Record<string, unknown> } | { ok: false; message: string } {
  const parsed = parseJsonBounded(raw);
  if (!parsed.ok) {
    return {
      ok: false,
      message: parsed.reason === 'syntax' ? 'filter must be valid JSON' : `filter: ${parsed.message}`,
    };
  }
  const value = parsed.value;
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    return { ok: false, message: 'filter must be a JSON object of metadata equalities' };
  }
  const checked = knowledgeMetadata.safeParse(value);
  if (!checked.success) return { ok: false, message: `filter ${checked.error.issues[0]?.message ?? 'is invalid'}` };
  return { ok: true, value: checked.data };
}

/*
 * Response shapes (the presenter's output), declared on the routes for the
 * OpenAPI document; the response-schema test parses real answers with them.
 */

/** How far vector search covers a document (search/embedding-state.ts). */
export const embeddingStateSchema = z
  .object({
    status: z
      .enum(['off', 'pending', 'ready', 'failed'])
      .describe(
        '`off`: no embeddings provider, full text only; `pending`: chunks wait for their vectors; `ready`: ' +
          'every chunk has one; `failed`: nothing waits, but the provider refused `failed` chunks (found by full text only)',
      ),
    chunks: z.number().int().min(0).describe('Chunks of the document'),
    embedded: z.number().int().min(0).describe('Chunks with a vector of the configured model'),
    failed: z.number().int().min(0).describe('Chunks the embeddings provider refused'),
  })
  .meta({ id: 'EmbeddingState', description: 'Vector search covers the document once `status` is `ready`' });

/** A knowledge entry (spec: Knowledge entry; DECISIONS §9). */
export const knowledgeEntrySchema = z
  .object({
    id: z.string(),
    title: z.string(),
    source: z.string().describe('A file path, URL or label; `api` when none was given'),
    chunk_count: z.number().int().min(0),
    indexed_at: z.iso.datetime({ precision: 3 }).describe('ISO 8601 UTC with milliseconds; moves on reindex'),
    size_bytes: z.number().int().min(0).describe('UTF-8 bytes of the content'),
    metadata: z.record(z.string(), z.unknown()),
    embedding: embeddingStateSchema,
  })
  .meta({ id: 'KnowledgeEntry', description: 'A knowledge document, chunked and indexed' });

/** A listed entry: with a query it adds its score and best chunks. */
export const knowledgeItemSchema = knowledgeEntrySchema
  .extend({
    score: z.number().min(0).max(1).optional().describe('With `query`: the match score'),
    matches: z
      .array(z.object({ chunk: z.number().int().min(0), text: z.string().describe('A snippet around the terms') }))
      .optional()
      .describe('With `query`: the best matching chunks'),
  })
  .meta({ id: 'KnowledgeItem', description: 'A listed knowledge entry; with `query`, its score and matches' });

/** GET /knowledge. */
export const knowledgeListSchema = z
  .object({ items: z.array(knowledgeItemSchema) })
  .meta({ id: 'KnowledgeList', description: 'Knowledge entries, newest first or best match first with `query`' });

/** DELETE /knowledge/{id}. */
export const knowledgeDeletedSchema = z
  .object({ id: z.string(), deleted: z.literal(true) })
  .describe('The entry and its index are deleted');
