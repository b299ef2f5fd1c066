import { z } from 'zod';
import { defineRoute, HttpResult, type RouteDef } from '../http/route.js';
import { buildAsyncApi } from './asyncapi.js';

/**
 * GET /asyncapi.json (api token, DECISIONS §14): the AsyncAPI 3.0 document
 * of the WebSocket and the SSE streams. Its servers name the Host the
 * request came to (it passed the Host rules); the rest is built once.
 */
export function asyncApiRoutes(deps: { apiPrefix: string; version: string; tokenHeader: string }): RouteDef[] {
  const byHost = new Map<string, string>();
  return [
    defineRoute({
      method: 'GET',
      path: '/asyncapi.json',
      permission: 'api',
      summary: 'The AsyncAPI 3.0 document of the WebSocket and the SSE streams',
      tags: ['docs'],
      responses: [
        { status: 200, description: 'The AsyncAPI document', schema: z.looseObject({ asyncapi: z.string() }) },
      ],
      handler: (ctx) => {
        const host = ctx.request.headers.host ?? 'localhost';
        let body = byHost.get(host);
        if (body === undefined) {
          body = JSON.stringify(buildAsyncApi({ ...deps, host }));
          // A few Host spellings at most pass the Host rules; the bound keeps a hostile mix from growing it.
          if (byHost.size >= 16) byHost.clear();
          byHost.set(host, body);
        }
        return new HttpResult(200, body, { 'content-type': 'application/json; charset=utf-8' });
      },
    }),
  ];
}
