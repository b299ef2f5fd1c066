/**
 * The core of every HTTP fake of a model provider (the OpenAI and Anthropic
 * fakes of the tests, the bench's instant model): a real server on
 * 127.0.0.1 with an ephemeral port, JSON request bodies, request recording,
 * per-endpoint scripts of replies, server-sent-event writing, and a `close()`
 * that destroys open sockets so a hung request never keeps a process alive.
 *
 * A fake answers only what it was scripted to answer. A call with nothing
 * scripted for it (an empty script, an unknown path) is answered HTTP 500
 * "unscripted call" and recorded; `verify()` then throws, so the test that
 * made the call fails instead of passing on an invented answer.
 */
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/** One request as the fake received it. */
export interface RecordedRequest<Body> {
  method: string;
  path: string;
  body: Body;
  headers: IncomingHttpHeaders;
}

/** A call the fake had no script for; it was answered HTTP 500 "unscripted call". */
export interface UnscriptedCall {
  method: string;
  path: string;
  /** Why nothing answered it (an empty script, an unknown path). */
  reason: string;
}

/**
 * One scripted reply: the provider's own answer `Answer` (text, tool calls,
 * embeddings…) or one of the control forms every fake understands.
 */
export type ScriptedReply<Answer extends object, Body> =
  | Answer
  /** An HTTP error with the provider's error body (or `body` as given). */
  | { status: number; body?: unknown }
  /** Never answers. */
  | { hang: true }
  /** Answers `then` after `delayMs` of wall time. */
  | { delayMs: number; then: ScriptedReply<Answer, Body> }
  /** Answers `then` once `after` settles: the test decides when (no wall time involved). */
  | { after: PromiseLike<unknown>; then: ScriptedReply<Answer, Body> }
  /** Sends `raw` verbatim as the response body (malformed streams). */
  | { raw: string; status?: number; contentType?: string }
  /** Computed from the request body. */
  | ((body: Body) => ScriptedReply<Answer, Body>);

/**
 * The replies of one endpoint: queued replies are taken in order; once the
 * queue is empty the standing reply set by `always` answers, if there is
 * one. With neither, the call is unscripted.
 */
export class Script<Reply> {
  private readonly queue: Reply[] = [];
  private standing: Reply | undefined;

  /** Queues replies, taken one per call in order. */
  enqueue(...replies: Reply[]): void {
    this.queue.push(...replies);
  }

  /** Answers every call the queue does not cover with `reply` (replacing an earlier standing reply). */
  always(reply: Reply): void {
    this.standing = reply;
  }

  /** The reply for the next call, or undefined when nothing is scripted for it. */
  next(): Reply | undefined {
    return this.queue.shift() ?? this.standing;
  }
}

/** One request in flight, as a route of the fake sees it. */
export interface FakeExchange<Body> {
  method: string;
  /** The path without its query string. */
  path: string;
  /** The parsed JSON body (`{}` when the request had none or it was not an object). */
  body: Body;
  req: IncomingMessage;
  res: ServerResponse;
}

/** A running fake provider. */
export interface FakeProvider<Body> {
  /** `http://127.0.0.1:PORT` */
  origin: string;
  /** Every request received, in order (empty when started with `record: false`). */
  requests: Array<RecordedRequest<Body>>;
  /** The calls answered "unscripted call" since the last `verify()`. */
  unscripted: UnscriptedCall[];
  /** Runs `fn` after `ms`, unless the fake is closed first. */
  later(ms: number, fn: () => void): void;
  /** Throws when a call went unscripted since the last `verify()` (and forgets those calls). */
  verify(): void;
  close(): Promise<void>;
}

/** What makes one fake provider: its name (for failure messages) and its routes. */
export interface FakeProviderOptions<Body> {
  name: string;
  /**
   * Answers one request; returns false when it has nothing scripted for it
   * (the core then answers 500 "unscripted call" and records the call).
   */
  route(exchange: FakeExchange<Body>): boolean;
  /** Record requests (default true; a long benchmark run turns it off to keep memory flat). */
  record?: boolean;
  /** Keep-alive timeout of the server's sockets in ms (default Node's). */
  keepAliveTimeoutMs?: number;
}

/**
 * Starts a fake on an ephemeral loopback port. Bodies that are not JSON are
 * answered 400 before any route runs.
 */
