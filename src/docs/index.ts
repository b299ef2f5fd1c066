/** Docs: GET /openapi.json (generated from the route schemas) and GET /docs. */
export { docsRoutes } from './docs.routes.js';
export { asyncApiRoutes } from './asyncapi.routes.js';
export { buildAsyncApi, type AsyncApiOptions } from './asyncapi.js';
export { docsModule } from './docs.module.js';
