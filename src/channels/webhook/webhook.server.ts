import Fastify, { LogController, type FastifyReply, type FastifyRequest } from 'fastify';
import { ApiError, errorEnvelope, errorResponse, errors } from '../../http/errors.js';
import { closeAfterEarlyAnswer, protocolServerOptions, refuseMissingHost } from '../../http/protocol.js';
import { requestIdFor } from '../../http/request-id.js';
import type { Clock } from '../../lib/clock.js';
import { packageVersion } from '../../lib/version.js';
import type { Logger } from '../../lib/logger.js';
import { outcomeApiError, outcomeTimeout, sessionKeyFor, type MessagePath } from '../../turns/index.js';
import { buildWebhookOpenApi } from './webhook.openapi.js';
import type { PendingTurns } from './webhook.pending.js';
import { parseWebhookBody } from './webhook.schema.js';
import { missingSignature, verifyWebhookSignature } from './webhook.signature.js';

/** The platform (and channel) name of webhook messages: identity `webhook:<sender_id>`, sessions `gateway:webhook:…`. */
export const WEBHOOK_PLATFORM = 'webhook';

/** What the webhook server uses; everything it does not own is handed in. */
export interface WebhookServerDeps {
  /** `channels.webhook.path` (POST target; `GET {path}/health`). */
  path: string;
  /** `channels.webhook.secret`; null or empty: signatures are not checked (spec rule 2). */
  secret: string | null;
  /** Body cap in bytes (413 above it). */
  maxBodyBytes: number;
  /** How long a `wait` request waits for the turn's outcome before 504, in ms. */
  waitTimeoutMs: number;
  clock: Clock;
  logger: Logger;
  /**
   * The message path's door; `overloaded`, when given, is load shedding's early refusal (503, Retry-After) of a
   * message while the process is over a limit, before its body is read (ADR 0043).
   */
  messages: Pick<MessagePath, 'submit' | 'waitFor'> & Partial<Pick<MessagePath, 'overloaded'>>;
  loopbackTrusted: (remoteAddress: string | undefined, hostHeader: string | undefined) => boolean;
  /** The `max_pending` bound (the message path's admission for webhook turns). */
  pending: PendingTurns;
  /** Called once per newly accepted message (channel stats). */
  onAccepted: () => void;
  /** True once shutdown began: every request answers 503 (DECISIONS §12). */
  isDraining: () => boolean;
}

/** Aborts when the client goes away before its answer was written (a waiting request stops waiting). */
function clientGone(reply: FastifyReply): AbortSignal {
  const controller = new AbortController();
  reply.raw.once('close', () => {
    if (!reply.raw.writableFinished) controller.abort();
  });
  return controller.signal;
}

/** `/webhook/` and `/webhook` name one endpoint; the health path hangs below it. */
function trimSlash(path: string): string {
  return path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path;
}

/**
 * Builds the webhook's own Fastify app (not listening; spec: Webhook channel,
 * DECISIONS §7). `POST {path}`: raw body (any content type, capped) →
 * signature over the raw bytes → JSON → fields → the message path's door
 * (identity `webhook:<sender_id>`, key rules with the `webhook-id`
 * fallback, the `max_pending` admission, idempotency, ledger) → 202 ack, or
 * with `wait` the outcome (200 / 502 / 504). `GET {path}/health` →
 * `{status: "ok"}`; `GET {path}/openapi.json` → its OpenAPI document. Every answer carries `X-Request-Id`; errors use the
 * API's envelope.
 */
