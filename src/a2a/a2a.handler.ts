import type {
  AgentCard,
  CancelTaskRequest,
  GetTaskRequest,
  Message,
  SendMessageRequest,
  StreamResponse,
  SubscribeToTaskRequest,
  Task,
  TaskState,
} from '@a2a-js/sdk';
import {
  PushNotificationNotSupportedError,
  RequestMalformedError,
  TaskNotCancelableError,
  TaskNotFoundError,
  UnsupportedOperationError,
} from '@a2a-js/sdk/errors';
import type { A2ARequestHandler } from '@a2a-js/sdk/server';
import type { AgentRoster } from '../agents/index.js';
import { ApiError, classifyError } from '../http/errors.js';
import type { Principal } from '../http/route.js';
import { MAX_KEY_LENGTH, resolveKey } from '../idempotency/index.js';
import type { IdGenerator } from '../lib/ids.js';
import type { Logger } from '../lib/logger.js';
import { ownerScope, type SessionService } from '../sessions/index.js';
import {
  isRunningStatus,
  isTerminalStatus,
  pauseOf,
  sessionKeyFor,
  unnamedChatId,
  type MessagePath,
  type TurnRecord,
  type TurnStep,
} from '../turns/index.js';
import {
  agentMessage,
  contextIdOf,
  endNote,
  pauseNote,
  replyEvent,
  STATE,
  stateOf,
  statusEvent,
  taskEvent,
  taskOf,
} from './a2a.tasks.js';

/** The platform and channel of the sessions A2A messages create (`gateway:a2a:<context id>`), and the turns' source. */
export const A2A_PLATFORM = 'a2a';

/** The reason a canceled task's turn is interrupted with (its `termination_reason`). */
export const CANCELED_REASON = 'canceled';

/** What the request handler uses. */
export interface A2AHandlerDeps {
  messages: Pick<MessagePath, 'submit' | 'waitFor' | 'turn' | 'follow' | 'interrupt'>;
  sessions: Pick<SessionService, 'require'>;
  agents: Pick<AgentRoster, 'mayUse'>;
  ids: IdGenerator;
  logger: Logger;
  /** How long a blocking send waits for the turn's outcome before answering the task as it stands. */
  replyTimeoutMs: number;
}

/** One A2A request: who calls, for which agent, its headers (traceparent, Last-Event-ID) and its end. */
export interface A2ACall {
  principal: Principal;
  agent: string;
  headers: Record<string, string | string[] | undefined>;
  signal: AbortSignal;
  card: AgentCard;
  requestId: string;
  /** Told the bytes a stream's follower holds while its client catches up (`FollowOptions.onHeld`). */
  onHeld?: (bytes: number) => void;
}

const CONTROL = /\p{Cc}/u;

/** The text of a user message: its text parts joined; other parts are refused. */
function textOf(message: Message | undefined): string {
  if (!message) throw new RequestMalformedError('params.message is required');
  const texts: string[] = [];
  for (const part of message.parts) {
    if (part.content?.$case !== 'text') throw new RequestMalformedError('only text parts are accepted');
    texts.push(part.content.value);
  }
  const text = texts.join('\n');
  if (text.trim() === '') throw new RequestMalformedError('the message has no text');
  if (text.length > 100_000) throw new RequestMalformedError('the message is longer than 100000 characters');
  return text;
}

/** A context id the caller names: 1..200 characters, no control characters. */
function checkedContextId(contextId: string): string {
  if (contextId.length > 200 || CONTROL.test(contextId)) {
    throw new RequestMalformedError('contextId must be 1..200 characters without control characters');
  }
  return contextId;
}

/** `Last-Event-ID` of a resubscribe: the last turn event number the client saw (0: replay everything). */
function lastEventIdOf(headers: A2ACall['headers']): number {
  const raw = headers['last-event-id'];
  const value = Array.isArray(raw) ? raw[0] : raw;
  if (value === undefined || value.trim() === '') return 0;
  if (!/^\d{1,15}$/.test(value.trim())) throw new RequestMalformedError('Last-Event-ID must be a turn event number');
  return Number(value.trim());
}

