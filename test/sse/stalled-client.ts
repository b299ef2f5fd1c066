/**
 * An SSE client over a raw socket for the slow-consumer tests: one that sends
 * its request and then never reads (its socket paused from the start, so
 * what the server writes piles up in the kernel and then in the server's own
 * buffer), and the means to read, afterwards, what it was sent. Readers that
 * do read are `openSse` clients (test/helpers/sse-client.ts).
 */
import { connect, type Socket } from 'node:net';
import type { SocketTarget } from '../helpers/sse-client.js';

/** A client that sent its request and reads nothing. */
export interface StalledClient {
  socket: Socket;
  /** Resolves when the server has dropped the connection (the client still has not read a byte). */
  readonly dropped: Promise<void>;
  /**
   * Starts reading at last: everything the kernel kept for it, until the
   * connection ends. Resolves to the response's status line, its head (status
   * line and headers) and its body (the chunked framing removed; a chunk cut
   * short is kept as far as it came).
   */
  readAll(): Promise<{ statusLine: string; head: string; body: string }>;
}

/** Sends `GET path` (or `POST` with a JSON `body`) with `headers` over a fresh socket and never reads the answer. */
export function stalledClient(
  target: SocketTarget,
  path: string,
  headers: Record<string, string>,
  body?: unknown,
): Promise<StalledClient> {
  return new Promise((resolve, reject) => {
    const socket = 'path' in target ? connect(target.path) : connect(target.port, '127.0.0.1');
    socket.pause();
    let droppedResolve!: () => void;
    const dropped = new Promise<void>((done) => (droppedResolve = done));
    // `end` is never seen while paused; the server destroying its side shows as the peer half-closing, which a
    // paused socket learns of only by reading, so the server's own count is what tests wait on. `close` is kept
    // for clients that read.
    socket.once('close', () => droppedResolve());
    socket.once('error', () => undefined);
    socket.once('connect', () => {
      const payload = body === undefined ? '' : JSON.stringify(body);
      const lines = [`${body === undefined ? 'GET' : 'POST'} ${path} HTTP/1.1`, 'Host: localhost'];
      lines.push('Accept: text/event-stream');
      if (body !== undefined) lines.push('Content-Type: application/json', `Content-Length: ${payload.length}`);
      for (const [name, value] of Object.entries(headers)) lines.push(`${name}: ${value}`);
      socket.write(`${lines.join('\r\n')}\r\n\r\n${payload}`);
      resolve({
        socket,
        dropped,
        readAll: () =>
          new Promise((done) => {
            const chunks: Buffer[] = [];
            socket.on('data', (chunk: Buffer) => chunks.push(chunk));
            socket.once('close', () => done(splitResponse(Buffer.concat(chunks).toString('utf8'))));
            socket.resume();
          }),
      });
    });
    socket.once('error', reject);
  });
}

/** The status line, the head and the de-chunked body of a raw HTTP/1.1 response (possibly cut short). */
function splitResponse(raw: string): { statusLine: string; head: string; body: string } {
  const headEnd = raw.indexOf('\r\n\r\n');
  if (headEnd === -1) return { statusLine: raw.split('\r\n')[0] ?? '', head: raw, body: '' };
  const head = raw.slice(0, headEnd);
  const statusLine = head.split('\r\n')[0]!;
  const rest = raw.slice(headEnd + 4);
  if (!/transfer-encoding: chunked/i.test(head)) return { statusLine, head, body: rest };
  const pieces: string[] = [];
  let at = 0;
  for (;;) {
    const lineEnd = rest.indexOf('\r\n', at);
    if (lineEnd === -1) break;
    const size = parseInt(rest.slice(at, lineEnd), 16);
    if (!Number.isFinite(size) || size === 0) break;
    // Sizes count bytes; the test payloads are ASCII, so characters are bytes.
    pieces.push(rest.slice(lineEnd + 2, lineEnd + 2 + size));
    at = lineEnd + 2 + size + 2;
  }
  return { statusLine, head, body: pieces.join('') };
}
