import { z } from 'zod';
import type { AgentTool } from '../runtime/index.js';
import { presentMemory } from './memory.presenter.js';
import { DEFAULT_MEMORY_OWNER } from './memory.repo.js';
import { memoryContent, memoryKey, memoryTags } from './memory.schema.js';
import type { MemoryService } from './memory.service.js';

const searchArgs = z.object({
  query: z.string({ error: 'query must be a string' }).min(1, 'query must not be empty').max(1000),
  limit: z.number().int().min(1).max(20).optional(),
});

const saveArgs = z.object({ content: memoryContent, tags: memoryTags.optional(), key: memoryKey.optional() });

/**
 * The agent's memory tools (DECISIONS §10): `memory_search` (ranked search;
 * the entries it returns count as accessed) and `memory_save` (create, or
 * update the entry that already has the key). Invalid arguments throw, which
 * the agent loop reports to the model.
 */
export function memoryTools(service: MemoryService): AgentTool[] {
  return [
    {
      spec: {
        name: 'memory_search',
        description:
          'Search the persistent memory (facts, preferences and notes saved earlier, across all conversations). ' +
          'Returns the best matching entries with a relevance_score between 0 and 1.',
        parameters: {
          type: 'object',
          properties: {
            query: { type: 'string', description: 'What to look for, in natural language or keywords' },
            limit: { type: 'integer', minimum: 1, maximum: 20, description: 'Most entries to return (default 5)' },
          },
          required: ['query'],
        },
      },
      async run(args, ctx) {
        const input = parse(searchArgs, args);
        const page = await service.list({
          query: input.query,
          limit: input.limit ?? 5,
          offset: 0,
          owner: ctx.memoryOwner ?? DEFAULT_MEMORY_OWNER,
          signal: ctx.signal,
        });
        return {
          items: page.items.map((item) => {
            const view = presentMemory(item.record, item.score);
            return {
              id: view.id,
              key: view.key,
              content: view.content,
              tags: view.tags,
              created_at: view.created_at,
              relevance_score: view.relevance_score,
            };
          }),
          total: page.total,
        };
      },
    },
    {
      spec: {
        name: 'memory_save',
        description:
          'Save something worth remembering across conversations (a fact, a preference, a decision). ' +
          'With a key that already exists, that entry is updated instead.',
        parameters: {
          type: 'object',
          properties: {
            content: { type: 'string', description: 'The text to remember' },
            tags: { type: 'array', items: { type: 'string' }, description: 'Optional labels for filtering' },
            key: { type: 'string', description: 'Optional unique name for the entry, to update it later' },
          },
          required: ['content'],
        },
      },
      async run(args, ctx) {
        const input = parse(saveArgs, args);
        const { record, created } = await service.save(
          { ...input, owner: ctx.memoryOwner ?? DEFAULT_MEMORY_OWNER },
          ctx.signal,
        );
        return { status: created ? 'created' : 'updated', memory: presentMemory(record) };
      },
    },
  ];
}

function parse<T extends z.ZodType>(schema: T, args: Record<string, unknown>): z.output<T> {
  const result = schema.safeParse(args);
  if (result.success) return result.data;
  const problems = result.error.issues.map((issue) => `${issue.path.join('.') || 'arguments'}: ${issue.message}`);
  throw new Error(`invalid arguments: ${problems.join('; ')}`);
}
