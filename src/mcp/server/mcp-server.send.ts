import { z } from 'zod';
import type { AgentRoster } from '../../agents/index.js';
import { ApiError } from '../../http/errors.js';
import { MAX_KEY_LENGTH, resolveKey } from '../../idempotency/index.js';
import type { IdGenerator } from '../../lib/ids.js';
import {
  endedTurn,
  isInterruptedStatus,
  outcomeApiError,
  pauseOf,
  sessionKeyFor,
  unnamedChatId,
  type MessagePath,
  type TurnRecord,
} from '../../turns/index.js';
import { defineTool, type McpTool } from './mcp-server.tool.js';

/** The platform and channel of the sessions `send_message` creates (`gateway:mcp:<chat id>`, DECISIONS §19). */
export const MCP_PLATFORM = 'mcp';

/** The longest wait a call may ask for, as POST /message's `timeout_seconds`. */
const MAX_TIMEOUT_SECONDS = 600;

/**
 * The longest wait of a call that names none. MCP clients commonly give up on a request after 60 s (the official
 * SDK's default), so a call answers the event id before that and the client polls `get_turn`.
 */
const DEFAULT_WAIT_CAP_MS = 50_000;

/** What `send_message` uses. */
export interface SendToolDeps {
  messages: Pick<MessagePath, 'submit' | 'waitFor' | 'turn'>;
  agents: Pick<AgentRoster, 'usableBy'>;
  ids: IdGenerator;
  /** The gateway's reply timeout (as POST /sessions/{id}/messages): a call's default wait, capped. */
  replyTimeoutMs: number;
}

const CONTROL = /\p{Cc}/u;

/** A chat id the caller names: as the OpenAI-compatible API's, never starting with `~` (the gateway's own). */
const chatId = z
  .string()
  .min(1)
  .max(200)
  .refine((value) => !CONTROL.test(value), 'must not contain control characters')
  .refine((value) => !value.startsWith('~'), 'must not start with "~"');

const sendOutput = z.object({
  event_id: z.string(),
  session_id: z.string(),
  chat_id: z.string(),
  status: z.string(),
  reply: z.string().nullable(),
  note: z.string().nullable(),
  replayed: z.boolean(),
});

type SendAnswer = z.output<typeof sendOutput>;

/** What a turn answers: its reply, and a note when the gateway has something to say about it (a pause, an end). */
function answerOf(turn: TurnRecord): Pick<SendAnswer, 'status' | 'reply' | 'note'> {
  const failure = outcomeApiError(turn, { event_id: turn.eventId });
  if (failure) {
    throw new ApiError(failure.code, `the turn failed: ${failure.message} (event ${turn.eventId})`, failure.details);
  }
  const id = turn.eventId;
  const answer = (note: string | null) => ({ status: turn.status, reply: turn.response, note });
  const ended = endedTurn(turn);
  if (ended?.completed) return answer(null);
  if (ended && isInterruptedStatus(turn.status)) return answer(`The turn was interrupted (${ended.reason}).`);
  if (ended) return answer(`The agent stopped before it finished (${ended.reason}); the reply may be partial.`);
  const pause = pauseOf(turn.status);
  if (pause === 'approval') {
    const tool = turn.currentTool ? ` "${turn.currentTool}"` : '';
    return answer(
      `Waiting for an administrator to approve the tool call${tool}. Once it is approved or denied the turn ` +
        `goes on: call get_turn with event_id ${id} for the reply.`,
    );
  }
  if (pause === 'clarification') {
    return answer('The agent asks a question: answer it with send_message in the same chat_id.');
  }
  return answer(`The turn is ${turn.status}: call get_turn with event_id ${id} for the reply.`);
}

/**
 * `send_message` (DECISIONS §19): one message through the message path's door, as the OpenAI-compatible API
 * sends one (`submit`, then `waitFor`), into the session `gateway:mcp:<chat_id>` of the caller. Without a
 * `chat_id` it starts a conversation, one a keyed retry finds again; the key is the principal's (§6, §18), so a
 * replay answers the same event with no second model call. A wait that runs out answers the event id and the
 * turn's status, not an error: the turn goes on and `get_turn` tells its end.
 */
