/**
 * The OpenAI-compatible API (DECISIONS §13, ADR 0015): POST
 * /v1/chat/completions and GET /v1/models, one more entry point of the
 * message path, with OpenAI's wire shapes and error object.
 */
export { EVENT_ID_HEADER, openAiRoutes, type OpenAiRoutesDeps } from './openai.routes.js';
export { GATEHOUSE_MODEL } from './openai.schema.js';
export { openAiModule } from './openai.module.js';
