/** Sessions: the API, the service behind it, and the repository the message path writes through. */
export { sessionRoutes, type SessionRoutesDeps } from './sessions.routes.js';
export { SessionService } from './sessions.service.js';
export {
  appendMessage,
  appendMessageOnce,
  bumpEpoch,
  contextWithin,
  contextMessages,
  countSessionsByAgent,
  ensureSession,
  ensureSessionCreated,
  getSession,
  messageRow,
  newSessionRow,
  sessionOf,
  toContextEntry,
  touchSession,
  touchSessionCounted,
  touchSessionEpoch,
  type ContextEntry,
  type ContextRow,
  type MessageRecord,
  type SessionOrigin,
  type SessionRecord,
} from './sessions.repo.js';
export {
  BYTES_PER_TOKEN,
  MESSAGE_OVERHEAD_BYTES,
  contextBudgetOf,
  DEFAULT_CONTEXT_BUDGET,
  fitContext,
  retainContext,
  sizeEntry,
  tokensOf,
  type ContextBudget,
  type SizedEntry,
} from './context-budget.js';
export { isolatedPrincipal, ownerScope, ownsSession, principalKeyPart } from './session-owner.js';
export { sessionsModule } from './sessions.module.js';
export type { SessionOriginPolicy } from './sessions.routes.js';
export { presentSession } from './sessions.presenter.js';