/**
 * The A2A request handler of the gateway (DECISIONS §22): the SDK's JSON-RPC transport handler parses and answers
 * the protocol, and every method lands here, on the message path's door. A task is a turn (task id = event id),
 * its context a session of the caller (`gateway:a2a[@principal]:<contextId>`), a message's `messageId` its
 * idempotency key. Nothing is kept in memory: every answer is read from the ledger and the turn's stored events,
 * so any gateway sharing the database answers any request. Push notifications and listing are not offered.
 */
export class GatehouseA2AHandler implements A2ARequestHandler {
  constructor(
    private readonly deps: A2AHandlerDeps,
    private readonly call: A2ACall,
  ) {}

  getAgentCard(): Promise<AgentCard> {
    return Promise.resolve(this.call.card);
  }

  getAuthenticatedExtendedAgentCard(): Promise<AgentCard> {
    return Promise.resolve(this.call.card);
  }

  async sendMessage(params: SendMessageRequest): Promise<Message | Task> {
    const eventId = await this.submit(params, true);
    const { deps } = this;
    if (params.configuration?.returnImmediately) return taskOf(await this.ledger(eventId));
    const turn = await guarded(deps, this.call, () =>
      deps.messages.waitFor(eventId, deps.replyTimeoutMs, this.call.signal),
    );
    // The wait ran out (or the client left): the task as it stands; the turn goes on and GetTask tells its end.
    return taskOf(turn ?? (await this.ledger(eventId)));
  }

  async *sendMessageStream(params: SendMessageRequest): AsyncGenerator<StreamResponse, void, undefined> {
    const eventId = await this.submit(params, false);
    const turn = await this.ledger(eventId);
    // The stream tells the turn from its start (its events from the first), so it opens with the task as it was
    // accepted, whatever the ledger shows by now (a keyed retry of an ended turn replays it all the same).
    const accepted = taskOf(turn, { artifacts: false });
    yield taskEvent({
      ...accepted,
      status: { state: STATE.submitted, message: undefined, timestamp: turn.acceptedAt },
    });
    yield* this.stream(turn, 0);
  }

  async getTask(params: GetTaskRequest): Promise<Task> {
    return taskOf(await this.owned(params.id));
  }

  listTasks(): Promise<never> {
    return Promise.reject(new UnsupportedOperationError('ListTasks is not offered: GET /api/v1/sessions lists them'));
  }

  async cancelTask(params: CancelTaskRequest): Promise<Task> {
    const turn = await this.owned(params.id);
    if (isTerminalStatus(turn.status)) {
      throw new TaskNotCancelableError(`task ${turn.eventId} has ended (${turn.status})`);
    }
    if (!isRunningStatus(turn.status)) {
      throw new TaskNotCancelableError(
        `task ${turn.eventId} is ${turn.status}: only a working task can be canceled` +
          (pauseOf(turn.status) === 'approval' ? ' (deny its tool call to end it)' : ''),
      );
    }
    const { messages } = this.deps;
    messages.interrupt(turn.eventId, CANCELED_REASON);
    const ended = await guarded(this.deps, this.call, () =>
      messages.waitFor(turn.eventId, this.deps.replyTimeoutMs, this.call.signal, 'terminal'),
    );
    return taskOf(ended ?? (await this.ledger(turn.eventId)));
  }

  async *resubscribe(params: SubscribeToTaskRequest): AsyncGenerator<StreamResponse, void, undefined> {
    const fromSeq = lastEventIdOf(this.call.headers);
    const turn = await this.owned(params.id);
    // The task as it stands first (the protocol's rule), without its reply: the events replayed after it carry the
    // reply (all of it from the start, the rest of it after `Last-Event-ID`).
    yield taskEvent(taskOf(turn, { artifacts: false }));
    yield* this.stream(turn, fromSeq);
  }

  createTaskPushNotificationConfig(): Promise<never> {
    return Promise.reject(new PushNotificationNotSupportedError());
  }

  getTaskPushNotificationConfig(): Promise<never> {
    return Promise.reject(new PushNotificationNotSupportedError());
  }

  listTaskPushNotificationConfigs(): Promise<never> {
    return Promise.reject(new PushNotificationNotSupportedError());
  }

