import { z } from 'zod';
import type { AgentTool } from '../runtime/index.js';
import { roundScore } from './knowledge.presenter.js';
import type { KnowledgeService } from './knowledge.service.js';

const searchArgs = z.object({
  query: z.string({ error: 'query must be a string' }).min(1, 'query must not be empty').max(1000),
  top_k: z.number().int().min(1).max(10).optional(),
});

/**
 * The agent's `knowledge_search` tool (DECISIONS §10): the best documents
 * for a query with their best chunks in full, so the model can quote them.
 * Invalid arguments throw, which the agent loop reports to the model.
 */
export function knowledgeTools(service: KnowledgeService): AgentTool[] {
  return [
    {
      spec: {
        name: 'knowledge_search',
        description:
          'Search the knowledge base (documents uploaded by the administrators). Returns the best matching ' +
          'documents with their most relevant passages.',
        parameters: {
          type: 'object',
          properties: {
            query: { type: 'string', description: 'What to look for, in natural language or keywords' },
            top_k: { type: 'integer', minimum: 1, maximum: 10, description: 'Most documents to return (default 3)' },
          },
          required: ['query'],
        },
      },
      async run(args, ctx) {
        const parsed = searchArgs.safeParse(args);
        if (!parsed.success) {
          const problems = parsed.error.issues.map((i) => `${i.path.join('.') || 'arguments'}: ${i.message}`);
          throw new Error(`invalid arguments: ${problems.join('; ')}`);
        }
        const list = await service.list({
          query: parsed.data.query,
          limit: parsed.data.top_k ?? 3,
          signal: ctx.signal,
        });
        return {
          items: list.items.map((item) => ({
            id: item.record.id,
            title: item.record.title,
            source: item.record.source,
            score: roundScore(item.score ?? 0),
            passages: (item.matches ?? []).map((match) => ({ chunk: match.chunk, text: match.text })),
          })),
        };
      },
    },
  ];
}
