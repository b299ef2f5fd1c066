/**
 * A scripted OpenAI-compatible server over real HTTP (no SDK stubbing), for
 * provider, agent and route tests: `POST /v1/chat/completions` (streaming SSE
 * exactly as OpenAI sends it, and plain JSON), `POST /v1/embeddings` and
 * `GET /v1/models`. Built on the shared fake-provider core
 * (bench/fake-provider-core.ts).
 *
 * Chat and embeddings each have a script: queued replies in order, then the
 * standing reply set by `always`. A call with nothing scripted is answered
 * HTTP 500 "unscripted call" and recorded; `verify()` fails the test then.
 * Every request is recorded.
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
  type ProviderWire,
  type ScriptedFake,
  type ScriptedReply,
} from '../../bench/fake-provider-core.js';

/** Usage as OpenAI reports it. */
export interface FakeUsage {
  prompt_tokens: number;
  completion_tokens: number;
}

/** A scripted tool call; `arguments` that are not a string are sent as their JSON text. */
export interface FakeToolCall {
  name: string;
  arguments: unknown;
  id?: string;
}

/** A model answer of the chat endpoint. */
export type FakeChatAnswer =
  /** Text, streamed in `chunks` deltas (default 3); `stall` sends the deltas and then never finishes. */
  | { content: string; usage?: FakeUsage; chunks?: number; stall?: boolean }
  /** Tool calls streamed as OpenAI does (id + name first, arguments split), finish_reason `tool_calls`. */
  | { tool_calls: FakeToolCall[]; content?: string; usage?: FakeUsage };

/** What the fake answers to one chat request: an answer or a control form (error, hang, delay, gate, raw, computed). */
export type FakeReply = ScriptedReply<FakeChatAnswer, FakeChatBody>;

/** What the fake answers to one embeddings request: `HASHED_EMBEDDINGS` or a control form. */
export type FakeEmbeddingReply = ScriptedReply<{ embed: 'hashed' }, FakeChatBody>;

/** Embeddings answered with `fakeEmbedding` of each input (the success reply of the embeddings endpoint). */
export const HASHED_EMBEDDINGS: FakeEmbeddingReply = { embed: 'hashed' };

/** The chat request body as the fake sees it (loosely typed: tests inspect it). */
export interface FakeChatBody {
  model?: string;
  stream?: boolean;
  stream_options?: { include_usage?: boolean };
  messages?: Array<{
    role: string;
    content?: string | null | Array<{ type: string; text?: string }>;
    tool_calls?: Array<{ id: string; type: string; function: { name: string; arguments: string } }>;
    tool_call_id?: string;
    name?: string;
  }>;
  tools?: Array<{
    type: string;
    function: { name: string; description?: string; parameters?: Record<string, unknown> };
  }>;
  input?: string | string[];
  encoding_format?: string;
  [key: string]: unknown;
}

/** A running fake OpenAI server; `enqueue` and `always` script the chat endpoint. */
export interface FakeOpenAI extends ScriptedFake<FakeChatBody, FakeReply> {
  /** e.g. `http://127.0.0.1:PORT/v1`: use as `base_url`. */
  url: string;
  /** Queues embeddings replies, consumed in order. */
  enqueueEmbeddings(...replies: FakeEmbeddingReply[]): void;
  /** Answers every embeddings call the queue does not cover with `reply` (e.g. `HASHED_EMBEDDINGS`). */
  alwaysEmbeddings(reply: FakeEmbeddingReply): void;
}

/** Dimension of the fake embedding vectors. */
export const FAKE_EMBEDDING_DIMENSIONS = 64;

const DEFAULT_USAGE: FakeUsage = { prompt_tokens: 10, completion_tokens: 5 };
const CREATED = 1_700_000_000;

/** Text of a message `content` that is either a string or an array of `{type: 'text', text}` parts. */
export function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return content
      .map((part: unknown) =>
        typeof part === 'object' && part !== null && typeof (part as { text?: unknown }).text === 'string'
          ? (part as { text: string }).text
          : '',
      )
      .join('');
  }
  return '';
}

