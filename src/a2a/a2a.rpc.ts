import type { AgentCard as AgentCardType } from '@a2a-js/sdk';
import type { A2ARequestHandler, JsonRpcTransportHandler, ServerCallContext } from '@a2a-js/sdk/server';
import { z } from 'zod';
import type { ApiError } from '../http/errors.js';
import type { ErrorBodyWriter, RequestContext } from '../http/route.js';
import { HttpResult } from '../http/route.js';
import { openSse, type SseStream } from '../http/sse.js';
import type { Logger } from '../lib/logger.js';

/** What the JSON-RPC serving uses of the SDK, loaded on the first A2A request (ADR 0019). */
interface Sdk {
  Transport: typeof JsonRpcTransportHandler;
  Context: typeof ServerCallContext;
  cardToJson(card: AgentCardType): unknown;
}

let sdk: Promise<Sdk> | null = null;

/** The SDK, imported once; a failed import is tried again by the next request. */
export function loadSdk(): Promise<Sdk> {
  sdk ??= Promise.all([import('@a2a-js/sdk/server'), import('@a2a-js/sdk')]).then(
    ([server, core]) => ({
      Transport: server.JsonRpcTransportHandler,
      Context: server.ServerCallContext,
      cardToJson: (card) => core.AgentCard.toJSON(card),
    }),
    (err: unknown) => {
      sdk = null;
      throw err;
    },
  );
  return sdk;
}

/** JSON-RPC 2.0's codes the gateway answers itself. */
const PARSE_ERROR = -32700;
const INVALID_REQUEST = -32600;
/** The start of the range JSON-RPC leaves to the server: the gateway's own refusals (auth, limits, load). */
const SERVER_ERROR = -32000;

/** The body parser's message for a body that is not JSON (`http/json.ts`). */
const NOT_JSON = 'invalid JSON body';

/**
 * The A2A routes' errors in JSON-RPC's shape (DECISIONS §22), as the SDK's own server writes them: the guard's
 * 401/403/429, a body over the limit, an unknown agent (404) and a body that is not JSON keep their HTTP status
 * and headers and carry the gateway's code and request id in `data`.
 */
export const a2aErrorBody: ErrorBodyWriter = (error: ApiError, { requestId }) => ({
  jsonrpc: '2.0',
  id: null,
  error: {
    code: error.code === 'BAD_REQUEST' ? (error.message === NOT_JSON ? PARSE_ERROR : INVALID_REQUEST) : SERVER_ERROR,
    message: error.message,
    data: { status: error.status, code: error.code, request_id: requestId, details: error.details },
  },
});

/** A JSON-RPC response (OpenAPI; the error shape of the A2A routes too). */
export const jsonRpcResponseSchema = z.object({
  jsonrpc: z.literal('2.0'),
  id: z.union([z.string(), z.number(), z.null()]),
  result: z.unknown().optional(),
  error: z
    .object({
      code: z.number().int(),
      message: z.string(),
      data: z.unknown().optional(),
    })
    .optional(),
});

/** A JSON-RPC error response the gateway writes for a request the SDK should not see. */
function invalidRequest(id: unknown, message: string): HttpResult {
  const validId = typeof id === 'string' || (typeof id === 'number' && Number.isInteger(id)) ? id : null;
  return new HttpResult(200, { jsonrpc: '2.0', id: validId, error: { code: INVALID_REQUEST, message } });
}

/** Where a streaming answer's follower reports what it holds: the SSE stream, once it is open. */
export interface StreamHold {
  stream: SseStream | null;
}

/** The turn event number an A2A stream event carries (`metadata.gatehouse.seq`): the SSE `id:` of its frame. */
function seqOf(response: unknown): string | undefined {
  const result = (response as { result?: Record<string, { metadata?: { gatehouse?: { seq?: unknown } } }> }).result;
  if (!result) return undefined;
  for (const value of Object.values(result)) {
    const seq = value?.metadata?.gatehouse?.seq;
    if (typeof seq === 'number') return String(seq);
  }
  return undefined;
}

/**
 * Answers one JSON-RPC request at `/a2a[/<agent>]` (DECISIONS §22). The envelope is checked here (invalid request:
 * -32600; a body that is not JSON never gets here: -32700); the SDK's framework-free transport handler dispatches
 * the method to `handler` (unknown method: -32601, bad params: -32602) and writes the protocol's results and
 * errors. A streaming method answers SSE: one `data:` frame per event, its turn event number as the frame's `id:`;
 * an error before the first event is a plain JSON-RPC error, one after it an `event: error` frame.
 */
export async function serveJsonRpc(
  ctx: RequestContext,
  body: unknown,
  handler: A2ARequestHandler,
  logger: Logger,
  held: StreamHold = { stream: null },
): Promise<HttpResult | null> {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    return invalidRequest(null, 'a JSON-RPC request object is required (batches are not accepted)');
  }
  const request = body as Record<string, unknown>;
  if (request.jsonrpc !== '2.0') return invalidRequest(request.id, 'jsonrpc must be "2.0"');
  if (typeof request.method !== 'string' || request.method === '') {
    return invalidRequest(request.id, 'method must be a non-empty string');
  }
  if ('id' in request && !(request.id === null || typeof request.id === 'string' || Number.isInteger(request.id))) {
    return invalidRequest(null, 'id must be a string, an integer or null');
  }
  const { Transport, Context } = await loadSdk();
  const version = ctx.request.headers['a2a-version'];
  const context = new Context({
    requestedVersion: typeof version === 'string' && version !== '' ? version : '1.0',
  });
  const answer = await new Transport(handler).handle(request, context);
  if (!isStream(answer)) return new HttpResult(200, answer);

  const events = answer[Symbol.asyncIterator]();
  let first: IteratorResult<unknown>;
  try {
    first = await events.next();
  } catch (err) {
    return new HttpResult(200, { jsonrpc: '2.0', id: request.id ?? null, error: Transport.mapToJSONRPCError(err) });
  }
  const stream = openSse(ctx);
  held.stream = stream;
  try {
    let more = first.done ? true : stream.send('message', first.value, seqOf(first.value));
    for (;;) {
      // A client behind waits for the rest; what the turn says meanwhile is held and counted (ADR 0043).
      if (!more) await stream.drained();
      if (stream.closed) break;
      const next = await events.next();
      if (next.done) break;
      more = stream.send('message', next.value, seqOf(next.value));
    }
  } catch (err) {
    logger.warn({ source: 'a2a', err, request_id: ctx.requestId }, 'A2A stream ended with an error');
    stream.send('error', { jsonrpc: '2.0', id: request.id ?? null, error: Transport.mapToJSONRPCError(err) });
  } finally {
    await events.return?.(undefined);
    stream.close();
  }
  return null;
}

function isStream(answer: object): answer is AsyncGenerator<unknown, void, undefined> {
  return Symbol.asyncIterator in answer;
}
