import { z } from 'zod';
import { errors } from '../http/errors.js';
import { created, defineRoute, type Principal, type RouteDef } from '../http/route.js';
import { objectBody, q } from '../http/validation.js';
import { isoTime } from '../lib/clock.js';
import { presentMemory } from './memory.presenter.js';
import {
  memoryContent,
  memoryDeletedSchema,
  memoryEntrySchema,
  memoryKey,
  memoryListSchema,
  memoryQueryText,
  memoryTag,
  memoryTags,
} from './memory.schema.js';
import { isolatedPrincipal } from '../sessions/index.js';
import { MemoryKeyTakenError, type MemoryService } from './memory.service.js';

const entryParams = z.object({ id: z.string().min(1).max(500) });

/** Dependencies of the memory routes. */
export interface MemoryRoutesDeps {
  service: MemoryService;
}

/**
 * Memory API (spec: Memory; DECISIONS §2, §4, §9): GET (api) lists or
 * searches with `limit` + `offset` pagination; every write is admin. An
 * entry is addressed by its id or its key.
 */
/**
 * The memory an api principal may read through the API (DECISIONS §18): a
 * configured principal its own (`principal:<id>`); the default principal, the
 * owner of a single-owner gateway, and admins every entry (undefined).
 */
function readableBy(principal: Principal): string | undefined {
  const own = isolatedPrincipal(principal);
  return own === null ? undefined : `principal:${own}`;
}

export function memoryRoutes(deps: MemoryRoutesDeps): RouteDef[] {
  const { service } = deps;
  const keyTaken = (error: unknown): never => {
    if (error instanceof MemoryKeyTakenError) {
      throw errors.validation([{ path: 'body.key', message: 'key is already used by another entry' }], error.message);
    }
    throw error;
  };
  return [
    defineRoute({
      method: 'GET',
      path: '/memory',
      permission: 'api',
      summary: 'List memory entries (newest first) or search them (`query`: ranked, relevance_score 0..1)',
      tags: ['memory'],
      query: z.object({
        query: memoryQueryText.optional(),
        tag: memoryTag.optional(),
        since: q.timestamp(),
        key: z
          .string()
          .min(1)
          .max(200)
          .regex(/^[^\p{Cc}]*$/u, 'key must not contain control characters')
          .optional(),
        limit: q.int(1, 500, 50),
        offset: q.int(0, 1_000_000_000, 0),
      }),
      responses: [{ status: 200, description: 'One page of entries', schema: memoryListSchema }],
      handler: async (ctx, { query }) => {
        const page = await service.list({
          owner: readableBy(ctx.principal),
          query: query.query,
          tag: query.tag,
          since: query.since === undefined ? undefined : isoTime(query.since),
          key: query.key,
          limit: query.limit,
          offset: query.offset,
          signal: ctx.signal,
        });
        return {
          items: page.items.map((item) => presentMemory(item.record, item.score)),
          total: page.total,
          limit: query.limit,
          offset: query.offset,
        };
      },
    }),
    defineRoute({
      method: 'GET',
      path: '/memory/:id',
      permission: 'api',
      summary: 'One memory entry, by id or key',
      tags: ['memory'],
      params: entryParams,
      responses: [{ status: 200, description: 'The entry', schema: memoryEntrySchema }],
      handler: async (ctx, { params }) => {
        const record = await service.get(params.id, readableBy(ctx.principal));
        if (!record) throw errors.notFound('memory entry');
        return presentMemory(record);
      },
    }),
    defineRoute({
      method: 'POST',
      path: '/memory',
      permission: 'admin',
      summary: 'Create a memory entry (201); a key already used is 400',
      tags: ['memory'],
      body: objectBody({ content: memoryContent, tags: memoryTags.optional(), key: memoryKey.optional() }),
      responses: [{ status: 201, description: 'The created entry', schema: memoryEntrySchema }],
      handler: async (ctx, { body }) => {
        const record = await service.create(body, ctx.signal).catch(keyTaken);
        return created(presentMemory(record));
      },
    }),
    defineRoute({
      method: 'PUT',
      path: '/memory/:id',
      permission: 'admin',
      summary: 'Change the content and/or tags of a memory entry (by id or key) and reindex it',
      tags: ['memory'],
      params: entryParams,
      body: objectBody({ content: memoryContent.optional(), tags: memoryTags.optional() }).refine(
        (body) => body.content !== undefined || body.tags !== undefined,
        'body must set content or tags',
      ),
      responses: [{ status: 200, description: 'The entry after the change', schema: memoryEntrySchema }],
      handler: async (ctx, { params, body }) => {
        const record = await service.update(params.id, body, ctx.signal);
        if (!record) throw errors.notFound('memory entry');
        return presentMemory(record);
      },
    }),
    defineRoute({
      method: 'DELETE',
      path: '/memory/:id',
      permission: 'admin',
      summary: 'Delete a memory entry (by id or key)',
      tags: ['memory'],
      params: entryParams,
      responses: [{ status: 200, description: 'Deleted', schema: memoryDeletedSchema }],
      handler: async (_ctx, { params }) => {
        const id = await service.remove(params.id);
        if (id === null) throw errors.notFound('memory entry');
        return { id, deleted: true };
      },
    }),
  ];
}
