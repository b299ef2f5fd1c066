/**
 * Knowledge: documents chunked and indexed for hybrid search
 * (spec: Knowledge entry, Knowledge endpoints; DECISIONS §9, §10).
 */
export {
  type KnowledgeListView,
  type KnowledgeView,
  presentKnowledge,
  presentKnowledgeItem,
} from './knowledge.presenter.js';
export type { KnowledgeFilters, KnowledgeMetadataTable, KnowledgeRecord, KnowledgeTable } from './knowledge.repo.js';
export { type KnowledgeRoutesDeps, knowledgeRoutes } from './knowledge.routes.js';
export { KNOWLEDGE_BODY_LIMIT } from './knowledge.schema.js';
export {
  KNOWLEDGE_COLLECTION,
  KNOWLEDGE_MAX_CONTENT_BYTES,
  type KnowledgeEntry,
  type KnowledgeItem,
  type KnowledgeList,
  type KnowledgeMatch,
  type KnowledgeQuery,
  KnowledgeService,
  type KnowledgeServiceOptions,
  type NewKnowledge,
} from './knowledge.service.js';
export { knowledgeTools } from './knowledge.tools.js';
export { knowledgeModule } from './knowledge.module.js';
