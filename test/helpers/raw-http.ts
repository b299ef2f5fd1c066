/**
 * HTTP/1.1 over a bare TCP socket, for what a well-behaved client library
 * never sends: malformed header lines, oversized headers, no Host, and a
 * chunked upload written in full before the answer is read.
 */
import { connect, type Socket } from 'node:net';

/** An answer read off the socket. */
export interface RawAnswer {
  /** Status code of the first response, or null when none arrived. */
  status: number | null;
  /** Lower-case header names of the first response. */
  headers: Record<string, string>;
  /** Body of the first response (as sent: no chunked decoding is needed for our JSON answers). */
  body: string;
  /** Everything received, as text. */
  raw: string;
  /** The error the socket reported (EPIPE, ECONNRESET…), or null. */
  error: string | null;
  /** Bytes of the upload written without error. */
  written: number;
}

/** Splits the first response out of what was received. */
export function parseAnswer(raw: string): Pick<RawAnswer, 'status' | 'headers' | 'body'> {
  const end = raw.indexOf('\r\n\r\n');
  if (!raw.startsWith('HTTP/1.') || end === -1) return { status: null, headers: {}, body: '' };
  const [statusLine, ...lines] = raw.slice(0, end).split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  const length = headers['content-length'] === undefined ? undefined : Number(headers['content-length']);
  const rest = raw.slice(end + 4);
  return {
    status: Number(statusLine!.split(' ')[1]),
    headers,
    body: length === undefined ? rest : Buffer.from(rest).subarray(0, length).toString(),
  };
}

function write(socket: Socket, data: string | Buffer): Promise<void> {
  return new Promise((resolve, reject) => socket.write(data, (err) => (err ? reject(err) : resolve())));
}

/**
 * Connects, writes `head` (request line and headers, as given), then the
 * chunks of `upload` as a chunked body, each write awaited (reading the
 * answer only alongside, as a client that sends its whole request first
 * would), then waits until the server closes or `timeoutMs` passes.
 */
export async function rawExchange(
  port: number,
  head: string,
  options: { upload?: { chunkBytes: number; totalBytes: number }; timeoutMs?: number } = {},
): Promise<RawAnswer> {
  // Half-open allowed: like curl, the client goes on writing after the server's FIN until the server resets.
  const socket = connect({ port, host: '127.0.0.1', allowHalfOpen: true });
  let raw = '';
  let error: string | null = null;
  let written = 0;
  let peerEnded = false;
  let uploadDone = false;
  socket.on('data', (chunk) => {
    raw += chunk.toString('latin1');
  });
  const closed = new Promise<void>((resolve) => {
    socket.on('error', (err: NodeJS.ErrnoException) => {
      error ??= err.code ?? err.message;
    });
    socket.on('end', () => {
      peerEnded = true;
      if (uploadDone) socket.end();
    });
    socket.on('close', () => resolve());
  });
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  try {
    await write(socket, head);
    if (options.upload) {
      const chunk = Buffer.alloc(options.upload.chunkBytes, 0x61);
      const frame = Buffer.concat([Buffer.from(`${chunk.length.toString(16)}\r\n`), chunk, Buffer.from('\r\n')]);
      while (written < options.upload.totalBytes) {
        await write(socket, frame);
        written += chunk.length;
      }
      await write(socket, '0\r\n\r\n');
    }
  } catch (err) {
    error ??= (err as NodeJS.ErrnoException).code ?? String(err);
  }
  uploadDone = true;
  if (peerEnded) socket.end();
  const timer = setTimeout(() => socket.destroy(), options.timeoutMs ?? 5_000);
  await closed;
  clearTimeout(timer);
  return { ...parseAnswer(raw), raw, error, written };
}
