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
  unnamedChatId,
  type Admission,
  type ContextMessage,
  type AdmissionSlot,
  type Inbound,
  type InboundPayload,
  type InboundSource,
  type Submitted,
} from './inbound.js';
export { type FollowOptions } from './turn-follow.js';
export type { LoadShedder } from './intake.js';
export type { QueueLoad } from './turn-queue.js';
export type { SpendCap } from './turn-ports.js';
export type { EventOutbox, OutboxEvent } from './turn-outbox.js';
export type { StoredTrace, TraceCarrier, TracedTurn, TurnIds, TurnTrace, TurnTracer } from './turn-trace.js';
export type { SessionAgent } from './turn-runner.js';
export {
  PAUSED_STATUSES,
  REPLY_OWED_STATUSES,
  endedShort,
  endedWell,
  isCompletedStatus,
  isInterruptedStatus,
  isPausedStatus,
  isRunningStatus,
  pauseOf,
} from './turn-status.js';
export { isOutcomeEvent, readyStep, readySteps, type StepError, type TurnStep } from './turn-steps.js';
export type { TurnEvent, TurnEventType } from './turn-events.js';
export type { ChatCommand } from './turn-commands.js';
export type { MessageView } from './turns.presenter.js';
export { type TurnRecord } from './turns.repo.js';
export { isTerminalStatus, type TurnStatus } from './turn-status.js';
export {
  endedTurnsWithSessions,
  listRunningCronRunsWithEndedTurns,
  listRunningTasksWithEndedTurns,
  listTurnsWithoutReply,
  turnLatencyMs,
  type CronRunWithTurn,
} from './turns.queries.js';
export { presentTurn, turnOutcomeMessage } from './turns.presenter.js';
export {
  envelopeMessage,
  envelopeResult,
  outcomeApiError,
  outcomeError,
  outcomeTimeout,
  endedTurn,
  endReason,
  type EndedTurn,
  type OutcomeError,
} from './outcome.js';
export { streamTurnEvents, type SseTurnOptions } from './turn-stream.js';
export { messageRoutes } from './message.routes.js';
export { sessionMessageRoutes, type SessionMessageRoutesDeps } from './session-messages.routes.js';
export { followTurn, type FollowDeps } from './turn-follow.js';
export {
  MESSAGE_STREAM_EVENTS,
  TURN_STREAM_EVENTS,
  streamErrorSchema,
  streamMessageSchema,
  type AcceptedEvent,
} from './turns.stream-schema.js';
export { connectTurns, pathHooks } from './turn-relay.js';
export { turnsModule } from './turns.module.js';
