/**
 * The message path's only door (spec: message flow; docs/ARCHITECTURE.md):
 * entry point → `submit` (identity check, idempotency claim or replay,
 * ledger `accepted`, turn queue) → agent loop → turn events → `follow` /
 * `waitFor` → the entry point writes the outcome through a shared mapper.
 * Nothing outside `turns/` imports another file of it.
 */
export { createMessagePath, type MessagePath, type MessagePathOptions } from './message-path.js';
export {
  MAX_CONTEXT_MESSAGES,
  payloadOf,
  sessionKeyFor,
  type Admission,
  type ContextMessage,
  type AdmissionSlot,
  type Inbound,
  type InboundPayload,
  type InboundSource,
  type Submitted,
} from './inbound.js';
export { PAUSED_STATUSES, type FollowOptions, type FollowStep } from './turn-follow.js';
export type { TurnEvent, TurnEventType } from './turn-events.js';
export type { ChatCommand, MessageView } from './turn-runner.js';
export { isTerminalStatus, type TurnRecord, type TurnStatus } from './turns.repo.js';
export { presentTurn, turnOutcomeMessage } from './turns.presenter.js';
export {
  envelopeMessage,
  envelopeResult,
  outcomeApiError,
  outcomeError,
  outcomeTimeout,
  type OutcomeError,
} from './outcome.js';
export { streamTurnEvents, type SseTurnOptions } from './turn-stream.js';
export { messageRoutes } from './message.routes.js';
export { followTurn, type FollowDeps } from './turn-follow.js';
