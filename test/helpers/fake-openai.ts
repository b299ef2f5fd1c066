/**
 * A scripted OpenAI-compatible server over real HTTP (no SDK stubbing), for
 * provider, agent and route tests: `POST /v1/chat/completions` (streaming SSE
 * exactly as OpenAI sends it, and plain JSON), `POST /v1/embeddings`
 * (deterministic hashed bag-of-words vectors) and `GET /v1/models`.
 *
 * Replies are consumed from a queue in order; with the queue empty the
 * default reply answers. Every request is recorded. `close()` destroys open
 * sockets, so a hung request never keeps the test process alive.
 */
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

// ---------------------------------------------------------------------------------------------------------------------
// Shared plumbing (also used by fake-anthropic.ts)

/** One request as the fake received it. */
export interface RecordedRequest<Body> {
  method: string;
  path: string;
  body: Body;
  headers: IncomingHttpHeaders;
}

/** A bare HTTP server on 127.0.0.1:0 whose handler gets the parsed JSON body. */
export interface HttpFake {
  /** `http://127.0.0.1:PORT` */
  origin: string;
  /** Runs `fn` after `ms`, unless the fake is closed first. */
  later(ms: number, fn: () => void): void;
  close(): Promise<void>;
}

/** Request handler of an HttpFake; `body` is the parsed JSON (undefined when the request had none). */
export type FakeHandler = (req: IncomingMessage, res: ServerResponse, body: unknown) => void;

/**
 * Starts a server on an ephemeral loopback port. Bodies that are not JSON are
 * answered 400 before the handler runs. Sockets and timers are tracked so
 * `close()` ends everything at once.
 */
