import type { RequestContext } from './route.js';

/** A server-sent-events response. */
export interface SseStream {
  /** Writes one event; `id` enables `Last-Event-ID` resumption. No-op once closed. */
  send(event: string, data: unknown, id?: string | number): void;
  /** Writes a `data:` line alone (no event name, no id), as OpenAI's streams do; `text` goes as it is. */
  data(text: string): void;
  /** Ends the response. Idempotent. */
  close(): void;
  readonly closed: boolean;
  /** Aborted when the client goes away or the stream is closed. */
  readonly signal: AbortSignal;
}

/** Ping interval for idle streams (DECISIONS §5: a `: ping` comment every 15 s). */
export const SSE_PING_MS = 15_000;
/** A client that lets this much output pile up unread is cut off (bounded memory). */
const MAX_BUFFERED_BYTES = 4 * 1024 * 1024;

/**
 * Takes over the response and starts an SSE stream. Headers already set on
 * the reply (request id, CORS, rate limits) are carried over. A `: ping`
 * comment goes out every `pingMs` (default the context's `ssePingMs`, else
 * 15 s), so proxies and clients see the stream alive while it is idle.
 */
export function openSse(ctx: RequestContext, options: { pingMs?: number } = {}): SseStream {
  const { reply } = ctx;
  reply.hijack();
  const raw = reply.raw;
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(reply.getHeaders())) {
    if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(', ') : String(value);
  }
  raw.writeHead(200, {
    ...headers,
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache, no-transform',
    connection: 'keep-alive',
    'x-accel-buffering': 'no',
  });
  raw.flushHeaders();

  const controller = new AbortController();
  let closed = false;
  const close = (): void => {
    if (closed) return;
    closed = true;
    clearInterval(ping);
    controller.abort();
    raw.end();
  };
  const write = (chunk: string): void => {
    if (closed) return;
    raw.write(chunk);
    if (raw.writableLength > MAX_BUFFERED_BYTES) close();
  };
  const ping = setInterval(() => write(': ping\n\n'), options.pingMs ?? ctx.ssePingMs ?? SSE_PING_MS);
  ping.unref();
  raw.once('close', close);

  return {
    get closed() {
      return closed;
    },
    signal: controller.signal,
    send(event, data, id) {
      let frame = '';
      if (id !== undefined) frame += `id: ${id}\n`;
      frame += `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
      write(frame);
    },
    data(text) {
      write(`data: ${text}\n\n`);
    },
    close,
  };
}

/**
 * The answer to a stream request with nothing left to send (a resumed
 * stream whose end the client has seen): 204 No Content, which tells an
 * `EventSource` to stop reconnecting (WHATWG HTML, server-sent events).
 */
export const SSE_NOTHING_LEFT = 204;

/**
 * The `Last-Event-ID` request header, or null when absent or empty (a
 * client resuming from the start).
 */
export function lastEventIdOf(ctx: RequestContext): string | null {
  const header = ctx.request.headers['last-event-id'];
  const value = Array.isArray(header) ? header[0] : header;
  return value === undefined || value === '' ? null : value;
}
