import type { GatewayModule } from '../module.js';
import { openAiRoutes, type OpenAiRoutesDeps } from './openai.routes.js';

/** The OpenAI-compatible API (DECISIONS §13): /v1/chat/completions and /v1/models, through the message path. */
export function openAiModule(deps: OpenAiRoutesDeps): GatewayModule {
  return { name: 'openai', routes: openAiRoutes(deps) };
}
