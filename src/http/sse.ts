import type { RequestContext } from './route.js';

/** A server-sent-events response. */
export interface SseStream {
  /**
   * Writes one event; `id` enables `Last-Event-ID` resumption. No-op once
   * closed. False when the client has not taken what was written so far (the
   * socket's buffer is full): a source that can wait awaits `drained()`
   * before sending more.
   */
  send(event: string, data: unknown, id?: string | number): boolean;
  /** Writes a `data:` line alone (no event name, no id), as OpenAI's streams do; `text` goes as it is. */
  data(text: string): boolean;
  /** Resolves once the client has taken what was written (or the stream is closed). */
  drained(): Promise<void>;
  /**
   * Tells the stream how many bytes its source holds for it, not yet written
   * (events that arrived while the source waited for `drained()`); they count
   * towards the bound with the socket's own unsent bytes.
   */
  holding(bytes: number): void;
  /** Ends the response. Idempotent. */
  close(): void;
  readonly closed: boolean;
  /** Aborted when the client goes away or the stream is closed (also when it was cut for not reading). */
  readonly signal: AbortSignal;
}

/** Ping interval for idle streams (DECISIONS §5: a `: ping` comment every 15 s). */
export const SSE_PING_MS = 15_000;
/** Ping intervals a client may take nothing while bytes wait for it before the stream is cut (60 s by default). */
export const SSE_STALLED_PINGS = 4;
/** Default bound on one stream's unsent bytes (`limits.streams.max_buffered_bytes`). */
export const SSE_MAX_BUFFERED_BYTES = 1_048_576;

/** The SSE streams of one server, for health, metrics and tests. */
export interface SseCounts {
  /** Streams open now. */
  open: number;
  /** Streams ended because their client let more than the bound pile up unread, since start. */
  endedSlow: number;
}

const countsByServer = new WeakMap<object, SseCounts>();

/** The SSE counts of the server `app` (the Fastify instance the routes are registered on). */
export function sseCounts(app: object): Readonly<SseCounts> {
  return countsByServer.get(app) ?? { open: 0, endedSlow: 0 };
}

function countsOf(ctx: RequestContext): SseCounts {
  const server = ctx.request.server as object;
  let counts = countsByServer.get(server);
  if (!counts) {
    counts = { open: 0, endedSlow: 0 };
    countsByServer.set(server, counts);
  }
  return counts;
}

/**
 * Takes over the response and starts an SSE stream. Headers already set on
 * the reply (request id, CORS, rate limits) are carried over. A `: ping`
 * comment goes out every `pingMs` (default the context's `ssePingMs`, else
 * 15 s), so proxies and clients see the stream alive while it is idle.
 *
 * Bounded memory (ADR 0043): a source that can wait (a turn's events, the
 * logs follow) stops when a write reports the socket full and goes on at
 * `drained()`, telling the stream through `holding()` what it keeps
 * meanwhile. The bytes the client has not taken (`writableLength`: what the
 * kernel's buffers could not hold) that a write joins, plus those held, are
 * counted. Past `maxBufferedBytes` (default the context's
 * `sseMaxBufferedBytes`, from `limits.streams.max_buffered_bytes`) the
 * client is not reading: the stream is cut — the socket destroyed, so its
 * unsent bytes are freed at once rather than held for a reader that may
 * never come back — its signal aborts (followers and subscriptions let go),
 * one warning is logged and the server's `endedSlow` count goes up. A client that reads again resumes with
 * `Last-Event-ID` on the streams that carry ids; the last event it got
 * whole is the one to resume after. A source that waits for `drained()`
 * never passes the bound by itself when nothing more comes (the turn ended),
 * so a client that takes nothing for `SSE_STALLED_PINGS` ping intervals while
 * bytes wait for it is cut the same way, and so is a stream ended normally
 * whose last bytes the client still has not taken one ping interval later.
 */
export function openSse(ctx: RequestContext, options: { pingMs?: number; maxBufferedBytes?: number } = {}): SseStream {
  const { reply } = ctx;
  const maxBuffered = options.maxBufferedBytes ?? ctx.sseMaxBufferedBytes ?? SSE_MAX_BUFFERED_BYTES;
  const pingMs = options.pingMs ?? ctx.ssePingMs ?? SSE_PING_MS;
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

  const counts = countsOf(ctx);
  counts.open += 1;
  const controller = new AbortController();
  let closed = false;
  let lingering: NodeJS.Timeout | null = null;
  const finish = (): void => {
    closed = true;
    clearInterval(ping);
    counts.open -= 1;
    controller.abort();
  };
  /** The client is not reading: drop the connection and everything queued for it. */
  const cut = (): void => {
    const unsent = raw.writableLength + held;
    if (!closed) finish();
    if (lingering) clearTimeout(lingering);
    counts.endedSlow += 1;
    ctx.request.log.warn(
      { route: ctx.request.routeOptions.url, unsent_bytes: unsent, max_buffered_bytes: maxBuffered },
      'SSE stream ended: the client is not reading its events (Last-Event-ID resumes)',
    );
    raw.destroy();
  };
  const close = (): void => {
    if (closed) return;
    finish();
    raw.end();
    if (raw.writableLength > 0 && !raw.destroyed) {
      // The end is queued behind bytes the client has not taken: it gets one ping interval to take them.
      lingering = setTimeout(() => {
        if (!raw.writableFinished && !raw.destroyed) cut();
      }, pingMs);
      lingering.unref();
      raw.once('close', () => clearTimeout(lingering!));
    }
  };
  let held = 0;
  const overBound = (backlog: number): boolean => backlog + held > maxBuffered;
  /**
   * Writes one frame. What counts is the backlog the frame joins: one frame is
   * never refused for its own size (a `done` carrying a long reply may pass
   * the bound alone, and the string is in memory anyway).
   */
  const write = (chunk: string): boolean => {
    if (closed) return false;
    const backlog = raw.writableLength;
    const more = raw.write(chunk);
    if (overBound(backlog)) {
      cut();
      return false;
    }
    return more;
  };
  // A client that takes nothing for SSE_STALLED_PINGS ping intervals while bytes wait for it is gone or stuck:
  // a paused source never passes the bound by itself, so this is what lets go of a reader that never reads.
  let stalledPings = 0;
  let lastBacklog = 0;
  const ping = setInterval(() => {
    const backlog = raw.writableLength;
    // Stalled: the socket is full and the client has taken nothing of it since the last ping.
    stalledPings = raw.writableNeedDrain && backlog >= lastBacklog ? stalledPings + 1 : 0;
    if (stalledPings >= SSE_STALLED_PINGS) {
      cut();
      return;
    }
    write(': ping\n\n');
    lastBacklog = raw.writableLength;
  }, pingMs);
  ping.unref();
  raw.once('close', () => {
    if (!closed) finish();
  });

  return {
    get closed() {
      return closed;
    },
    signal: controller.signal,
    send(event, data, id) {
      if (closed) return false;
      let frame = '';
      if (id !== undefined) frame += `id: ${id}\n`;
      frame += `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
      return write(frame);
    },
    data(text) {
      return write(`data: ${text}\n\n`);
    },
    drained() {
      if (closed || !raw.writableNeedDrain) return Promise.resolve();
      return new Promise<void>((resolve) => {
        const done = (): void => {
          raw.off('drain', done);
          controller.signal.removeEventListener('abort', done);
          resolve();
        };
        raw.once('drain', done);
        controller.signal.addEventListener('abort', done, { once: true });
      });
    },
    holding(bytes) {
      held = bytes;
      if (!closed && overBound(raw.writableLength)) cut();
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
