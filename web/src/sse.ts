/**
 * Server-sent events read with `fetch` streaming (ADR 0020): `EventSource` cannot send the token header, so
 * the dashboard reads `text/event-stream` answers itself. Used for the message stream
 * (`POST /sessions/{id}/messages` with `Accept: text/event-stream`), a turn's events (`GET /turns/{id}/events`,
 * resumable with `Last-Event-ID`) and the log follow.
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
  const headers: Record<string, string> = {
    accept: 'text/event-stream',
    authorization: `Bearer ${request.token}`,
  };
  if (request.body !== undefined) headers['content-type'] = 'application/json';
  if (request.lastEventId !== undefined) headers['last-event-id'] = request.lastEventId;
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
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  let event = { name: '', data: [] as string[], id: undefined as string | undefined };
  const dispatch = () => {
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
        else if (field === 'id') event.id = fieldValue;
      }
    }
  }
  dispatch();
  return { requestId };
}
