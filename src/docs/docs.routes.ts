import { readFile } from 'node:fs/promises';
import { z } from 'zod';
import { defineRoute, HttpResult, type RouteDef } from '../http/route.js';
import { buildOpenApi } from '../http/openapi.js';

/**
 * The Content-Security-Policy of the docs page and its assets: DECISIONS §14's dashboard policy, plus
 * `base-uri` and `form-action` closed (the page has no use for either). No inline script or style runs.
 */
export const DOCS_CSP =
  "default-src 'self'; script-src 'self'; connect-src 'self'; img-src 'self' data:; style-src 'self'; " +
  "frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

/** The page's files, beside this module (`src/docs/page/`, copied to `dist/src/docs/page/` by the build). */
const PAGE_DIR = new URL('./page/', import.meta.url);

/** The static files of the page: name under `/docs/` → file and content type. */
const ASSETS = {
  'docs.js': { file: 'docs.js', type: 'text/javascript; charset=utf-8' },
  'docs.css': { file: 'docs.css', type: 'text/css; charset=utf-8' },
} as const;

const escapeAttribute = (value: string): string => value.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** Headers of every docs response: CSP, no sniffing, no referrer, revalidated on each load. */
function staticHeaders(contentType: string): Record<string, string> {
  return {
    'content-type': contentType,
    'content-security-policy': DOCS_CSP,
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
    'cache-control': 'no-cache',
  };
}

/** Reads a page file once; a missing file (a build that did not copy the page) is a 500 with the path logged. */
function pageFile(name: string): () => Promise<string> {
  let text: Promise<string> | null = null;
  return () => {
    text ??= readFile(new URL(name, PAGE_DIR), 'utf8').catch((err: unknown) => {
      text = null;
      throw err;
    });
    return text;
  };
}

/**
 * GET /openapi.json (api token) and the browsable docs page: GET /docs, /docs/docs.js and /docs/docs.css,
 * static and served without a token (DECISIONS §14) but still behind the Origin/Host rules (ADR 0018). The
 * page asks for a token itself and sends it with every request it makes. `routes` is read lazily so the
 * document lists every registered route, these included.
 */
export function docsRoutes(deps: {
  routes: () => RouteDef[];
  apiPrefix: string;
  version: string;
  rateLimited: boolean;
  /** The token header the page sends (`gateway.auth.token_header`). */
  tokenHeader?: string;
}): RouteDef[] {
  let cached: string | null = null;
  const html = pageFile('docs.html');
  const tokenHeader = deps.tokenHeader ?? 'X-API-Token';
  const text = z.string();

  const assetRoutes = Object.entries(ASSETS).map(([name, asset]) => {
    const read = pageFile(asset.file);
    return defineRoute({
      method: 'GET',
      path: `/docs/${name}`,
      permission: 'none',
      rateGroup: null,
      summary: `The docs page's ${name.endsWith('.js') ? 'script' : 'style sheet'} (static)`,
      tags: ['docs'],
      responses: [{ status: 200, description: name, contentType: asset.type.split(';')[0]!, schema: text }],
      handler: async () => new HttpResult(200, await read(), staticHeaders(asset.type)),
    });
  });

  return [
    defineRoute({
      method: 'GET',
      path: '/openapi.json',
      permission: 'api',
      summary: 'The OpenAPI 3.1 document of this API',
      tags: ['docs'],
      responses: [{ status: 200, description: 'The OpenAPI document', schema: z.looseObject({ openapi: z.string() }) }],
      handler: () => {
        cached ??= JSON.stringify(
          buildOpenApi(deps.routes(), {
            apiPrefix: deps.apiPrefix,
            version: deps.version,
            rateLimited: deps.rateLimited,
            tokenHeader,
          }),
        );
        return new HttpResult(200, cached, { 'content-type': 'application/json; charset=utf-8' });
      },
    }),
    defineRoute({
      method: 'GET',
      path: '/docs',
      permission: 'none',
      rateGroup: null,
      summary: 'A browsable page of the API, with "Try it" (static; it asks for a token itself)',
      tags: ['docs'],
      responses: [{ status: 200, description: 'The page (HTML)', contentType: 'text/html', schema: text }],
      handler: async (ctx) => {
        // Served under the prefix and the /api alias: the page's links and calls stay under the one it came from.
        const url = ctx.request.routeOptions.url ?? `${deps.apiPrefix}/docs`;
        const base = url.slice(0, url.length - '/docs'.length);
        const page = (await html())
          .replaceAll('%API_BASE%', escapeAttribute(base))
          .replaceAll('%TOKEN_HEADER%', escapeAttribute(tokenHeader));
        return new HttpResult(200, page, staticHeaders('text/html; charset=utf-8'));
      },
    }),
    ...assetRoutes,
  ];
}