export async function listenHttpFake(handle: FakeHandler): Promise<HttpFake> {
  const sockets = new Set<Socket>();
  const timers = new Set<NodeJS.Timeout>();
  let closed = false;
  const server = createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (part: Buffer) => parts.push(part));
    req.on('end', () => {
      const text = Buffer.concat(parts).toString('utf8');
      let body: unknown = undefined;
      if (text.length > 0) {
        try {
          body = JSON.parse(text);
        } catch {
          sendJson(res, 400, { error: { message: 'body is not valid JSON', type: 'invalid_request_error' } });
          return;
        }
      }
      handle(req, res, body);
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${port}`,
    later(ms, fn) {
      if (closed) return;
      const timer = setTimeout(() => {
        timers.delete(timer);
        fn();
      }, ms);
      timers.add(timer);
    },
    async close() {
      if (closed) return;
      closed = true;
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** Writes a JSON response (no-op if the client went away). */
export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  if (res.destroyed || res.writableEnded) return;
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

/** Opens a server-sent-events response. */
export function openSse(res: ServerResponse): void {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
}

/** Splits `text` into `n` consecutive pieces (fewer when the text is shorter); joined they give `text` back. */
export function splitText(text: string, n: number): string[] {
  const count = Math.max(1, Math.min(Math.floor(n), text.length));
  if (text.length === 0) return [''];
  const size = Math.ceil(text.length / count);
  const pieces: string[] = [];
  for (let i = 0; i < text.length; i += size) pieces.push(text.slice(i, i + size));
  return pieces;
}

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

/** The request path without its query string. */
export function pathOf(req: IncomingMessage): string {
  return (req.url ?? '/').split('?')[0] ?? '/';
}

// ---------------------------------------------------------------------------------------------------------------------
// The OpenAI fake

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

/** What the fake answers to one chat request. */
export type FakeReply =
  /** Text, streamed in `chunks` deltas (default 3); `stall` sends the deltas and then never finishes. */
  | { content: string; usage?: FakeUsage; chunks?: number; stall?: boolean }
  /** Tool calls streamed as OpenAI does (id + name first, arguments split), finish_reason `tool_calls`. */
  | { tool_calls: FakeToolCall[]; content?: string; usage?: FakeUsage }
  /** An HTTP error with an OpenAI-style error body (or `body` as given). */
  | { status: number; body?: unknown }
  /** Never answers. */
  | { hang: true }
  /** Answers `then` after `delayMs`. */
  | { delayMs: number; then: FakeReply }
  /** Sends `raw` verbatim as the response body (for malformed-stream tests). */
  | { raw: string; status?: number; contentType?: string }
  /** Computed from the request body. */
  | ((body: FakeChatBody) => FakeReply);

/** What the fake answers to one embeddings request (success is always computed). */
export type FakeEmbeddingReply = { status: number; body?: unknown } | { hang: true };

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

/** A running fake OpenAI server. */
export interface FakeOpenAI {
  /** e.g. `http://127.0.0.1:PORT/v1`: use as `base_url`. */
  url: string;
  /** Everything received, in order (chat and embeddings). */
  requests: Array<RecordedRequest<FakeChatBody>>;
  /** Queues scripted chat replies, consumed in order; when the queue is empty the default reply is used. */
  enqueue(...replies: FakeReply[]): void;
  /** Replaces the default reply (initially `fake: <last user text>` with usage {10, 5}). */
  setDefault(reply: FakeReply): void;
  /** Queues failures for the embeddings endpoint; with the queue empty it answers normally. */
  enqueueEmbeddings(...replies: FakeEmbeddingReply[]): void;
  close(): Promise<void>;
}

/** Dimension of the fake embedding vectors. */
export const FAKE_EMBEDDING_DIMENSIONS = 64;

const DEFAULT_USAGE: FakeUsage = { prompt_tokens: 10, completion_tokens: 5 };
const CREATED = 1_700_000_000;

/** The initial default reply: echoes the last user message. */
function defaultReply(body: FakeChatBody): FakeReply {
  const users = (body.messages ?? []).filter((m) => m.role === 'user');
  return { content: `fake: ${contentText(users[users.length - 1]?.content)}`, usage: DEFAULT_USAGE };
}

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

/** Starts a fake OpenAI server on 127.0.0.1 with an ephemeral port. */
export async function startFakeOpenAI(): Promise<FakeOpenAI> {
  const queue: FakeReply[] = [];
  const embeddingQueue: FakeEmbeddingReply[] = [];
  let fallback: FakeReply = defaultReply;
  let counter = 0;
  const requests: Array<RecordedRequest<FakeChatBody>> = [];

  const http = await listenHttpFake((req, res, raw) => {
    const path = pathOf(req);
    const body = (typeof raw === 'object' && raw !== null ? raw : {}) as FakeChatBody;
    requests.push({ method: req.method ?? 'GET', path, body, headers: req.headers });
    if (req.method === 'POST' && path === '/v1/chat/completions') {
      play(res, body, queue.shift() ?? fallback);
    } else if (req.method === 'POST' && path === '/v1/embeddings') {
      embeddings(res, body, embeddingQueue.shift());
    } else if (req.method === 'GET' && path === '/v1/models') {
      sendJson(res, 200, {
        object: 'list',
        data: [{ id: 'fake-model', object: 'model', created: CREATED, owned_by: 'fake' }],
      });
    } else {
      sendJson(res, 404, { error: { message: `no route ${req.method ?? ''} ${path}`, type: 'invalid_request_error' } });
    }
  });

  function play(res: ServerResponse, body: FakeChatBody, reply: FakeReply): void {
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
        reply.body ?? { error: { message: `fake error ${reply.status}`, type: 'server_error' } },
      );
      return;
    }
    counter++;
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
        usage: { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens },
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
    const write = (data: unknown): void => {
      if (!res.destroyed) res.write(`data: ${JSON.stringify(data)}\n\n`);
    };
    openSse(res);
    write(chunk({ role: 'assistant', content: '', refusal: null }));
    if (content) {
      const chunks = 'chunks' in reply && reply.chunks !== undefined ? reply.chunks : 3;
      for (const piece of splitText(content, chunks)) write(chunk({ content: piece }));
    }
    if ('stall' in reply && reply.stall) return;
    toolCalls.forEach((call, index) => {
      write(
        chunk({
          tool_calls: [{ index, id: call.id, type: 'function', function: { name: call.name, arguments: '' } }],
        }),
      );
      for (const piece of splitText(call.arguments, 3)) {
        write(chunk({ tool_calls: [{ index, function: { arguments: piece } }] }));
      }
    });
    write(chunk({}, finishReason));
    if (body.stream_options?.include_usage) {
      write({
        id,
        object: 'chat.completion.chunk',
        created: CREATED,
        model,
        system_fingerprint: null,
        choices: [],
        usage: { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens },
      });
    }
    res.end('data: [DONE]\n\n');
  }

  function embeddings(res: ServerResponse, body: FakeChatBody, scripted: FakeEmbeddingReply | undefined): void {
    if (scripted && 'hang' in scripted) return;
    if (scripted) {
      sendJson(
        res,
        scripted.status,
        scripted.body ?? { error: { message: `fake error ${scripted.status}`, type: 'server_error' } },
      );
      return;
    }
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

  return {
    url: `${http.origin}/v1`,
    requests,
    enqueue: (...replies) => queue.push(...replies),
    setDefault: (reply) => {
      fallback = reply;
    },
    enqueueEmbeddings: (...replies) => embeddingQueue.push(...replies),
    close: () => http.close(),
  };
}
