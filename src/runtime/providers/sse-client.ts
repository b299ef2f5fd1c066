import http from 'node:http';
import https from 'node:https';

/**
 * A lean HTTP client for one streamed JSON call (`POST` a JSON body, read a
 * `text/event-stream` answer): what an OpenAI-compatible Chat Completions call
 * needs and nothing more, over `node:http(s)` with one keep-alive agent per
 * provider. It replaces the official SDK on the hot path (ADR 0026): the SDK
 * went through `fetch`, web streams and its own request pipeline, which cost
 * more CPU per call than the rest of a turn together.
 *
 * Redirects are not followed (the key is never sent on to another address),
 * nothing is retried, and nothing is read from the environment.
 */

/** A non-2xx answer: its status and the start of its body (parsed as JSON when it is). */
export class HttpStatusError extends Error {
  constructor(
    readonly status: number,
    readonly body: unknown,
  ) {
    super(`HTTP ${status}`);
    this.name = 'HttpStatusError';
  }
}

/** An `error` object sent inside an otherwise successful stream. */
export class StreamErrorEvent extends Error {
  constructor(readonly error: unknown) {
    super('error in stream');
    this.name = 'StreamErrorEvent';
  }
}

/** Most bytes of an error body read for its message. */
const MAX_ERROR_BODY_BYTES = 8 * 1024;
/** Most bytes of one server-sent event (a chunk of a model's answer is far smaller). */
const MAX_EVENT_BYTES = 4 * 1024 * 1024;

/** One endpoint's client: a keep-alive agent and fixed headers. */
export class SseJsonClient {
  readonly #url: URL;
  readonly #agent: http.Agent;
  readonly #request: typeof http.request;
  readonly #headers: Record<string, string>;

  constructor(url: string, headers: Record<string, string>) {
    this.#url = new URL(url);
    const secure = this.#url.protocol === 'https:';
    this.#request = secure ? https.request : http.request;
    this.#agent = secure
      ? new https.Agent({ keepAlive: true, scheduling: 'lifo' })
      : new http.Agent({ keepAlive: true, scheduling: 'lifo' });
    this.#headers = { ...headers, 'content-type': 'application/json', accept: 'text/event-stream' };
  }

  /**
   * Sends `body` and resolves once the answer's headers arrived: with the
   * stream's JSON events (`data:` lines; `[DONE]` ends it) for a 2xx answer.
   * Rejects with HttpStatusError for any other status, with the transport's
   * error (a `code` such as ECONNREFUSED) when the server cannot be reached,
   * and with an AbortError when `signal` fires. The iteration throws
   * StreamErrorEvent for an event carrying `error`, SyntaxError for an event
   * that is not JSON, and the transport's error when the connection breaks.
   * `extraHeaders` (the call's trace context) never replace the client's own.
   */
  stream(
    body: unknown,
    signal: AbortSignal,
    extraHeaders?: Readonly<Record<string, string>>,
  ): Promise<AsyncIterable<unknown>> {
    const payload = Buffer.from(JSON.stringify(body));
    return new Promise((resolve, reject) => {
      const req = this.#request(
        {
          agent: this.#agent,
          protocol: this.#url.protocol,
          hostname: this.#url.hostname,
          port: this.#url.port || undefined,
          path: `${this.#url.pathname}${this.#url.search}`,
          method: 'POST',
          headers: { ...extraHeaders, ...this.#headers, 'content-length': String(payload.length) },
          signal,
        },
        (res) => {
          const status = res.statusCode ?? 0;
          if (status < 200 || status > 299) {
            readBounded(res).then(
              (text) => reject(new HttpStatusError(status, parseMaybeJson(text))),
              (err: unknown) => reject(err instanceof Error ? err : new Error(String(err))),
            );
            return;
          }
          resolve(events(res));
        },
      );
      req.on('error', reject);
      req.end(payload);
    });
  }

  /** Closes idle keep-alive connections. */
  close(): void {
    this.#agent.destroy();
  }
}

/**
 * The JSON of each `data:` event of a server-sent event stream, to `[DONE]` or
 * the end. The answer is read to its end even after `[DONE]` (leaving a
 * `for await` early would destroy the socket instead of handing it back to
 * the keep-alive agent).
 */
async function* events(res: http.IncomingMessage): AsyncGenerator<unknown> {
  res.setEncoding('utf8');
  let buffer = '';
  let done = false;
  for await (const chunk of res as AsyncIterable<string>) {
    if (done) continue;
    buffer += chunk;
    if (buffer.length > MAX_EVENT_BYTES) throw new SyntaxError('server-sent event too large');
    let end: number;
    while (!done && (end = eventEnd(buffer)) !== -1) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end).replace(/^(?:\r\n|\r|\n){1,2}/, '');
      const data = dataOf(block);
      if (data === null) continue;
      if (data === '[DONE]') {
        done = true;
        break;
      }
      const parsed: unknown = JSON.parse(data);
      if (typeof parsed === 'object' && parsed !== null && 'error' in parsed && parsed.error) {
        throw new StreamErrorEvent(parsed.error);
      }
      yield parsed;
    }
  }
  if (done) return;
  const data = dataOf(buffer);
  if (data !== null && data !== '[DONE]' && data.trim() !== '') yield JSON.parse(data) as unknown;
}

/** Where the first complete event of `buffer` ends (before its blank line), or -1. */
function eventEnd(buffer: string): number {
  const match = /\r\n\r\n|\n\n|\r\r/.exec(buffer);
  return match ? match.index : -1;
}

/** The data of one event block (its `data:` lines joined), or null when it has none (a comment, a keepalive). */
function dataOf(block: string): string | null {
  let data: string | null = null;
  for (const line of block.split(/\r\n|\r|\n/)) {
    if (!line.startsWith('data:')) continue;
    const value = line.charCodeAt(5) === 32 ? line.slice(6) : line.slice(5);
    data = data === null ? value : `${data}\n${value}`;
  }
  return data;
}

/** The first MAX_ERROR_BODY_BYTES of an answer as text (the rest is discarded). */
function readBounded(res: http.IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    let size = 0;
    res.on('data', (part: Buffer) => {
      if (size >= MAX_ERROR_BODY_BYTES) return;
      parts.push(part);
      size += part.length;
    });
    res.on('end', () => resolve(Buffer.concat(parts).subarray(0, MAX_ERROR_BODY_BYTES).toString('utf8')));
    res.on('error', reject);
  });
}

function parseMaybeJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}
