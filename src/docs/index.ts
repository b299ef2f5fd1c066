/** Docs: GET /openapi.json (generated from the route schemas) and GET /docs. */
export { docsRoutes } from './docs.routes.js';
export { asyncApiRoutes } from './asyncapi.routes.js';
export { buildAsyncApi, type AsyncApiOptions } from './asyncapi.js';
export * as streamSchemas from './stream-schemas.js';
export type { AcceptedEvent, DescribedServerFrame, LogEvent } from './stream-schemas.js';
