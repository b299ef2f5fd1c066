import Fastify, { LogController, type FastifyError, type FastifyReply, type FastifyRequest } from 'fastify';
import { ApiError, errorEnvelope, errors, IdempotencyConflictError } from '../../http/errors.js';
import { requestIdFor } from '../../http/request-id.js';
import { deriveEventId, fingerprint, resolveKey, validateKey } from '../../idempotency/idempotency.service.js';
import type { Clock } from '../../lib/clock.js';
import type { Logger } from '../../logs/logger.js';
import { StoreUnavailableError } from '../../store/errors.js';
import type { Intake } from '../../turns/intake.js';
import { sessionKeyFor } from '../../turns/message-submit.js';
import type { TurnWaiters } from '../../turns/turn-waiters.js';
import { turnError } from '../../turns/turns.presenter.js';
import type { TurnRecord } from '../../turns/turns.repo.js';
import type { IdentityCheck } from '../identity-check.js';
import type { PendingTurns } from './webhook.pending.js';
import { parseWebhookBody, type WebhookMessage } from './webhook.schema.js';
import { verifyWebhookSignature } from './webhook.signature.js';

/** The platform (and channel) name of webhook messages: identity `webhook:<sender_id>`, sessions `gateway:webhook:…`. */
export const WEBHOOK_PLATFORM = 'webhook';

/** Seconds a client is told to wait (`Retry-After`) when the pending queue is full. */
export const QUEUE_FULL_RETRY_AFTER_SECONDS = 5;

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
  intake: Pick<Intake, 'submit'>;
  waiters: Pick<TurnWaiters, 'wait'>;
  checkIdentity: IdentityCheck;
  loopbackTrusted: (remoteAddress: string | undefined, hostHeader: string | undefined) => boolean;
  pending: PendingTurns;
  /** `max_pending`, for the 429 details. */
  maxPending: number;
  /** Called once per newly accepted message (channel stats). */
  onAccepted: () => void;
  /** True once shutdown began: every request answers 503 (DECISIONS §12). */
  isDraining: () => boolean;
}

/** The idempotency scope of a webhook key: sender + chat (spec: scope table), unambiguous for any ids. */
export function webhookScope(senderId: string, chatId: string): string {
  return `${WEBHOOK_PLATFORM}|${JSON.stringify([senderId, chatId])}`;
}

/** The answer for anything thrown: the API's envelope and mapping (DECISIONS §3), the 409 exception included. */
function toResponse(
  error: unknown,
  requestId: string,
  maxBodyBytes: number,
  log: Logger,
): { status: number; body: unknown; headers: Record<string, string> } {
  if (error instanceof ApiError) {
    return { status: error.status, body: errorEnvelope(error, requestId), headers: error.headers };
  }
  if (error instanceof IdempotencyConflictError) {
    // spec: idempotent retries, rule 4 — the one body outside the envelope.
    return { status: 409, body: { error: error.message }, headers: {} };
  }
  if (error instanceof StoreUnavailableError) {
    // spec rule 7: idempotency/durable storage unavailable → fail closed with 503.
    log.warn({ err: error.message, request_id: requestId }, 'store unavailable');
    return { status: 503, body: errorEnvelope(errors.unavailable('storage unavailable'), requestId), headers: {} };
  }
  const fastifyError = error as Partial<FastifyError>;
  const status = typeof fastifyError.statusCode === 'number' ? fastifyError.statusCode : 500;
  if (status === 413) {
    return { status, body: errorEnvelope(errors.payloadTooLarge(maxBodyBytes), requestId), headers: {} };
  }
  if (status >= 400 && status < 500) {
    return { status: 400, body: errorEnvelope(errors.badRequest('bad request'), requestId), headers: {} };
  }
  log.error({ err: error, request_id: requestId }, 'unhandled error');
  return { status: 500, body: errorEnvelope(errors.internal(), requestId), headers: {} };
}

/** Aborts when the client goes away before its answer was written (a waiting request stops waiting). */
function clientGone(reply: FastifyReply): AbortSignal {
  const controller = new AbortController();
  reply.raw.once('close', () => {
    if (!reply.raw.writableFinished) controller.abort();
  });
  return controller.signal;
}

/** The answer of a waited request once its turn has an outcome: 200, or the failed turn's envelope. */
function waitedAnswer(turn: TurnRecord, correlationId: string): { correlation_id: string; response: string | null } {
  if (turn.status === 'failed') {
    const error = turnError(turn);
    if (error?.code === 'UPSTREAM_ERROR') {
      throw errors.upstream(error.message, { correlation_id: correlationId });
    }
    throw new ApiError('INTERNAL_ERROR', 'the turn failed', { correlation_id: correlationId });
  }
  return { correlation_id: correlationId, response: turn.response };
}

/** `/webhook/` and `/webhook` name one endpoint; the health path hangs below it. */
function trimSlash(path: string): string {
  return path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path;
}

