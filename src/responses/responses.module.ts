import type { GatewayModule } from '../module.js';
import { responsesRoutes, type ResponsesRoutesDeps } from './responses.routes.js';

/** The OpenAI Responses API (DECISIONS §22): /v1/responses, through the message path. */
export function responsesModule(deps: ResponsesRoutesDeps): GatewayModule {
  return { name: 'responses', routes: responsesRoutes(deps) };
}