export function buildWebhookServer(deps: WebhookServerDeps) {
  const log = deps.logger;
  const path = trimSlash(deps.path);
  const admission = deps.pending.admission();
  const app = Fastify({
    loggerInstance: log,
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: deps.maxBodyBytes,
    genReqId: (req) => requestIdFor(req.headers['x-request-id']),
    trustProxy: false,
    // stop(): every connection is closed, idle or not (waiting requests included).
    forceCloseConnections: true,
    routerOptions: { ignoreTrailingSlash: true },
    // Protocol errors (malformed request, oversized headers, no Host) in the envelope too (ADR 0013).
    ...protocolServerOptions(log),
  });

  // The signature covers the exact bytes: every body, whatever its content type, arrives as a Buffer.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body, done) => {
    done(null, body);
  });

  app.addHook('onRequest', async (request, reply) => {
    reply.header('x-request-id', request.id);
    refuseMissingHost(request, reply);
  });

  // An answer sent before the body was read (no signature, over the cap) is delivered, then the connection closes.
  app.addHook('onSend', async (request, reply) => {
    closeAfterEarlyAnswer(request, reply);
  });

  app.setErrorHandler((error, request, reply) => {
    const response = errorResponse(error, request.id, log, { maxBodyBytes: deps.maxBodyBytes });
    void reply.code(response.status).headers(response.headers).send(response.body);
  });

  app.setNotFoundHandler((request, reply) => {
    void reply.code(404).send(errorEnvelope(new ApiError('NOT_FOUND', 'route not found'), request.id));
  });

  // While draining every request is 503 UNAVAILABLE, health included (DECISIONS §9, §12).
  app.get(path === '/' ? '/health' : `${path}/health`, async () => {
    if (deps.isDraining()) throw errors.unavailable('gateway is shutting down');
    return { status: 'ok' };
  });

  // The server's own OpenAPI document (ADR 0016): a description, served without a token or signature.
  let document: string | null = null;
  app.get(path === '/' ? '/openapi.json' : `${path}/openapi.json`, async (_request, reply) => {
    if (deps.isDraining()) throw errors.unavailable('gateway is shutting down');
    document ??= JSON.stringify(buildWebhookOpenApi({ path, version: packageVersion() }));
    return reply.type('application/json; charset=utf-8').send(document);
  });

  // spec rule 2: with a secret, a request carrying no signature at all is refused from its headers,
  // before a byte of its body is read; so is every message while the process is overloaded (ADR 0043).
  const refuseUnsigned = async (request: FastifyRequest): Promise<void> => {
    if (deps.isDraining()) throw errors.unavailable('gateway is shutting down');
    const overloaded = deps.messages.overloaded?.();
    if (overloaded) throw overloaded;
    if (!missingSignature(deps.secret, request.headers)) return;
    log.warn(
      { request_id: request.id, ip: request.socket.remoteAddress, reason: 'missing signature' },
      'webhook signature rejected',
    );
    throw errors.unauthorized('missing or invalid webhook signature');
  };

  app.post(path, { onRequest: refuseUnsigned }, async (request, reply) => {
    if (deps.isDraining()) throw errors.unavailable('gateway is shutting down');
    const raw = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
    // spec rules 1–2: verified over the raw bytes, before any parsing.
    const verdict = verifyWebhookSignature({
      secret: deps.secret,
      body: raw,
      headers: request.headers,
      nowMs: deps.clock.now(),
    });
    if (!verdict.ok) {
      log.warn(
        { request_id: request.id, ip: request.socket.remoteAddress, reason: verdict.reason },
        'webhook signature rejected',
      );
      throw errors.unauthorized('missing or invalid webhook signature');
    }
    const message = parseWebhookBody(raw);
    const submitted = await deps.messages.submit({
      sessionKey: sessionKeyFor(WEBHOOK_PLATFORM, message.chatId),
      text: message.text,
      platform: WEBHOOK_PLATFORM,
      userId: message.senderId,
      chatId: message.chatId,
      channel: WEBHOOK_PLATFORM,
      source: WEBHOOK_PLATFORM,
      principal: null,
      ...(message.agent !== undefined ? { agent: message.agent } : {}),
      identity: {
        ip: request.socket.remoteAddress ?? '',
        loopbackTrusted: deps.loopbackTrusted(request.socket.remoteAddress, request.headers.host),
      },
      // spec rule 2: header and body keys must agree; the Standard Webhooks id is the key of last resort.
      idempotency: {
        scope: 'webhook',
        headers: request.headers,
        field: message.idempotencyKey,
        fallback: verdict.webhookId !== null ? { value: verdict.webhookId, where: 'webhook-id' } : null,
      },
      trace: request.headers, // traceparent, tracestate (DECISIONS §21)
      wait: message.wait,
      admission,
    });
    if (!submitted.replay) deps.onAccepted();

    // The event id correlates the reply, so a replay answers with the original correlation_id.
    const correlationId = submitted.eventId;
    if (submitted.answer === 'ack') return reply.code(202).send({ status: 'accepted', correlation_id: correlationId });

    const turn = await deps.messages.waitFor(correlationId, deps.waitTimeoutMs, clientGone(reply));
    // spec: Webhook channel rule 7; the turn goes on and a retry with the same key gets the late result.
    if (!turn) throw outcomeTimeout({ correlation_id: correlationId }, 'the reply');
    const failed = outcomeApiError(turn, { correlation_id: correlationId });
    if (failed) throw failed;
    return reply.code(200).send({ correlation_id: correlationId, response: turn.response });
  });

  return app;
}

/** The webhook's Fastify app type. */
export type WebhookServer = ReturnType<typeof buildWebhookServer>;