export function sendMessageTool(deps: SendToolDeps): McpTool {
  const defaultWaitMs = Math.min(deps.replyTimeoutMs, DEFAULT_WAIT_CAP_MS);
  return defineTool({
    name: 'send_message',
    title: 'Send a message to an agent',
    description:
      'Sends a message to an agent of the gateway and waits for its reply. Continue a conversation by passing the ' +
      'chat_id an earlier answer gave (or one of your own); without it a new conversation starts. Give an ' +
      'idempotency_key to make a retry safe: the same key and text answer the same turn, without running it again. ' +
      'If the reply takes longer than timeout_seconds the answer carries the event_id and status so far; call ' +
      'get_turn with it later.',
    readOnly: false,
    input: z.object({
      text: z
        .string()
        .min(1)
        .max(100_000)
        .refine((text) => text.trim() !== '', 'must not be blank')
        .describe('The message'),
      chat_id: chatId.optional().describe('The conversation to continue (chat_id of an earlier answer, or your own)'),
      agent: z
        .string()
        .min(1)
        .max(64)
        .optional()
        .describe('The agent for a new conversation (list_agents); ignored when the conversation exists'),
      idempotency_key: z
        .string()
        .min(1)
        .max(MAX_KEY_LENGTH)
        .optional()
        .describe('Makes a retry safe: the same key and text answer the same turn'),
      timeout_seconds: z
        .number()
        .int()
        .min(1)
        .max(MAX_TIMEOUT_SECONDS)
        .optional()
        .describe(`How long to wait for the reply: 1..${MAX_TIMEOUT_SECONDS} s (default ${defaultWaitMs / 1000})`),
    }),
    output: sendOutput,
    run: async (args, { principal, signal, headers }) => {
      if (args.agent !== undefined && !deps.agents.usableBy(principal).includes(args.agent)) {
        throw new ApiError(
          'NOT_FOUND',
          `no agent "${args.agent}" for this token: list_agents names the ones it may use`,
        );
      }
      const key = resolveKey({ field: args.idempotency_key });
      const chat = args.chat_id ?? unnamedChatId(principal, key, deps.ids);
      const submitted = await deps.messages.submit({
        sessionKey: sessionKeyFor(MCP_PLATFORM, chat, principal),
        text: args.text,
        platform: MCP_PLATFORM,
        userId: chat,
        chatId: chat,
        channel: MCP_PLATFORM,
        source: 'mcp',
        principal,
        // A conversation under a token, as the OpenAI-compatible API's: no platform user speaks.
        identity: 'skip',
        idempotency: { scope: 'principal', field: key },
        wait: true,
        outcomeOnly: true,
        trace: headers, // traceparent, tracestate of the /mcp request (DECISIONS §21)
        ...(args.agent !== undefined ? { agent: args.agent } : {}),
      });
      const { eventId, sessionKey } = submitted;
      const waitMs = args.timeout_seconds === undefined ? defaultWaitMs : args.timeout_seconds * 1000;
      const base = { event_id: eventId, session_id: sessionKey, chat_id: chat, replayed: submitted.replay };
      const turn = await deps.messages.waitFor(eventId, waitMs, signal);
      if (turn) return { ...base, ...answerOf(turn) };
      // The wait ran out (or the client left); the turn may have reached its outcome since.
      const now = await deps.messages.turn(eventId);
      if (now && (endedTurn(now) || pauseOf(now.status))) return { ...base, ...answerOf(now) };
      return {
        ...base,
        status: now?.status ?? 'accepted',
        reply: null,
        note: `No reply within ${Math.round(waitMs / 1000)} s; the turn goes on: call get_turn with event_id ${eventId}.`,
      };
    },
  });
}
