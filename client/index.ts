/**
 * The typed client of the Gatehouse API (ADR 0016): `openapi-fetch` over the
 * types `openapi-typescript` generates from the OpenAPI document during the
 * build (`client/schema.d.ts`, written by `scripts/write-openapi.mjs`, not
 * committed). Paths, parameters, bodies and answers are typed per status:
 *
 * ```ts
 * const client = createGatehouseClient('http://127.0.0.1:58123', token);
 * const { data, error } = await client.POST('/api/v1/message', {
 *   body: { platform: 'cli', user_id: 'me', chat_id: 'me', text: 'hi', wait: true },
 * });
 * ```
 */
import createClient, { type Client, type ClientOptions } from 'openapi-fetch';
import type { paths } from './schema.js';

export type { components, operations, paths } from './schema.js';

/** A client of one gateway. */
export type GatehouseClient = Client<paths>;

/**
 * A client of the gateway at `baseUrl` (scheme, host and port; paths carry
 * the `/api/v1` prefix) sending `token` as `Authorization: Bearer`, which
 * every gateway accepts whatever its `token_header`. `options` passes
 * through to `openapi-fetch` (e.g. a `fetch` of one's own).
 */
export function createGatehouseClient(
  baseUrl: string,
  token: string,
  options: Omit<ClientOptions, 'baseUrl'> = {},
): GatehouseClient {
  return createClient<paths>({
    ...options,
    baseUrl,
    headers: { ...(options.headers as Record<string, string> | undefined), authorization: `Bearer ${token}` },
  });
}
