/**
 * A scripted Anthropic Messages API server over real HTTP: `POST /v1/messages`
 * streamed as Anthropic does (message_start with usage, content_block_start /
 * delta / stop for text and for tool_use with input_json_delta, message_delta
 * with stop_reason and usage, message_stop), plus a non-streaming JSON answer.
 * Built on the shared fake-provider core, scripted like fake-openai.ts: an
 * unscripted call is answered 500 "unscripted call" and fails `verify()`.
 */
import type { ServerResponse } from 'node:http';
import {
  openSse,
  playReply,
  Script,
  scriptedFake,
  sendJson,
  splitText,
  startFakeProvider,
  writeSse,
  type FakeProvider,
  type ScriptedFake,
  type ScriptedReply,
} from '../../bench/fake-provider-core.js';
import { contentText, type FakeToolCall } from './fake-openai.js';

/** Usage as Anthropic reports it. */
export interface FakeAnthropicUsage {
  input_tokens: number;
  output_tokens: number;
}

/** A model answer of the messages endpoint. */
export type FakeAnthropicAnswer =
  /** Text streamed in `chunks` text_delta events (default 3); `stall` sends them and never finishes. */
  | { content: string; usage?: FakeAnthropicUsage; chunks?: number; stall?: boolean }
  /** tool_use blocks (after an optional text block), inputs split over input_json_delta events. */
  | { tool_calls: FakeToolCall[]; content?: string; usage?: FakeAnthropicUsage };

/** What the fake answers to one messages request: an answer or a control form (error, hang, delay, gate, raw, computed). */
export type FakeAnthropicReply = ScriptedReply<FakeAnthropicAnswer, FakeAnthropicBody>;

/** A content block of a request message, loosely typed. */
export interface FakeAnthropicBlock {
  type: string;
  text?: string;
  id?: string;
  name?: string;
  input?: unknown;
  tool_use_id?: string;
  content?: unknown;
  [key: string]: unknown;
}

/** The messages request body as the fake sees it. */
export interface FakeAnthropicBody {
  model?: string;
  max_tokens?: number;
  stream?: boolean;
  system?: string | Array<{ type: string; text: string }>;
  messages?: Array<{ role: string; content: string | FakeAnthropicBlock[] }>;
  tools?: Array<{ name: string; description?: string; input_schema?: Record<string, unknown> }>;
  [key: string]: unknown;
}

/**
 * A running fake Anthropic server. Its `url` is `http://127.0.0.1:PORT`: the
 * SDK appends `/v1/messages`, so use it as `base_url`.
 */
export type FakeAnthropic = ScriptedFake<FakeAnthropicBody, FakeAnthropicReply>;

const DEFAULT_USAGE: FakeAnthropicUsage = { input_tokens: 10, output_tokens: 5 };

const ERROR_TYPES: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  403: 'permission_error',
  404: 'not_found_error',
  429: 'rate_limit_error',
  529: 'overloaded_error',
};

/** A reply that echoes the request: `fake: <last user text>`, usage {10, 5}. */
export const echoAnthropicReply: FakeAnthropicReply = (body) => {
  const users = (body.messages ?? []).filter((m) => m.role === 'user');
  const last = users[users.length - 1]?.content;
  const text = Array.isArray(last) ? contentText(last.filter((b) => b.type === 'text')) : contentText(last);
  return { content: `fake: ${text}`, usage: DEFAULT_USAGE };
};

/** Starts a strict fake Anthropic server on 127.0.0.1 with an ephemeral port: nothing answers until scripted. */
export async function startFakeAnthropic(): Promise<FakeAnthropic> {
  const script = new Script<FakeAnthropicReply>();
  let counter = 0;
  const core: FakeProvider<FakeAnthropicBody> = await startFakeProvider<FakeAnthropicBody>({
    name: 'fake Anthropic',
    route({ method, path, body, res }): boolean {
      if (method !== 'POST' || path !== '/v1/messages') return false;
      return playReply(core, res, body, script.next(), {
        errorBody: (status) => ({
          type: 'error',
          error: { type: ERROR_TYPES[status] ?? 'api_error', message: `fake error ${status}` },
        }),
        answer(res, body, reply) {
          counter++;
          writeMessage(res, body, reply, counter);
        },
      });
    },
  });
  return scriptedFake(core, script, core.origin);
}

/** Writes one message: JSON, or streamed as Anthropic streams it. */
function writeMessage(res: ServerResponse, body: FakeAnthropicBody, reply: FakeAnthropicAnswer, counter: number): void {
  const id = `msg_fake_${counter}`;
  const model = body.model ?? 'fake-claude';
  const usage = reply.usage ?? DEFAULT_USAGE;
  const toolCalls =
    'tool_calls' in reply
      ? reply.tool_calls.map((call, i) => ({
          id: call.id ?? `toolu_fake_${counter}_${i}`,
          name: call.name,
          json: typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments),
        }))
      : [];
  const text = reply.content ?? '';
  const stopReason = toolCalls.length > 0 ? 'tool_use' : 'end_turn';

  if (body.stream !== true) {
    sendJson(res, 200, {
      id,
      type: 'message',
      role: 'assistant',
      model,
      content: [
        ...(text ? [{ type: 'text', text }] : []),
        ...toolCalls.map((c) => ({ type: 'tool_use', id: c.id, name: c.name, input: JSON.parse(c.json) as unknown })),
      ],
      stop_reason: stopReason,
      stop_sequence: null,
      usage,
    });
    return;
  }

  const write = (type: string, data: Record<string, unknown>): void => writeSse(res, { type, ...data }, type);
  openSse(res);
  write('message_start', {
    message: {
      id,
      type: 'message',
      role: 'assistant',
      model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: { input_tokens: usage.input_tokens, output_tokens: 1 },
    },
  });
  write('ping', {});
  let index = 0;
  if (text) {
    write('content_block_start', { index, content_block: { type: 'text', text: '' } });
    const chunks = 'chunks' in reply && reply.chunks !== undefined ? reply.chunks : 3;
    for (const piece of splitText(text, chunks)) {
      write('content_block_delta', { index, delta: { type: 'text_delta', text: piece } });
    }
    if ('stall' in reply && reply.stall) return;
    write('content_block_stop', { index });
    index++;
  }
  for (const call of toolCalls) {
    write('content_block_start', {
      index,
      content_block: { type: 'tool_use', id: call.id, name: call.name, input: {} },
    });
    write('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: '' } });
    for (const piece of splitText(call.json, 3)) {
      write('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: piece } });
    }
    write('content_block_stop', { index });
    index++;
  }
  write('message_delta', {
    delta: { stop_reason: stopReason, stop_sequence: null },
    usage: { output_tokens: usage.output_tokens },
  });
  write('message_stop', {});
  res.end();
}
