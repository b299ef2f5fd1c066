import type { Config } from '../config/config.schema.js';
import type { RouteDef } from '../http/route.js';
import { packageVersion } from '../lib/version.js';
import type { GatewayModule } from '../module.js';
import { asyncApiRoutes } from './asyncapi.routes.js';
import { docsRoutes } from './docs.routes.js';

/** The docs capability (DECISIONS §14): GET /openapi.json from every route, GET /asyncapi.json, GET /docs. */
export function docsModule(config: Config, routes: () => RouteDef[]): GatewayModule {
  const common = {
    apiPrefix: config.gateway.api_prefix,
    version: packageVersion(),
    tokenHeader: config.gateway.auth.token_header,
  };
  return {
    name: 'docs',
    routes: [
      ...docsRoutes({ ...common, routes, rateLimited: config.security.profile !== 'minimal' }),
      ...asyncApiRoutes(common),
    ],
  };
}