/** The last user-role text of a chat request (the turn's own text, DECISIONS §5). */
export function lastUserText(body: FakeChatBody): string {
  const users = (body.messages ?? []).filter((m) => m.role === 'user');
  return contentText(users[users.length - 1]?.content);
}

/** Text of the last message with `role` in a chat request; null when there is none. */
export function lastOfRole(body: FakeChatBody, role: string): string | null {
  const last = (body.messages ?? []).filter((m) => m.role === role).at(-1);
  if (!last) return null;
  return typeof last.content === 'string' ? last.content : JSON.stringify(last.content ?? null);
}

/** Every text content of a chat request, in order (to check what the model saw). */
export function allContents(body: FakeChatBody): string[] {
  return (body.messages ?? []).map((m) => (typeof m.content === 'string' ? m.content : ''));
}

/** The chat-completion requests the fake received from index `from` on (embeddings and others left out). */
export function chatRequests(fake: FakeOpenAI, from = 0): FakeChatBody[] {
  return fake.requests
    .slice(from)
    .filter((r) => r.method === 'POST' && r.path === '/v1/chat/completions')
    .map((r) => r.body);
}

/** A chat reply that echoes the request: `fake: <last user text>`, usage {10, 5}. */
export const echoReply: FakeReply = (body) => ({ content: `fake: ${lastUserText(body)}`, usage: DEFAULT_USAGE });

/**
 * Deterministic embedding of `text`: lower-cased words hashed (FNV-1a) into
 * 64 buckets, counted and L2-normalised, so texts that share words are
 * similar. Text without words maps to the unit vector on bucket 0.
 */
export function fakeEmbedding(text: string): number[] {
  const vector = new Array<number>(FAKE_EMBEDDING_DIMENSIONS).fill(0);
  for (const word of text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []) {
    let hash = 0x811c9dc5;
    for (let i = 0; i < word.length; i++) {
      hash ^= word.charCodeAt(i);
      hash = Math.imul(hash, 0x01000193) >>> 0;
    }
    vector[hash % FAKE_EMBEDDING_DIMENSIONS]! += 1;
  }
  const norm = Math.sqrt(vector.reduce((sum, x) => sum + x * x, 0));
  if (norm === 0) {
    vector[0] = 1;
    return vector;
  }
  return vector.map((x) => x / norm);
}

const errorBody = (status: number): unknown => ({ error: { message: `fake error ${status}`, type: 'server_error' } });

/**
 * Starts a strict fake OpenAI server on 127.0.0.1 with an ephemeral port:
 * nothing answers until it is scripted (`enqueue`, `always`, and their
 * embeddings twins).
 */
export async function startFakeOpenAI(): Promise<FakeOpenAI> {
  const chat = new Script<FakeReply>();
  const embeddings = new Script<FakeEmbeddingReply>();
  let counter = 0;

  const chatWire: ProviderWire<FakeChatAnswer, FakeChatBody> = {
    errorBody,
    answer(res, body, reply) {
      counter++;
      writeChatCompletion(res, body, reply, counter);
    },
  };
  const embeddingsWire: ProviderWire<{ embed: 'hashed' }, FakeChatBody> = {
    errorBody,
    answer: writeEmbeddings,
  };

  const core: FakeProvider<FakeChatBody> = await startFakeProvider<FakeChatBody>({
    name: 'fake OpenAI',
    route({ method, path, body, res }): boolean {
      if (method === 'POST' && path === '/v1/chat/completions') {
        return playReply(core, res, body, chat.next(), chatWire);
      }
      if (method === 'POST' && path === '/v1/embeddings') {
        return playReply(core, res, body, embeddings.next(), embeddingsWire);
      }
      if (method === 'GET' && path === '/v1/models') {
        sendJson(res, 200, {
          object: 'list',
          data: [{ id: 'fake-model', object: 'model', created: CREATED, owned_by: 'fake' }],
        });
        return true;
      }
      return false;
    },
  });

  return {
    ...scriptedFake(core, chat, `${core.origin}/v1`),
    enqueueEmbeddings: (...replies) => embeddings.enqueue(...replies),
    alwaysEmbeddings: (reply) => embeddings.always(reply),
  };
}

