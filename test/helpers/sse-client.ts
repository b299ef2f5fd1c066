/**
 * A small SSE client over a real socket for stream tests: reads the
 * response as it arrives, parses complete events (comments kept apart),
 * and waits, bounded, for a condition on what has arrived.
 */
import { request, type IncomingMessage } from 'node:http';
import { parseSse, type SseEvent } from './sse.js';

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
  /** Resolves once `done(events)` holds; rejects after `timeoutMs`, or when the stream ends before. */
  until(done: (events: SseEvent[]) => boolean, timeoutMs?: number, what?: string): Promise<SseEvent[]>;
  /** Resolves when the server has ended the response. */
  readonly ended: Promise<void>;
  /** Closes the connection (the client goes away). */
  close(): void;
}

/** Opens `method path` on `base` with an SSE `Accept` and its own socket (no keep-alive pool). */
export function openSse(
  base: string,
  path: string,
  options: { method?: string; headers?: Record<string, string>; body?: unknown } = {},
): Promise<SseClient> {
  const body = options.body === undefined ? undefined : JSON.stringify(options.body);
  return new Promise((resolve, reject) => {
    const req = request(
      `${base}${path}`,
      {
        method: options.method ?? 'GET',
        agent: false,
        headers: {
          accept: 'text/event-stream',
          ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
          ...options.headers,
        },
      },
      (res) => {
        let raw = '';
        let isEnded = false;
        const waiters = new Set<() => void>();
        const notify = (): void => {
          for (const waiter of [...waiters]) waiter();
        };
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          raw += chunk;
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
        const complete = (): string => raw.slice(0, raw.lastIndexOf('\n\n') + 2);
        const client: SseClient = {
          status: res.statusCode ?? 0,
          headers: res.headers,
          get raw() {
            return raw;
          },
          events: () => parseSse(complete()),
          comments: () =>
            complete()
              .split('\n')
              .filter((line) => line.startsWith(':'))
              .map((line) => line.slice(1).trim()),
          until(done, timeoutMs = 5_000, what = 'the expected events') {
            return new Promise((resolveUntil, rejectUntil) => {
              const check = (): void => {
                const events = client.events();
                if (done(events)) {
                  cleanup();
                  resolveUntil(events);
                } else if (isEnded) {
                  cleanup();
                  rejectUntil(new Error(`the stream ended before ${what}: ${raw}`));
                }
              };
              const timer = setTimeout(() => {
                cleanup();
                rejectUntil(new Error(`timed out after ${timeoutMs} ms waiting for ${what}: ${raw}`));
              }, timeoutMs);
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
        resolve(client);
      },
    );
    req.on('error', reject);
    if (body !== undefined) req.write(body);
    req.end();
  });
}
