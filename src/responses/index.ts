/**
 * The OpenAI Responses API (DECISIONS §22, ADR 0041): POST /v1/responses,
 * GET /v1/responses/{id} and its cancel, one more entry point of the message
 * path; a response is a turn of the ledger.
 */
export { responsesModule } from './responses.module.js';
export { responsesRoutes, type ResponsesRoutesDeps } from './responses.routes.js';
export { RESPONSES_PLATFORM } from './responses.service.js';