/** Writes one chat completion: JSON, or streamed as OpenAI streams it. */
function writeChatCompletion(res: ServerResponse, body: FakeChatBody, reply: FakeChatAnswer, counter: number): void {
  const id = `chatcmpl-fake-${counter}`;
  const model = body.model ?? 'fake-model';
  const usage = reply.usage ?? DEFAULT_USAGE;
  const toolCalls =
    'tool_calls' in reply
      ? reply.tool_calls.map((call, i) => ({
          id: call.id ?? `call_fake_${counter}_${i}`,
          name: call.name,
          arguments: typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments),
        }))
      : [];
  const content = reply.content ?? '';
  const finishReason = toolCalls.length > 0 ? 'tool_calls' : 'stop';
  const totalUsage = { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens };

  if (body.stream !== true) {
    sendJson(res, 200, {
      id,
      object: 'chat.completion',
      created: CREATED,
      model,
      choices: [
        {
          index: 0,
          message: {
            role: 'assistant',
            content: content || (toolCalls.length > 0 ? null : ''),
            refusal: null,
            ...(toolCalls.length > 0
              ? {
                  tool_calls: toolCalls.map((c) => ({
                    id: c.id,
                    type: 'function',
                    function: { name: c.name, arguments: c.arguments },
                  })),
                }
              : {}),
          },
          logprobs: null,
          finish_reason: finishReason,
        },
      ],
      usage: totalUsage,
    });
    return;
  }

  const chunk = (delta: Record<string, unknown>, finish: string | null = null): Record<string, unknown> => ({
    id,
    object: 'chat.completion.chunk',
    created: CREATED,
    model,
    system_fingerprint: null,
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
  });
  openSse(res);
  writeSse(res, chunk({ role: 'assistant', content: '', refusal: null }));
  if (content) {
    const chunks = 'chunks' in reply && reply.chunks !== undefined ? reply.chunks : 3;
    for (const piece of splitText(content, chunks)) writeSse(res, chunk({ content: piece }));
  }
  if ('stall' in reply && reply.stall) return;
  toolCalls.forEach((call, index) => {
    writeSse(
      res,
      chunk({ tool_calls: [{ index, id: call.id, type: 'function', function: { name: call.name, arguments: '' } }] }),
    );
    for (const piece of splitText(call.arguments, 3)) {
      writeSse(res, chunk({ tool_calls: [{ index, function: { arguments: piece } }] }));
    }
  });
  writeSse(res, chunk({}, finishReason));
  if (body.stream_options?.include_usage) {
    writeSse(res, {
      id,
      object: 'chat.completion.chunk',
      created: CREATED,
      model,
      system_fingerprint: null,
      choices: [],
      usage: totalUsage,
    });
  }
  if (!res.destroyed) res.end('data: [DONE]\n\n');
}

/** Answers an embeddings request with the hashed vectors of its inputs (base64 when the SDK asks for it). */
function writeEmbeddings(res: ServerResponse, body: FakeChatBody): void {
  const inputs: unknown[] = Array.isArray(body.input) ? body.input : [body.input];
  const texts = inputs.map((input) => (typeof input === 'string' ? input : JSON.stringify(input ?? '')));
  const base64 = body.encoding_format === 'base64';
  let tokens = 0;
  const data = texts.map((text, index) => {
    tokens += (text.match(/[\p{L}\p{N}]+/gu) ?? []).length;
    const vector = fakeEmbedding(text);
    // The official SDK asks for base64 (little-endian float32) by default and decodes it itself.
    const embedding = base64 ? Buffer.from(new Float32Array(vector).buffer).toString('base64') : vector;
    return { object: 'embedding', index, embedding };
  });
  sendJson(res, 200, {
    object: 'list',
    data,
    model: body.model ?? 'fake-embedding',
    usage: { prompt_tokens: tokens, total_tokens: tokens },
  });
}
