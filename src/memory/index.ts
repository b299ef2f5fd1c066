/**
 * Memory: the agent's persistent, session-independent memory entries
 * (spec: Memory entry, Memory endpoints; DECISIONS §9, §10).
 */
export { type MemoryView, presentMemory } from './memory.presenter.js';
export type { MemoriesTable, MemoryFilters, MemoryRecord, MemoryTagsTable } from './memory.repo.js';
export { type MemoryRoutesDeps, memoryRoutes } from './memory.routes.js';
export {
  MEMORY_COLLECTION,
  MEMORY_SEARCH_CAP,
  MemoryKeyTakenError,
  type MemoryQuery,
  type MemoryEvent,
  MemoryService,
  type MemoryServiceOptions,
  type NewMemory,
  type ScoredMemory,
} from './memory.service.js';
export { memoryTools } from './memory.tools.js';
export { memoryModule } from './memory.module.js';
