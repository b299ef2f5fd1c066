/**
 * Server-sent events read with `fetch` streaming (ADR 0020): `EventSource` cannot send the token header, so
 * the dashboard reads `text/event-stream` answers itself. `readStream` reads one answer: the message stream
 * (`POST /sessions/{id}/messages` with `Accept: text/event-stream`) and a turn's events
 * (`GET /turns/{id}/events`, resumable with `Last-Event-ID`). `followStream` keeps a GET stream open the way
 * `EventSource` does, reconnecting after a drop and resuming after the last event id: the log tail
 * (`GET /logs?follow=true`).
 */
import { apiError } from './errors';

/** One event of a stream: its name (`message` when none), its parsed JSON data, and its `id:` if any. */
export interface StreamEvent {
  event: string;
  data: unknown;
  id?: string;
}

/** A request for a stream. */
export interface StreamRequest {
  /** Path on this origin, e.g. `/api/v1/turns/…/events`. */
  path: string;
  token: string;
  method?: 'GET' | 'POST';
  /** A JSON body (POST). */
  body?: unknown;
  /** Resumes after this event id. */
  lastEventId?: string;
  signal?: AbortSignal;
  /** Told the answer's request id as soon as the answer's headers arrive. */
  onOpen?: (requestId: string | undefined) => void;
}

/** What a finished stream reports: the request id of the answer, for error notices. */
export interface StreamEnd {
  requestId: string | undefined;
}

/**
 * Opens the stream and calls `onEvent` for each event until the server ends it (or `signal` aborts, which
 * rejects with an `AbortError`). An error answer (not 2xx) throws its `ApiError` before any event.
 */
export async function readStream(request: StreamRequest, onEvent: (event: StreamEvent) => void): Promise<StreamEnd> {
  return consume(request, onEvent, {});
}

/** A GET stream kept open until `signal` aborts (`followStream`). */
export interface FollowRequest {
  /** Path on this origin, e.g. `/api/v1/logs?follow=true`. */
  path: string;
  token: string;
  /** The first connection resumes after this id (e.g. a cursor from a page read just before). */
  lastEventId?: string;
  /** Ends the follow; nothing else does. */
  signal: AbortSignal;
  /** Wait before reconnecting, in ms: `first` after a connected stream drops, doubling per failed try to `max`. */
  retryMs: { first: number; max: number };
  /** Told each time a connection is made (a 2xx stream answer), before its events. */
  onConnect?: (requestId: string | undefined) => void;
  /**
   * Told each time the stream drops, before the wait to reconnect: the failure (an `ApiError` for an error
   * answer, a `TypeError` for a network drop), or `undefined` when the server ended the stream. Not told
   * when `signal` aborts.
   */
  onDrop?: (failure: unknown) => void;
}

/**
 * Follows a GET stream as `EventSource` would, with the token header: calls `onEvent` for each event, and
 * after every drop (an error answer, a network failure, the server ending it) waits and reconnects with
 * `Last-Event-ID` set to the last event id received (WHATWG HTML, server-sent events: the last event ID
 * buffer, kept across events and connections), so a server that resumes by id sends nothing twice and
 * misses nothing. Unlike `EventSource` it retries error answers too. Resolves once `signal` aborts; never
 * rejects.
 */
export async function followStream(request: FollowRequest, onEvent: (event: StreamEvent) => void): Promise<void> {
  const { signal, retryMs } = request;
  let lastEventId = request.lastEventId ?? '';
  let delay = retryMs.first;
  while (!signal.aborted) {
    let failure: unknown;
    try {
      await consume({ path: request.path, token: request.token, signal, lastEventId }, onEvent, {
        onConnect: (requestId) => {
          delay = retryMs.first;
          request.onConnect?.(requestId);
        },
        onLastEventId: (id) => (lastEventId = id),
      });
    } catch (error) {
      failure = error;
    }
    if (signal.aborted) return;
    request.onDrop?.(failure);
    await wait(delay, signal);
    delay = Math.min(delay * 2, retryMs.max);
  }
}

/** What `followStream` needs to know of one connection beyond its events. */
interface ConnectionHooks {
  /** The answer is a stream (2xx with a body); its events follow. */
  onConnect?: (requestId: string | undefined) => void;
  /** The last event ID buffer changed (an `id:` field, also of a frame with no data). */
  onLastEventId?: (id: string) => void;
}

/** Reads one stream answer (see `readStream`), telling `hooks` what a reconnecting reader needs. */
async function consume(
  request: StreamRequest,
  onEvent: (event: StreamEvent) => void,
  hooks: ConnectionHooks,
): Promise<StreamEnd> {
  const headers: Record<string, string> = {
    accept: 'text/event-stream',
    authorization: `Bearer ${request.token}`,
  };
  if (request.body !== undefined) headers['content-type'] = 'application/json';
  // An empty id means "from the start" (the spec sends no header then).
  if (request.lastEventId) headers['last-event-id'] = request.lastEventId;
  const init: RequestInit = { method: request.method ?? 'GET', headers, cache: 'no-store' };
  if (request.body !== undefined) init.body = JSON.stringify(request.body);
  if (request.signal) init.signal = request.signal;
  const response = await fetch(request.path, init);
  const requestId = response.headers.get('x-request-id') ?? undefined;
  request.onOpen?.(requestId);
  if (!response.ok || !response.body) {
    const text = await response.text();
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      body = undefined;
    }
    throw apiError(body, response);
  }
  hooks.onConnect?.(requestId);
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  let event = { name: '', data: [] as string[], id: undefined as string | undefined };
  const dispatch = () => {
    if (event.id !== undefined) hooks.onLastEventId?.(event.id);
    if (event.data.length > 0) {
      const text = event.data.join('\n');
      let data: unknown = text;
      try {
        data = JSON.parse(text);
      } catch {
        // Not JSON: handed over as text.
      }
      const out: StreamEvent = { event: event.name || 'message', data };
      if (event.id !== undefined) out.id = event.id;
      onEvent(out);
    }
    event = { name: '', data: [], id: undefined };
  };
  for (;;) {
    const { value, done } = await reader.read();
    // An event the stream ends in the middle of (no blank line after it) is dropped, as the spec says: a
    // reconnect then resumes before it rather than after a half-read one.
    if (done) break;
    buffer += value;
    let newline: number;
    while ((newline = buffer.search(/\r?\n/)) !== -1) {
      const line = buffer.slice(0, newline);
      buffer = buffer.slice(buffer[newline] === '\r' ? newline + 2 : newline + 1);
      if (line === '') dispatch();
      else if (line.startsWith(':')) continue;
      else {
        const colon = line.indexOf(':');
        const field = colon === -1 ? line : line.slice(0, colon);
        const raw = colon === -1 ? '' : line.slice(colon + 1);
        const fieldValue = raw.startsWith(' ') ? raw.slice(1) : raw;
        if (field === 'event') event.name = fieldValue;
        else if (field === 'data') event.data.push(fieldValue);
        else if (field === 'id' && !fieldValue.includes('\0')) event.id = fieldValue;
      }
    }
  }
  return { requestId };
}

/** Resolves after `ms`, or at once when `signal` aborts. */
function wait(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => (clearTimeout(timer), resolve()), { once: true });
  });
}
