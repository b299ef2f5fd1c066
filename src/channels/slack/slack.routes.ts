import type { HttpApp } from '../../http/server.js';
import type { WebhookServer } from '../webhook/webhook.server.js';
import type { SlackEventsAnswer, SlackEventsRequest } from './slack.events.js';
import type { SlackHeaders } from './slack.signature.js';

/** The Events API endpoint as the Slack channel describes it, framework-free. */
export interface SlackEventsEndpoint {
  path: string;
  /** The answer to a request whose headers already fail (null: read the body and `handle` it). */
  refuse(headers: SlackHeaders): SlackEventsAnswer | null;
  handle(request: SlackEventsRequest): Promise<SlackEventsAnswer>;
}

/**
 * Serves the Slack Events API on a Fastify server (the webhook server's, or
 * the API server's when the webhook is off, DECISIONS §16), outside the token pipeline: Slack
 * authenticates by its signature. The route lives in its own encapsulated
 * scope whose only body parser keeps the raw bytes, so the signature is
 * checked over exactly what Slack sent, before anything parses it; a
 * request with missing or stale signature headers is refused before its
 * body is read.
 */
export async function registerSlackEvents(app: HttpApp | WebhookServer, endpoint: SlackEventsEndpoint): Promise<void> {
  // Both are Fastify servers with the same logger; only `register` and the route API of the scope are used.
  await (app as HttpApp).register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body, done) => done(null, body));
    scope.post(endpoint.path, {
      onRequest: async (request, reply) => {
        const refused = endpoint.refuse(request.headers);
        if (refused) return reply.code(refused.status).send(refused.body);
      },
      handler: async (request, reply) => {
        const body = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
        const answer = await endpoint.handle({ headers: request.headers, body });
        return reply.code(answer.status).send(answer.body);
      },
    });
  });
}
