import { z } from 'zod';
import { ApiError, errors } from '../http/errors.js';
import { created, defineRoute, type RouteDef } from '../http/route.js';
import { objectBody, q } from '../http/validation.js';
import { presentKnowledge, presentKnowledgeItem } from './knowledge.presenter.js';
import {
  KNOWLEDGE_BODY_LIMIT,
  knowledgeCreateFields,
  knowledgeDeletedSchema,
  knowledgeEntrySchema,
  knowledgeListSchema,
  knowledgeQueryText,
  knowledgeSource,
  parseMetadataFilter,
} from './knowledge.schema.js';
import { KNOWLEDGE_MAX_CONTENT_BYTES, type KnowledgeService } from './knowledge.service.js';

const entryParams = z.object({ id: z.string().min(1).max(200) });

/** Dependencies of the knowledge routes. */
export interface KnowledgeRoutesDeps {
  service: KnowledgeService;
}

/**
 * Knowledge API (spec: Knowledge; DECISIONS §2, §4, §9): reads are api,
 * upload, delete and reindex are admin (token from a header only, enforced by
 * the pipeline); reindex counts in the `lifecycle` rate group. POST accepts
 * up to 10 MiB of content.
 */
export function knowledgeRoutes(deps: KnowledgeRoutesDeps): RouteDef[] {
  const { service } = deps;
  return [
    defineRoute({
      method: 'GET',
      path: '/knowledge',
      permission: 'api',
      summary:
        'List knowledge entries (newest first) or search them (`query`: ranked, each with score and matches); ' +
        '`limit` or `top_k` 1..100 (default 10), `source`, `filter` (JSON object of metadata equalities)',
      tags: ['knowledge'],
      query: z.object({
        query: knowledgeQueryText.optional(),
        source: knowledgeSource.optional(),
        limit: q.optionalInt(1, 100),
        top_k: q.optionalInt(1, 100),
        filter: z
          .string()
          .max(64 * 1024)
          .optional(),
      }),
      responses: [{ status: 200, description: 'The entries', schema: knowledgeListSchema }],
      handler: async (ctx, { query }) => {
        if (query.limit !== undefined && query.top_k !== undefined && query.limit !== query.top_k) {
          throw errors.validation([{ path: 'query.top_k', message: 'limit and top_k differ; give one of them' }]);
        }
        let metadata: Record<string, unknown> | undefined;
        if (query.filter !== undefined) {
          const parsed = parseMetadataFilter(query.filter);
          if (!parsed.ok) throw errors.validation([{ path: 'query.filter', message: parsed.message }]);
          metadata = parsed.value;
        }
        const list = await service.list({
          query: query.query,
          source: query.source,
          metadata,
          limit: query.top_k ?? query.limit ?? 10,
          signal: ctx.signal,
        });
        return { items: list.items.map((item) => presentKnowledgeItem(item, list.terms)) };
      },
    }),
    defineRoute({
      method: 'POST',
      path: '/knowledge',
      permission: 'admin',
      summary: 'Add a document (up to 10 MiB of content): chunked and indexed; 201 with the entry',
      tags: ['knowledge'],
      bodyLimit: KNOWLEDGE_BODY_LIMIT,
      body: objectBody(knowledgeCreateFields),
      responses: [{ status: 201, description: 'The created entry', schema: knowledgeEntrySchema }],
      handler: async (ctx, { body }) => {
        if (Buffer.byteLength(body.content, 'utf8') > KNOWLEDGE_MAX_CONTENT_BYTES) {
          throw new ApiError('PAYLOAD_TOO_LARGE', `content exceeds ${KNOWLEDGE_MAX_CONTENT_BYTES} bytes`, {
            max_bytes: KNOWLEDGE_MAX_CONTENT_BYTES,
          });
        }
        return created(presentKnowledge(await service.create(body, ctx.signal)));
      },
    }),
    defineRoute({
      method: 'GET',
      path: '/knowledge/:id',
      permission: 'api',
      summary: 'One knowledge entry',
      tags: ['knowledge'],
      params: entryParams,
      responses: [{ status: 200, description: 'The entry', schema: knowledgeEntrySchema }],
      handler: async (_ctx, { params }) => {
        const record = await service.get(params.id);
        if (!record) throw errors.notFound('knowledge entry');
        return presentKnowledge(record);
      },
    }),
    defineRoute({
      method: 'DELETE',
      path: '/knowledge/:id',
      permission: 'admin',
      summary: 'Delete a knowledge entry and its index',
      tags: ['knowledge'],
      params: entryParams,
      responses: [{ status: 200, description: 'Deleted', schema: knowledgeDeletedSchema }],
      handler: async (_ctx, { params }) => {
        if (!(await service.remove(params.id))) throw errors.notFound('knowledge entry');
        return { id: params.id, deleted: true };
      },
    }),
    defineRoute({
      method: 'POST',
      path: '/knowledge/:id/reindex',
      permission: 'admin',
      rateGroup: 'lifecycle',
      summary: 'Re-chunk and re-index one entry from its stored text; indexed_at moves',
      tags: ['knowledge'],
      params: entryParams,
      responses: [{ status: 200, description: 'The entry, re-indexed', schema: knowledgeEntrySchema }],
      handler: async (ctx, { params }) => {
        const record = await service.reindex(params.id, ctx.signal);
        if (!record) throw errors.notFound('knowledge entry');
        return presentKnowledge(record);
      },
    }),
  ];
}
