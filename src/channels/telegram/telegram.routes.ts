import type { HttpApp } from '../../http/server.js';
import type { WebhookServer } from '../webhook/webhook.server.js';
import type { TelegramChannel } from './telegram.channel.js';

/**
 * Serves Telegram's webhook (webhook mode, ADR 0027) on a Fastify server,
 * outside the token pipeline: Telegram authenticates by its secret header.
 * The route lives in its own encapsulated scope whose only body parser keeps
 * the raw bytes, so the secret is checked before anything parses the body.
 * Marks the channel served, so it may start in webhook mode.
 */
export async function registerTelegramWebhook(app: HttpApp | WebhookServer, channel: TelegramChannel): Promise<void> {
  const webhook = channel.webhook;
  if (!webhook) return;
  // Both are Fastify servers with the same logger; only `register` and the route API of the scope are used.
  await (app as HttpApp).register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body, done) => done(null, body));
    scope.post(webhook.path, {
      // A wrong secret is refused from the headers, before the body is read.
      onRequest: async (request, reply) => {
        if (!webhook.accepts(request.headers)) await reply.code(401).send({ ok: false, error: 'bad secret token' });
      },
      handler: async (request, reply) => {
        const body = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
        const answer = await webhook.handle({ headers: request.headers, body });
        return reply.code(answer.status).send(answer.body);
      },
    });
  });
  webhook.served = true;
}