/**
 * Builds the webhook's own Fastify app (not listening; spec: Webhook channel,
 * DECISIONS §7). `POST {path}`: raw body (any content type, capped) →
 * signature over the raw bytes → JSON → fields → identity → idempotency key →
 * pending slot → intake → 202 ack, or with `wait` the outcome (200 / 502 /
 * 504). `GET {path}/health` → `{status: "ok"}`. Every answer carries
 * `X-Request-Id`; errors use the API's envelope.
 */
export function buildWebhookServer(deps: WebhookServerDeps) {
  const log = deps.logger;
  const path = trimSlash(deps.path);
  const app = Fastify({
    loggerInstance: log,
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: deps.maxBodyBytes,
    genReqId: (req) => requestIdFor(req.headers['x-request-id']),
    trustProxy: false,
    // stop(): every connection is closed, idle or not (waiting requests included).
    forceCloseConnections: true,
    routerOptions: { ignoreTrailingSlash: true },
  });

  // The signature covers the exact bytes: every body, whatever its content type, arrives as a Buffer.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body, done) => {
    done(null, body);
  });

  app.addHook('onRequest', async (request, reply) => {
    reply.header('x-request-id', request.id);
  });

  app.setErrorHandler((error, request, reply) => {
    const response = toResponse(error, request.id, deps.maxBodyBytes, log);
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

  app.post(path, async (request, reply) => {
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
    await deps.checkIdentity({
      platform: WEBHOOK_PLATFORM,
      userId: message.senderId,
      loopbackTrusted: deps.loopbackTrusted(request.socket.remoteAddress, request.headers.host),
      ip: request.socket.remoteAddress ?? '',
    });
    return submit(request, reply, message, verdict.webhookId);
  });

  async function submit(
    request: FastifyRequest,
    reply: FastifyReply,
    message: WebhookMessage,
    webhookId: string | null,
  ): Promise<FastifyReply> {
    // spec rule 2: header and body keys must agree; the Standard Webhooks id is the key of last resort.
    let key = resolveKey(request.headers, message.idempotencyKey);
    if (key === undefined && webhookId !== null) key = validateKey(webhookId, 'webhook-id');

    const scope = webhookScope(message.senderId, message.chatId);
    // A retry of a turn still pending is answered (replayed), not refused: it adds nothing to the queue.
    const reservation =
      deps.pending.reserve() ??
      (key !== undefined && deps.pending.has(deriveEventId(scope, key)) ? deps.pending.reserve({ force: true }) : null);
    if (!reservation) {
      // spec: Webhook channel rule 6.
      throw new ApiError(
        'RATE_LIMITED',
        'webhook queue is full; retry later',
        { max_pending: deps.maxPending, retry_after_seconds: QUEUE_FULL_RETRY_AFTER_SECONDS },
        { 'retry-after': String(QUEUE_FULL_RETRY_AFTER_SECONDS) },
      );
    }
    const sessionKey = sessionKeyFor(WEBHOOK_PLATFORM, message.chatId);
    let result: Awaited<ReturnType<Intake['submit']>>;
    try {
      result = await deps.intake.submit({
        sessionKey,
        payload: {
          text: message.text,
          platform: WEBHOOK_PLATFORM,
          user_id: message.senderId,
          chat_id: message.chatId,
          channel: WEBHOOK_PLATFORM,
          source: WEBHOOK_PLATFORM,
        },
        ...(key !== undefined
          ? {
              idempotency: {
                scope,
                key,
                // DECISIONS §6: `wait` and where the key travelled are not content.
                fingerprint: fingerprint({ sender_id: message.senderId, chat_id: message.chatId, text: message.text }),
                wait: message.wait,
              },
            }
          : {}),
      });
    } catch (err) {
      reservation.release();
      throw err;
    }
    if (result.replay) {
      reservation.release(); // spec rule 3: a replay creates nothing and is not counted again
    } else {
      reservation.track(result.eventId);
      deps.onAccepted();
    }

    // The event id correlates the reply, so a replay answers with the original correlation_id.
    const correlationId = result.eventId;
    // spec rules 5–6: a retry of a waited request waits for the same result.
    const wait = message.wait || (result.replay && result.originalWait);
    if (!wait) return reply.code(202).send({ status: 'accepted', correlation_id: correlationId });

    const turn = await deps.waiters.wait(correlationId, deps.waitTimeoutMs, clientGone(reply));
    if (!turn) {
      // spec: Webhook channel rule 7; the turn goes on and a retry with the same key gets the late result.
      throw errors.timeout('timed out waiting for the reply; retry with the same idempotency key for the result', {
        correlation_id: correlationId,
      });
    }
    return reply.code(200).send(waitedAnswer(turn, correlationId));
  }

  return app;
}

/** The webhook's Fastify app type. */
export type WebhookServer = ReturnType<typeof buildWebhookServer>;
