/**
 * The OpenAI-compatible API (DECISIONS §13, ADR 0015): POST
 * /v1/chat/completions and GET /v1/models, one more entry point of the
 * message path, with OpenAI's wire shapes and error object.
 */
export { agentOfModel, EVENT_ID_HEADER, openAiRoutes, type OpenAiRoutesDeps } from './openai.routes.js';
export { openAiErrorBody } from './openai.presenter.js';
export { GATEHOUSE_MODEL, openAiErrorSchema } from './openai.schema.js';
export { openAiModule } from './openai.module.js';
