/** Docs: GET /openapi.json (generated from the route schemas) and GET /docs. */
export { docsRoutes } from './docs.routes.js';