  deleteTaskPushNotificationConfig(): Promise<never> {
    return Promise.reject(new PushNotificationNotSupportedError());
  }

  /**
   * One message through the door: into the caller's session of `contextId` (a new one when absent; a keyed
   * message's is derived from its key, so a retry finds it again), keyed by `messageId` in the principal's scope.
   * A message naming a task answers that task's question (its session's next message resumes it, DECISIONS §5).
   */
  private async submit(params: SendMessageRequest, wait: boolean): Promise<string> {
    const { call, deps } = this;
    const message = params.message;
    const text = textOf(message);
    if (!message?.messageId) throw new RequestMalformedError('params.message.messageId is required');
    if (message.messageId.length > MAX_KEY_LENGTH || CONTROL.test(message.messageId)) {
      throw new RequestMalformedError(`messageId must be 1..${MAX_KEY_LENGTH} characters without control characters`);
    }
    let contextId = message.contextId ? checkedContextId(message.contextId) : null;
    if (message.taskId) {
      const task = await this.owned(message.taskId);
      if (pauseOf(task.status) !== 'clarification') {
        throw new RequestMalformedError(
          `task ${task.eventId} is ${task.status}: only a task whose agent asked a question takes a reply; ` +
            'send a new message (without taskId) in its context to go on',
        );
      }
      const own = contextIdOf(task);
      if (contextId !== null && contextId !== own) throw new RequestMalformedError('contextId is not the task’s');
      contextId = own;
    }
    const principal = call.principal;
    const key = await guarded(deps, call, () => Promise.resolve(resolveKey({ field: message.messageId })));
    const chat = contextId ?? unnamedChatId(principal, key, deps.ids);
    const submitted = await guarded(deps, call, () =>
      deps.messages.submit({
        sessionKey: sessionKeyFor(A2A_PLATFORM, chat, principal),
        text,
        platform: A2A_PLATFORM,
        userId: chat,
        chatId: chat,
        channel: A2A_PLATFORM,
        source: 'a2a',
        principal,
        // A conversation under a token, as the other protocol entry points': no platform user speaks.
        identity: 'skip',
        idempotency: { scope: 'principal', field: key },
        wait,
        outcomeOnly: wait,
        trace: call.headers, // traceparent, tracestate of the A2A call (DECISIONS §21)
        agent: call.agent,
      }),
    );
    return submitted.eventId;
  }

  /** The caller's turn `id`: another principal's is as absent as an unknown one (DECISIONS §18). */
  private async owned(id: string): Promise<TurnRecord> {
    if (!id || id.length > 200) throw new TaskNotFoundError(`task ${id} not found`);
    const { deps, call } = this;
    const turn = await guarded(deps, call, () => deps.messages.turn(id));
    if (!turn) throw new TaskNotFoundError(`task ${id} not found`);
    const scope = ownerScope(call.principal);
    if (scope !== null) {
      try {
        await deps.sessions.require(turn.sessionKey, scope);
      } catch (err) {
        if (err instanceof ApiError && err.code === 'NOT_FOUND') throw new TaskNotFoundError(`task ${id} not found`);
        throw translate(deps, call, err);
      }
    }
    return turn;
  }

  private async ledger(eventId: string): Promise<TurnRecord> {
    const turn = await guarded(this.deps, this.call, () => this.deps.messages.turn(eventId));
    if (!turn) throw new TaskNotFoundError(`task ${eventId} not found`);
    return turn;
  }

  /**
   * A turn's events after `fromSeq` as A2A events, replayed then live, to its end or pause: `running` → a working
   * status, deltas → pieces of the artifact `reply`, tool calls and results → working statuses naming them, a
   * pause → input-required (the stream ends), the end → the artifact's last chunk and the final status. Every
   * event carries its turn event number in `metadata.gatehouse.seq` (and the SSE `id:`): a resubscribe with
   * `Last-Event-ID` set to it goes on after it.
   */
  private async *stream(start: TurnRecord, fromSeq: number): AsyncGenerator<StreamResponse, void, undefined> {
    const ids = { taskId: start.eventId, contextId: contextIdOf(start) };
    const { deps, call } = this;
    let replying = false;
    const steps = deps.messages.follow(start.eventId, {
      fromSeq,
      endOnPause: true,
      signal: call.signal,
      ...(call.onHeld ? { onHeld: call.onHeld } : {}),
    });
    try {
      for await (const step of steps) {
        const event = await this.eventOf(ids, step, replying);
        if (step.kind === 'delta' && step.content !== '') replying = true;
        if (event) yield* event;
        if (step.kind === 'paused' || step.kind === 'ended' || step.kind === 'timeout') return;
      }
    } catch (err) {
      throw translate(deps, call, err);
    }
  }

