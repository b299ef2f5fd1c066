import { z } from 'zod';
import type { ApiError } from '../../http/errors.js';
import type { ErrorBodyWriter } from '../../http/route.js';

/** JSON-RPC 2.0's codes: the body is not JSON, or not a request the server understands. */
const PARSE_ERROR = -32700;
const INVALID_REQUEST = -32600;
/** The start of the range JSON-RPC leaves to the server: every refusal of the gateway's own (auth, limits, load). */
const SERVER_ERROR = -32000;

/** The message the body parser gives a body that is not JSON (`http/json.ts`), and the one for an absent body. */
const NOT_JSON = new Set(['invalid JSON body', 'a JSON-RPC message is required']);

/** The JSON-RPC code of an error the gateway raises before the MCP server sees the request. */
function rpcCodeOf(error: ApiError): number {
  if (error.code !== 'BAD_REQUEST') return SERVER_ERROR;
  return NOT_JSON.has(error.message) ? PARSE_ERROR : INVALID_REQUEST;
}

/**
 * The /mcp routes' errors in JSON-RPC's shape (DECISIONS §19), as the MCP SDK answers its own: the guard's
 * 401/403/429, a body over the limit (413), a draining gateway (503) and a body that is not JSON keep their HTTP
 * status and headers (`Retry-After`, the rate-limit headers) and carry the gateway's code and request id in `data`.
 */
export const jsonRpcErrorBody: ErrorBodyWriter = (error, { requestId }) => ({
  jsonrpc: '2.0',
  id: null,
  error: {
    code: rpcCodeOf(error),
    message: error.message,
    data: { status: error.status, code: error.code, request_id: requestId, details: error.details },
  },
});

/** The shape `jsonRpcErrorBody` writes (OpenAPI). */
export const jsonRpcErrorSchema = z.object({
  jsonrpc: z.literal('2.0'),
  id: z.null(),
  error: z.object({
    code: z.number().int(),
    message: z.string(),
    data: z
      .object({
        status: z.number().int(),
        code: z.string(),
        request_id: z.string(),
        details: z.union([z.record(z.string(), z.unknown()), z.array(z.unknown())]),
      })
      .optional(),
  }),
});

/** The body of a 405 to GET and DELETE: a stateless server offers no stream of its own and no session to end. */
export function methodNotAllowedBody(): z.infer<typeof jsonRpcErrorSchema> {
  return {
    jsonrpc: '2.0',
    id: null,
    error: { code: SERVER_ERROR, message: 'Method not allowed: /mcp takes JSON-RPC messages by POST' },
  };
}
