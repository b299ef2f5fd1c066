import type { Message, Part, StreamResponse, Task, TaskState, TaskStatus } from '@a2a-js/sdk';
import {
  endedTurn,
  isCompletedStatus,
  isInterruptedStatus,
  isRunningStatus,
  isTerminalStatus,
  outcomeApiError,
  pauseOf,
  type InboundPayload,
  type StepError,
  type TurnRecord,
} from '../turns/index.js';

/**
 * The protocol's task states (A2A 1.0, `lf.a2a.v1.TaskState`), as numbers: the SDK's enum is a runtime value of
 * a library loaded only on the first A2A request (ADR 0019), so its values are repeated here.
 */
export const STATE = {
  submitted: 1 as TaskState,
  working: 2 as TaskState,
  completed: 3 as TaskState,
  failed: 4 as TaskState,
  canceled: 5 as TaskState,
  inputRequired: 6 as TaskState,
} as const;

/** The protocol's `ROLE_AGENT`. */
const ROLE_AGENT = 2;

/** The id of the one artifact a task has: the agent's reply. */
export const REPLY_ARTIFACT = 'reply';

/** A text part. */
export function textPart(text: string): Part {
  return { content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: 'text/plain' };
}

/** A message of the agent about a task (its question, a pause's note, why it failed or was canceled). */
export function agentMessage(taskId: string, contextId: string, text: string, suffix: string): Message {
  return {
    messageId: `${taskId}:${suffix}`,
    contextId,
    taskId,
    role: ROLE_AGENT,
    parts: [textPart(text)],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  };
}

/** The task state of a turn status (DECISIONS §22; docs/adr/0042-a2a.md). */
export function stateOf(status: string): TaskState {
  if (pauseOf(status)) return STATE.inputRequired;
  if (isCompletedStatus(status)) return STATE.completed;
  if (isInterruptedStatus(status)) return STATE.canceled;
  if (isRunningStatus(status)) return STATE.working;
  // Failed, and incomplete (the agent stopped short of a reply: a step limit, a budget); else still accepted.
  return isTerminalStatus(status) ? STATE.failed : STATE.submitted;
}

/** The context id of a turn: the chat id of its session, as the message path stored it. */
export function contextIdOf(turn: TurnRecord): string {
  const payload = turn.payload as Partial<InboundPayload> | null;
  return typeof payload?.chat_id === 'string' ? payload.chat_id : turn.sessionKey;
}

/** What the status message of a paused turn says: the agent's question, or what waits for an administrator. */
export function pauseNote(turn: Pick<TurnRecord, 'response' | 'currentTool' | 'eventId'> & { status: string }): string {
  if (pauseOf(turn.status) === 'clarification') return turn.response ?? 'Could you clarify?';
  const tool = turn.currentTool ? ` "${turn.currentTool}"` : '';
  return (
    `Waiting for an administrator to approve the tool call${tool} (POST /api/v1/turns/${turn.eventId}/approve ` +
    'or /deny); the task goes on once it is decided: subscribe to it again or get it.'
  );
}

/** The status message of an ended turn that did not complete: why it stopped (null when it completed). */
export function endNote(turn: TurnRecord, error: StepError | null): string | null {
  if (error) return `${error.code}: ${error.message}`;
  const failure = outcomeApiError(turn, {});
  if (failure) return `${failure.code}: ${failure.message}`;
  const ended = endedTurn(turn);
  if (!ended || ended.completed) return null;
  if (isInterruptedStatus(turn.status)) return `The task was canceled (${ended.reason}).`;
  return `The agent stopped before it finished (${ended.reason}); the reply may be partial.`;
}

/** The status of a task as the ledger shows its turn. */
export function statusOf(turn: TurnRecord): TaskStatus {
  const contextId = contextIdOf(turn);
  const state = stateOf(turn.status);
  let note: string | null = null;
  if (state === STATE.inputRequired) note = pauseNote(turn);
  else if (state === STATE.failed || state === STATE.canceled) note = endNote(turn, null);
  return {
    state,
    message: note === null ? undefined : agentMessage(turn.eventId, contextId, note, turn.status),
    timestamp: turn.updatedAt,
  };
}

/**
 * A turn as an A2A task (DECISIONS §22): id = the turn's event id, context = its session's chat id, the status
 * from the ledger, the reply (so far) as the artifact `reply`, and the session and ledger status in `metadata`.
 */
export function taskOf(turn: TurnRecord, options: { artifacts?: boolean } = {}): Task {
  const contextId = contextIdOf(turn);
  const reply = pauseOf(turn.status) === 'clarification' ? null : turn.response;
  const artifacts =
    options.artifacts !== false && reply
      ? [
          {
            artifactId: REPLY_ARTIFACT,
            name: 'reply',
            description: "The agent's reply",
            parts: [textPart(reply)],
            metadata: undefined,
            extensions: [],
          },
        ]
      : [];
  return {
    id: turn.eventId,
    contextId,
    status: statusOf(turn),
    artifacts,
    history: [],
    metadata: { gatehouse: { session_id: turn.sessionKey, status: turn.status } },
  };
}

/** A status-update event of a stream; `seq` is the turn event's number (`Last-Event-ID` of a resubscribe). */
export function statusEvent(
  ids: { taskId: string; contextId: string },
  status: TaskStatus,
  seq: number | null,
  extra: Record<string, unknown> = {},
): StreamResponse {
  return {
    payload: {
      $case: 'statusUpdate',
      value: { ...ids, status, metadata: { gatehouse: { ...(seq === null ? {} : { seq }), ...extra } } },
    },
  };
}

/** An artifact-update event: a piece of the reply (`append` after the first), or its last (empty) chunk. */
export function replyEvent(
  ids: { taskId: string; contextId: string },
  text: string,
  options: { append: boolean; lastChunk: boolean; seq: number | null },
): StreamResponse {
  return {
    payload: {
      $case: 'artifactUpdate',
      value: {
        ...ids,
        artifact: {
          artifactId: REPLY_ARTIFACT,
          name: 'reply',
          description: "The agent's reply",
          parts: [textPart(text)],
          metadata: undefined,
          extensions: [],
        },
        append: options.append,
        lastChunk: options.lastChunk,
        metadata: { gatehouse: options.seq === null ? {} : { seq: options.seq } },
      },
    },
  };
}

/** The first event of a stream: the task itself. */
export function taskEvent(task: Task): StreamResponse {
  return { payload: { $case: 'task', value: task } };
}
