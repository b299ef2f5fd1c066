/**
 * A small SSE client over a real socket for stream tests: reads the
 * response as it arrives, parses complete events (comments kept apart),
 * and waits, bounded, for a condition on what has arrived.
 */
import { request, type IncomingMessage } from 'node:http';
import { parseSse, type SseEvent } from './sse.js';

/** A listening gateway's socket: a Unix socket path, or a TCP port on 127.0.0.1. */
export type SocketTarget = { path: string } | { port: number };

/** Where a listening gateway is: its base URL (`http://127.0.0.1:1234`) or its socket. */
export type SseTarget = string | SocketTarget;

/** An open (or ended) SSE response. */
export interface SseClient {
  status: number;
  headers: IncomingMessage['headers'];
  /** Everything received so far, as text. */
  readonly raw: string;
  /** The complete events received so far (a block still arriving is left out). */
  events(): SseEvent[];
  /** Comment lines received so far (e.g. `: ping`), without the colon. */
  comments(): string[];
  /**
   * Resolves once `done(events)` holds (checked on every chunk); rejects after `timeoutMs` (`Infinity`: only the
   * test's own timeout bounds the wait), or when the stream ends before.
   */
  until(done: (events: SseEvent[]) => boolean, timeoutMs?: number, what?: string): Promise<SseEvent[]>;
  /** Resolves when the server has ended the response. */
  readonly ended: Promise<void>;
  /** Closes the connection (the client goes away). */
  close(): void;
}

/** Opens `method path` on `target` with an SSE `Accept` and its own socket (no keep-alive pool). */
export function openSse(
  target: SseTarget,
  path: string,
  options: { method?: string; headers?: Record<string, string>; body?: unknown } = {},
): Promise<SseClient> {
  const body = options.body === undefined ? undefined : JSON.stringify(options.body);
  const headers = {
    accept: 'text/event-stream',
    ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
    ...options.headers,
  };
  return new Promise((resolve, reject) => {
    const onResponse = (res: IncomingMessage): void => resolve(readSse(res));
    const req =
      typeof target === 'string'
        ? request(`${target}${path}`, { method: options.method ?? 'GET', agent: false, headers }, onResponse)
        : request(
            {
              ...('path' in target ? { socketPath: target.path } : { host: '127.0.0.1', port: target.port }),
              path,
              method: options.method ?? 'GET',
              agent: false,
              headers: { host: 'localhost', ...headers },
            },
            onResponse,
          );
    req.on('error', reject);
    if (body !== undefined) req.write(body);
    req.end();
  });
}

/** Reads an SSE response as it arrives. */
function readSse(res: IncomingMessage): SseClient {
  // Parsed as it comes: only the unparsed tail is searched, so a long stream costs linear time.
  const chunks: string[] = [];
  let tail = '';
  const parsed: SseEvent[] = [];
  const comments: string[] = [];
  let isEnded = false;
  const waiters = new Set<() => void>();
  const notify = (): void => {
    for (const waiter of [...waiters]) waiter();
  };
  res.setEncoding('utf8');
  res.on('data', (chunk: string) => {
    chunks.push(chunk);
    tail += chunk;
    const end = tail.lastIndexOf('\n\n') + 2;
    if (end > 1) {
      const complete = tail.slice(0, end);
      tail = tail.slice(end);
      for (const event of parseSse(complete)) parsed.push(event);
      for (const line of complete.split('\n')) if (line.startsWith(':')) comments.push(line.slice(1).trim());
    }
    notify();
  });
  const ended = new Promise<void>((done) => {
    const finish = (): void => {
      isEnded = true;
      notify();
      done();
    };
    res.once('end', finish);
    res.once('close', finish);
  });
  /** The end of what arrived, for failure messages (a long stream is not quoted whole). */
  const lastReceived = (): string => chunks.join('').slice(-2_000);
  const client: SseClient = {
    status: res.statusCode ?? 0,
    headers: res.headers,
    get raw() {
      return chunks.join('');
    },
    events: () => [...parsed],
    comments: () => [...comments],
    until(done, timeoutMs = 5_000, what = 'the expected events') {
      return new Promise((resolveUntil, rejectUntil) => {
        const check = (): void => {
          if (done(parsed)) {
            cleanup();
            resolveUntil([...parsed]);
          } else if (isEnded) {
            cleanup();
            rejectUntil(new Error(`the stream ended before ${what}: ${lastReceived()}`));
          }
        };
        const timer = Number.isFinite(timeoutMs)
          ? setTimeout(() => {
              cleanup();
              rejectUntil(new Error(`timed out after ${timeoutMs} ms waiting for ${what}: ${lastReceived()}`));
            }, timeoutMs)
          : undefined;
        const cleanup = (): void => {
          clearTimeout(timer);
          waiters.delete(check);
        };
        waiters.add(check);
        check();
      });
    },
    ended,
    close: () => res.destroy(),
  };
  return client;
}
