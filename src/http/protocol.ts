import { maxHeaderSize, STATUS_CODES } from 'node:http';
import { Socket } from 'node:net';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { errorEnvelope, errors, type ApiError } from './errors.js';
import { requestIdFor } from './request-id.js';

/**
 * HTTP below the routes, shared by the API and webhook servers (ADR 0013):
 * protocol errors Node's parser raises before any request exists, HTTP/1.1
 * without Host, and early answers to uploads the server will not read —
 * every one answered with the envelope and an `X-Request-Id` while the
 * socket still allows it.
 */

/** How long, and how much, a connection is still read after an early answer before it is cut. */
export const LINGER = { maxMs: 5_000, maxBytes: 16 * 1024 * 1024 } as const;
/** How often a lingering connection's reading is checked against `LINGER`. */
const LINGER_CHECK_MS = 100;

/** A socket error as Node's HTTP server reports it (`clientError`). */
type ClientError = Error & { code?: string };

/** Where protocol errors are noted (debug: they are the client's, and cheap to cause). */
export interface ProtocolLogger {
  debug(obj: object, msg: string): void;
}

/** What a protocol error means for the client: always 400, the closed code set has no 408 or 431 (ADR 0013). */
export function protocolError(err: ClientError): ApiError {
  if (err.code === 'HPE_HEADER_OVERFLOW') {
    return errors.badRequest('request headers too large', { max_header_bytes: maxHeaderSize });
  }
  if (err.code === 'HPE_CHUNK_EXTENSIONS_OVERFLOW') return errors.badRequest('chunk extensions too large');
  if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') return errors.badRequest('request not received in time');
  return errors.badRequest('malformed HTTP request', err.code?.startsWith('HPE_') ? { parser: err.code } : {});
}

/**
 * Half-closes the socket (the answer already written goes out with a FIN),
 * then lets Node go on reading and dropping what the client still sends
 * until it closes, or for at most `LINGER` (time, or bytes read since).
 * Closing at once while unread bytes arrive makes the kernel send a reset,
 * which can destroy the answer before the client reads it.
 */
function lingerThenClose(socket: Socket): void {
  if (socket.destroyed) return;
  // Node's HTTP parser reads the socket natively, so no `data` listener (one would take the socket
  // away from the parser); `bytesRead` still counts.
  const start = socket.bytesRead;
  const deadline = Date.now() + LINGER.maxMs;
  const close = (): void => {
    clearInterval(watch);
    socket.destroy();
  };
  const watch = setInterval(() => {
    if (Date.now() >= deadline || socket.bytesRead - start > LINGER.maxBytes) close();
  }, LINGER_CHECK_MS);
  watch.unref();
  socket.once('end', close);
  socket.once('close', () => clearInterval(watch));
  if (!socket.writableEnded) socket.end();
  socket.resume();
}

/**
 * Fastify's `clientErrorHandler`: Node's parser refused the bytes (malformed
 * request or header line, headers over `maxHeaderSize`, a request timeout).
 * Writes the envelope with a fresh request id when the socket is writable
 * and no answer has started on it, then closes with a linger.
 */
export function answerClientError(logger: ProtocolLogger) {
  return (err: ClientError, socket: Socket): void => {
    if (err.code === 'ECONNRESET' || socket.destroyed) return;
    // Node's own rule: never write into a response already under way on this connection.
    const inFlight = (socket as Socket & { _httpMessage?: { headersSent?: boolean } | null })._httpMessage;
    if (!socket.writable || socket.writableEnded || inFlight?.headersSent) {
      if (!socket.writableEnded) socket.destroy();
      return;
    }
    const requestId = requestIdFor(undefined);
    logger.debug({ request_id: requestId, code: err.code ?? null, err: err.message }, 'protocol error answered');
    const error = protocolError(err);
    const body = JSON.stringify(errorEnvelope(error, requestId));
    socket.write(
      `HTTP/1.1 ${error.status} ${STATUS_CODES[error.status] ?? ''}\r\n` +
        'Content-Type: application/json; charset=utf-8\r\n' +
        `Content-Length: ${Buffer.byteLength(body)}\r\n` +
        `X-Request-Id: ${requestId}\r\n` +
        'Connection: close\r\n\r\n' +
        body,
    );
    lingerThenClose(socket);
  };
}

