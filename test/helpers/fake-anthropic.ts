/**
 * A scripted Anthropic Messages API server over real HTTP: `POST /v1/messages`
 * streamed as Anthropic does (message_start with usage, content_block_start /
 * delta / stop for text and for tool_use with input_json_delta, message_delta
 * with stop_reason and usage, message_stop), plus a non-streaming JSON answer.
 * Same scripting idea as fake-openai.ts.
 */
import type { ServerResponse } from 'node:http';
import {
  contentText,
  listenHttpFake,
  openSse,
  pathOf,
  sendJson,
  splitText,
  type FakeToolCall,
  type RecordedRequest,
} from './fake-openai.js';

/** Usage as Anthropic reports it. */
export interface FakeAnthropicUsage {
  input_tokens: number;
  output_tokens: number;
}

/** What the fake answers to one messages request. */
export type FakeAnthropicReply =
  /** Text streamed in `chunks` text_delta events (default 3); `stall` sends them and never finishes. */
  | { content: string; usage?: FakeAnthropicUsage; chunks?: number; stall?: boolean }
  /** tool_use blocks (after an optional text block), inputs split over input_json_delta events. */
  | { tool_calls: FakeToolCall[]; content?: string; usage?: FakeAnthropicUsage }
  /** An HTTP error with an Anthropic-style error body (or `body` as given). */
  | { status: number; body?: unknown }
  /** Never answers. */
  | { hang: true }
  /** Answers `then` after `delayMs`. */
  | { delayMs: number; then: FakeAnthropicReply }
  /** Sends `raw` verbatim as the response body. */
  | { raw: string; status?: number; contentType?: string }
  /** Computed from the request body. */
  | ((body: FakeAnthropicBody) => FakeAnthropicReply);

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

/** A running fake Anthropic server. */
export interface FakeAnthropic {
  /** e.g. `http://127.0.0.1:PORT` — the SDK appends `/v1/messages`, so use this as `base_url`. */
  url: string;
  requests: Array<RecordedRequest<FakeAnthropicBody>>;
  /** Queues scripted replies, consumed in order; when the queue is empty the default reply is used. */
  enqueue(...replies: FakeAnthropicReply[]): void;
  /** Replaces the default reply (initially `fake: <last user text>` with usage {10, 5}). */
  setDefault(reply: FakeAnthropicReply): void;
  close(): Promise<void>;
}

const DEFAULT_USAGE: FakeAnthropicUsage = { input_tokens: 10, output_tokens: 5 };

const ERROR_TYPES: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  403: 'permission_error',
  404: 'not_found_error',
  429: 'rate_limit_error',
  529: 'overloaded_error',
};

function defaultReply(body: FakeAnthropicBody): FakeAnthropicReply {
  const users = (body.messages ?? []).filter((m) => m.role === 'user');
  const last = users[users.length - 1]?.content;
  const text = Array.isArray(last) ? contentText(last.filter((b) => b.type === 'text')) : contentText(last);
  return { content: `fake: ${text}`, usage: DEFAULT_USAGE };
}

/** Starts a fake Anthropic server on 127.0.0.1 with an ephemeral port. */
export async function startFakeAnthropic(): Promise<FakeAnthropic> {
  const queue: FakeAnthropicReply[] = [];
  let fallback: FakeAnthropicReply = defaultReply;
  let counter = 0;
  const requests: Array<RecordedRequest<FakeAnthropicBody>> = [];

  const http = await listenHttpFake((req, res, raw) => {
    const path = pathOf(req);
    const body = (typeof raw === 'object' && raw !== null ? raw : {}) as FakeAnthropicBody;
    requests.push({ method: req.method ?? 'GET', path, body, headers: req.headers });
    if (req.method === 'POST' && path === '/v1/messages') {
      play(res, body, queue.shift() ?? fallback);
    } else {
      sendJson(res, 404, { type: 'error', error: { type: 'not_found_error', message: `no route ${path}` } });
    }
  });

  function play(res: ServerResponse, body: FakeAnthropicBody, reply: FakeAnthropicReply): void {
    if (typeof reply === 'function') {
      play(res, body, reply(body));
      return;
    }
    if ('hang' in reply) return;
    if ('delayMs' in reply) {
      http.later(reply.delayMs, () => play(res, body, reply.then));
      return;
    }
    if ('raw' in reply) {
      res.writeHead(reply.status ?? 200, { 'content-type': reply.contentType ?? 'text/event-stream' });
      res.end(reply.raw);
      return;
    }
    if ('status' in reply) {
      sendJson(
        res,
        reply.status,
        reply.body ?? {
          type: 'error',
          error: { type: ERROR_TYPES[reply.status] ?? 'api_error', message: `fake error ${reply.status}` },
        },
      );
      return;
    }
    counter++;
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

    const write = (type: string, data: Record<string, unknown>): void => {
      if (!res.destroyed) res.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
    };
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

  return {
    url: http.origin,
    requests,
    enqueue: (...replies) => queue.push(...replies),
    setDefault: (reply) => {
      fallback = reply;
    },
    close: () => http.close(),
  };
}
