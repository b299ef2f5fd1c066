import { defineRoute, HttpResult, type RouteDef } from '../http/route.js';
import { buildOpenApi, DOCS_PAGE } from '../http/openapi.js';

/**
 * GET /openapi.json and GET /docs. Like every route but health they need a
 * token under the standard profile (DECISIONS §4). `routes` is read lazily so the document lists every registered
 * route, these two included.
 */
export function docsRoutes(deps: {
  routes: () => RouteDef[];
  apiPrefix: string;
  version: string;
  rateLimited: boolean;
}): RouteDef[] {
  let cached: string | null = null;
  return [
    defineRoute({
      method: 'GET',
      path: '/openapi.json',
      permission: 'api',
      summary: 'The OpenAPI 3.1 document of this API',
      tags: ['docs'],
      handler: () => {
        cached ??= JSON.stringify(
          buildOpenApi(deps.routes(), {
            apiPrefix: deps.apiPrefix,
            version: deps.version,
            rateLimited: deps.rateLimited,
          }),
        );
        return new HttpResult(200, cached, { 'content-type': 'application/json; charset=utf-8' });
      },
    }),
    defineRoute({
      method: 'GET',
      path: '/docs',
      permission: 'api',
      summary: 'A browsable page of the API',
      tags: ['docs'],
      handler: () => new HttpResult(200, DOCS_PAGE, { 'content-type': 'text/html; charset=utf-8' }),
    }),
  ];
}
