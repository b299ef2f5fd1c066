/**
 * The turn statuses and the sets they fall in, exported once (ADR 0036):
 * nothing outside `src/turns/` and `src/runtime/` compares a status with a
 * literal; it asks one of these.
 */

/** The spec's turn statuses. */
export const TURN_STATUSES = [
  'accepted',
  'running',
  'waiting_approval',
  'waiting_clarification',
  'completed',
  'incomplete',
  'failed',
  'interrupted',
] as const;

/** A turn's lifecycle state. */
export type TurnStatus = (typeof TURN_STATUSES)[number];

/** Statuses a turn never leaves: the first one written wins. */
export const TERMINAL_STATUSES = ['completed', 'incomplete', 'failed', 'interrupted'] as const;

/** A status a turn ends in. */
export type TerminalTurnStatus = (typeof TERMINAL_STATUSES)[number];

/** A status a turn can still move on from. */
export type OpenTurnStatus = Exclude<TurnStatus, TerminalTurnStatus>;

/** The statuses a paused turn waits in. */
export type WaitingTurnStatus = 'waiting_approval' | 'waiting_clarification';

/** Statuses a turn pauses in (the reply to one message may end there: `endOnPause`). */
export const PAUSED_STATUSES: ReadonlySet<string> = new Set<WaitingTurnStatus>([
  'waiting_approval',
  'waiting_clarification',
]);

/** Statuses a waiting request answers with: the turn's end, or a pause (its outcome for that request). */
export const OUTCOME_STATUSES: ReadonlySet<string> = new Set([...TERMINAL_STATUSES, ...PAUSED_STATUSES]);

/** True for completed, incomplete, failed and interrupted. */
export function isTerminalStatus(status: string): status is TerminalTurnStatus {
  return (TERMINAL_STATUSES as readonly string[]).includes(status);
}

/** True when `status` is one a turn pauses in. */
export function isPausedStatus(status: string): status is WaitingTurnStatus {
  return PAUSED_STATUSES.has(status);
}

/** True for a turn the agent is working on now (claimed, not paused, not ended). */
export function isRunningStatus(status: string): boolean {
  return status === 'running';
}

/** What a paused turn waits for: a person's approval of a tool call, or an answer to the agent's question. */
export function pauseOf(status: string): 'approval' | 'clarification' | null {
  if (status === 'waiting_approval') return 'approval';
  if (status === 'waiting_clarification') return 'clarification';
  return null;
}

/** True for an ended turn that did not go wrong: completed, or interrupted (by a person, a restart, a cancel). */
export function endedWell(status: string): boolean {
  return status === 'completed' || status === 'interrupted';
}

/** True for an ended turn whose reply was cut short: interrupted or incomplete. */
export function endedShort(status: string): boolean {
  return status === 'interrupted' || status === 'incomplete';
}

/** True for a turn that ended as interrupted. */
export function isInterruptedStatus(status: string): boolean {
  return status === 'interrupted';
}

/** Statuses a chat is owed a reply for: every end, and every pause (its question). */
export const REPLY_OWED_STATUSES: readonly string[] = [...TERMINAL_STATUSES, ...PAUSED_STATUSES];

/** True for a turn that ended as completed. */
export function isCompletedStatus(status: string): boolean {
  return status === 'completed';
}
