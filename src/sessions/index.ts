/** Sessions: the API, the service behind it, and the repository the message path writes through. */
export { sessionRoutes, type SessionRoutesDeps } from './sessions.routes.js';
export { SessionService } from './sessions.service.js';
export {
  appendMessage,
  bumpEpoch,
  contextMessages,
  ensureSession,
  getSession,
  touchSession,
  type MessageRecord,
  type SessionRecord,
} from './sessions.repo.js';