  private async eventOf(
    ids: { taskId: string; contextId: string },
    step: TurnStep,
    replying: boolean,
  ): Promise<StreamResponse[] | null> {
    const at = (state: TaskState, seq: number | null, extra?: Record<string, unknown>, note?: string) =>
      statusEvent(
        ids,
        {
          state,
          message: note === undefined ? undefined : agentMessage(ids.taskId, ids.contextId, note, `${seq ?? 'end'}`),
          timestamp: new Date().toISOString(),
        },
        seq,
        extra,
      );
    switch (step.kind) {
      case 'delta':
        if (step.content === '') return null;
        return [replyEvent(ids, step.content, { append: replying, lastChunk: false, seq: step.seq })];
      case 'tool_call':
        return [at(STATE.working, step.seq, { tool_call: { id: step.id, name: step.name } })];
      case 'tool_result':
        return [at(STATE.working, step.seq, { tool_result: { id: step.id, name: step.name } })];
      case 'status':
        return [at(stateOf(step.status), step.seq)];
      case 'paused': {
        const turn = await this.ledger(ids.taskId);
        return [
          at(STATE.inputRequired, step.seq, { status: step.status }, pauseNote({ ...turn, status: step.status })),
        ];
      }
      case 'ended': {
        const turn = await this.ledger(ids.taskId);
        const note = endNote(turn, step.error);
        const closing = replying ? [replyEvent(ids, '', { append: true, lastChunk: true, seq: null })] : [];
        // A reply that came without deltas (a command's answer) is sent whole.
        const whole =
          !replying && turn.response && stateOf(step.status) === STATE.completed
            ? [replyEvent(ids, turn.response, { append: false, lastChunk: true, seq: null })]
            : [];
        return [...closing, ...whole, at(stateOf(step.status), step.seq, { status: step.status }, note ?? undefined)];
      }
      case 'timeout':
        return null;
    }
  }
}

/** Runs a call on the door, its errors in the protocol's terms. */
async function guarded<T>(deps: A2AHandlerDeps, call: A2ACall, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (err) {
    throw translate(deps, call, err);
  }
}

/**
 * An error of the gateway as the protocol's (DECISIONS §3, §22): a bad request or an idempotency conflict →
 * invalid params; another principal's session → task not found; a refused agent → unsupported operation; the
 * rest (limits, the store, the provider) keeps its message and code in an error the SDK answers as an internal
 * error. A cause the client must not see is logged and answered as "internal error".
 */
function translate(deps: A2AHandlerDeps, call: A2ACall, err: unknown): Error {
  if (err instanceof Error && isProtocolError(err)) return err;
  const { error, log } = classifyError(err);
  if (log !== 'none') deps.logger[log]({ source: 'a2a', err, request_id: call.requestId }, 'A2A request failed');
  if (error.code === 'BAD_REQUEST' || error.code === 'CONFLICT') return new RequestMalformedError(error.message);
  if (error.code === 'NOT_FOUND') return new TaskNotFoundError(error.message);
  if (error.code === 'FORBIDDEN') return new UnsupportedOperationError(error.message);
  return new Error(`${error.code}: ${error.message}`);
}

const PROTOCOL_ERRORS = new Set([
  'TaskNotFoundError',
  'TaskNotCancelableError',
  'PushNotificationNotSupportedError',
  'UnsupportedOperationError',
  'RequestMalformedError',
]);

function isProtocolError(err: Error): boolean {
  return PROTOCOL_ERRORS.has(err.name);
}