/**
 * Stands in for Fastify's schema compilers (Ajv for validation, fast-json-stringify for serialisation). Routes
 * validate with zod in their own pipeline and declare no Fastify schema, so neither is ever used; named here,
 * Fastify doesn't load them, and the bundle leaves them out: about 400 KB less code to compile at every start
 * (ADR 0044). A route that declared a Fastify schema would fail as it is added, at start-up.
 */
function noFastifySchemas(): never {
  throw new Error('routes validate with zod: Fastify schemas are not compiled here (ADR 0044)');
}

/**
 * Server options both HTTP servers share: Host checked by `refuseMissingHost`, protocol errors in the envelope,
 * and no Fastify schema compilers.
 */
export function protocolServerOptions(logger: ProtocolLogger) {
  return {
    // Node would answer a missing Host itself, with an empty 400; `refuseMissingHost` answers it in the envelope.
    http: { requireHostHeader: false },
    clientErrorHandler: answerClientError(logger),
    schemaController: { compilersFactory: { buildValidator: noFastifySchemas, buildSerializer: noFastifySchemas } },
  };
}

/**
 * HTTP/1.1 requires Host (RFC 9112 §3.2); HTTP/1.0 does not. Throws ApiError
 * 400 when it is missing, and the connection closes after the answer (as
 * Node's own refusal does).
 */
export function refuseMissingHost(request: FastifyRequest, reply: FastifyReply): void {
  const raw = request.raw;
  if (raw.httpVersionMajor === 1 && raw.httpVersionMinor >= 1 && raw.headers.host === undefined) {
    void reply.header('connection', 'close');
    throw errors.badRequest('missing Host header');
  }
}

/** Answers that tell the client to come back (429, 503 with `Retry-After`). */
const RETRY_LATER_STATUSES: ReadonlySet<number> = new Set([429, 503]);
/** A body declared no longer than this, refused with a retry-later answer, is read and dropped instead. */
const DRAINED_BODY_BYTES = 64 * 1024;

/**
 * True when the request's body is declared (`Content-Length`, not chunked) and small: reading it to drop it
 * costs less than the connection a client would open to retry.
 */
function smallDeclaredBody(raw: FastifyRequest['raw']): boolean {
  if (raw.headers['transfer-encoding'] !== undefined) return false;
  const length = Number(raw.headers['content-length'] ?? '0');
  return Number.isSafeInteger(length) && length >= 0 && length <= DRAINED_BODY_BYTES;
}

/**
 * For an `onSend` hook: when the answer leaves before the request body was
 * read to its end (refused from its headers, or over the body cap), the
 * connection closes after it (`Connection: close`) with a bounded linger,
 * so the client can finish writing and read the answer, and the server
 * never reads more than `LINGER` of a body it refused.
 *
 * Except a retry-later answer (load shedding's 503, a 429) to a small declared body: Node reads that body
 * and drops it, and the connection stays open. A flood refused this way is answered on the connections it
 * has; closing each one made every retry a new connection, and the listen queue overflowed (connections took
 * seconds to open, accepted work with them: ADR 0043).
 */
export function closeAfterEarlyAnswer(request: FastifyRequest, reply: FastifyReply): void {
  const raw = request.raw;
  const socket = raw.socket;
  // `inject` has no socket of its own, and a request read to its end needs nothing.
  if (raw.complete || !(socket instanceof Socket)) return;
  if (RETRY_LATER_STATUSES.has(reply.statusCode) && smallDeclaredBody(raw)) return;
  void reply.header('connection', 'close');
  // Node ends a `Connection: close` response with `socket.destroySoon()`: lingering replaces it.
  socket.destroySoon = () => lingerThenClose(socket);
}