export async function startFakeProvider<Body>(options: FakeProviderOptions<Body>): Promise<FakeProvider<Body>> {
  const sockets = new Set<Socket>();
  const timers = new Set<NodeJS.Timeout>();
  const requests: Array<RecordedRequest<Body>> = [];
  const unscripted: UnscriptedCall[] = [];
  const record = options.record ?? true;
  let closed = false;

  const server = createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (part: Buffer) => parts.push(part));
    req.on('end', () => {
      const text = Buffer.concat(parts).toString('utf8');
      let parsed: unknown = undefined;
      if (text.length > 0) {
        try {
          parsed = JSON.parse(text);
        } catch {
          sendJson(res, 400, { error: { message: 'body is not valid JSON', type: 'invalid_request_error' } });
          return;
        }
      }
      const method = req.method ?? 'GET';
      const path = (req.url ?? '/').split('?')[0] ?? '/';
      const body = (typeof parsed === 'object' && parsed !== null ? parsed : {}) as Body;
      if (record) requests.push({ method, path, body, headers: req.headers });
      if (!options.route({ method, path, body, req, res })) answerUnscripted(res, method, path);
    });
  });
  if (options.keepAliveTimeoutMs !== undefined) server.keepAliveTimeout = options.keepAliveTimeoutMs;
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;

  function answerUnscripted(res: ServerResponse, method: string, path: string): void {
    const reason = 'nothing is scripted for it';
    unscripted.push({ method, path, reason });
    sendJson(res, 500, {
      error: { message: `unscripted call: ${method} ${path} (${reason})`, type: 'unscripted_call' },
    });
  }

  return {
    origin: `http://127.0.0.1:${port}`,
    requests,
    unscripted,
    later(ms, fn) {
      if (closed) return;
      const timer = setTimeout(() => {
        timers.delete(timer);
        fn();
      }, ms);
      timers.add(timer);
    },
    verify() {
      if (unscripted.length === 0) return;
      const calls = unscripted.splice(0).map((call) => `${call.method} ${call.path}`);
      throw new Error(
        `${options.name}: ${calls.length} unscripted call(s), answered 500 — script them: ${calls.join(', ')}`,
      );
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

/** What every scripted fake provider offers a test: its URL, what it saw, one script, the check and the close. */
export interface ScriptedFake<Body, Reply> {
  /** Use as the provider's `base_url`. */
  url: string;
  /** Every request received, in order. */
  requests: Array<RecordedRequest<Body>>;
  /** Calls answered "unscripted call" since the last `verify()`. */
  unscripted: UnscriptedCall[];
  /** Queues replies, consumed in order. */
  enqueue(...replies: Reply[]): void;
  /** Answers every call the queue does not cover with `reply`. */
  always(reply: Reply): void;
  /** Throws when a call went unscripted since the last `verify()`. */
  verify(): void;
  close(): Promise<void>;
}

/** The `ScriptedFake` of a running core whose main endpoint answers from `script`. */
export function scriptedFake<Body, Reply>(
  core: FakeProvider<Body>,
  script: Script<Reply>,
  url: string,
): ScriptedFake<Body, Reply> {
  return {
    url,
    requests: core.requests,
    unscripted: core.unscripted,
    enqueue: (...replies) => script.enqueue(...replies),
    always: (reply) => script.always(reply),
    verify: () => core.verify(),
    close: () => core.close(),
  };
}

/** How a provider writes its own answers and its error bodies. */
export interface ProviderWire<Answer extends object, Body> {
  /** Writes a scripted answer (text, tool calls…) for `body`. */
  answer(res: ServerResponse, body: Body, answer: Answer): void;
  /** The provider's error body for an HTTP `status`. */
  errorBody(status: number): unknown;
}

/**
 * Plays one scripted reply: the control forms here, the provider's own
 * answers through `wire`. Returns false when `reply` is undefined (nothing
 * scripted), so a route can hand that back to the core.
 */
export function playReply<Answer extends object, Body>(
  fake: Pick<FakeProvider<Body>, 'later'>,
  res: ServerResponse,
  body: Body,
  reply: ScriptedReply<Answer, Body> | undefined,
  wire: ProviderWire<Answer, Body>,
): boolean {
  if (reply === undefined) return false;
  if (typeof reply === 'function') return playReply(fake, res, body, reply(body), wire);
  if ('hang' in reply) return true;
  if ('delayMs' in reply && 'then' in reply) {
    fake.later(reply.delayMs, () => playReply(fake, res, body, reply.then, wire));
    return true;
  }
  if ('after' in reply && 'then' in reply) {
    Promise.resolve(reply.after).then(
      () => playReply(fake, res, body, reply.then, wire),
      () => res.destroy(),
    );
    return true;
  }
  if ('raw' in reply && typeof reply.raw === 'string') {
    if (res.destroyed) return true;
    res.writeHead(typeof reply.status === 'number' ? reply.status : 200, {
      'content-type': typeof reply.contentType === 'string' ? reply.contentType : 'text/event-stream',
    });
    res.end(reply.raw);
    return true;
  }
  if ('status' in reply && typeof reply.status === 'number') {
    sendJson(
      res,
      reply.status,
      'body' in reply && reply.body !== undefined ? reply.body : wire.errorBody(reply.status),
    );
    return true;
  }
  wire.answer(res, body, reply as Answer);
  return true;
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

/** Writes one server-sent event: `data` as JSON, under `event` when given (no-op if the client went away). */
export function writeSse(res: ServerResponse, data: unknown, event?: string): void {
  if (res.destroyed || res.writableEnded) return;
  res.write(`${event !== undefined ? `event: ${event}\n` : ''}data: ${JSON.stringify(data)}\n\n`);
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
