import { z } from 'zod';
import { defineRoute, HANDLED, type RouteDef } from '../http/route.js';
import { objectBody, q } from '../http/validation.js';
import { ownerScope, type SessionService } from '../sessions/index.js';
import type { MessagePath } from './message-path.js';
import { envelopeMessage, outcomeTimeout } from './outcome.js';
import { streamTurnEvents } from './turn-stream.js';
import { streamMessageSchema } from './turns.stream-schema.js';

/**
 * POST /sessions/{id}/messages (DECISIONS §5): one turn in a session the
 * caller addresses by key, answered with its Message or streamed as SSE.
 * An entry point of the message path, so it lives behind the door's folder;
 * the sessions capability only names the session.
 */

const sessionParams = z.object({ session_id: z.string().min(1) });

/** POST /sessions/{id}/messages `{content, role: "user"}`. */
export const messageBody = objectBody({
  content: z.string({ error: 'content is required' }).min(1, 'content must not be empty'),
  role: z.literal('user', { error: 'role must be "user"' }).optional(),
});

/** POST /sessions/{id}/messages query. */
export const messageQuery = z.object({ timeout_seconds: q.optionalInt(1, 600) });

/**
 * POST /sessions/{id}/messages: the turn's Message (DECISIONS §5), the same
 * object the message stream's `done` event carries. Lazy: the stream schemas
 * are read when the document is built, whatever order the modules load in.
 */
export const sessionMessageSchema = z
  .lazy(() => streamMessageSchema)
  .describe("The turn's Message; `status` is the turn status (completed, incomplete, interrupted or a pause)");

const MESSAGE_STREAM_TYPES = new Set(['delta', 'tool_call', 'tool_result', 'done', 'error'] as const);

/** What the route needs. */
export interface SessionMessageRoutesDeps {
  /** Finds the addressed session (404 when it is not there). */
  sessions: Pick<SessionService, 'require'>;
  /** The message path's door. */
  messages: Pick<MessagePath, 'submit' | 'follow' | 'waitFor'>;
  /** How long POST /sessions/{id}/messages waits for its turn by default. */
  replyTimeoutMs: number;
}

/** The session-message route. */
export function sessionMessageRoutes(deps: SessionMessageRoutesDeps): RouteDef[] {
  const service = deps.sessions;
  return [
    defineRoute({
      method: 'POST',
      path: '/sessions/:session_id/messages',
      permission: 'api',
      summary: 'Send a message and get the reply (SSE with Accept: text/event-stream)',
      tags: ['sessions'],
      params: sessionParams,
      query: messageQuery,
      body: messageBody,
      responses: [
        {
          status: 200,
          description: "The turn's Message once it ends or pauses (incomplete and interrupted turns too)",
          schema: sessionMessageSchema,
        },
        {
          status: 200,
          description:
            'With Accept: text/event-stream: `accepted`, then `delta`, `tool_call`, `tool_result`, and `done` ' +
            'with the Message or `error` with the error object; a `: ping` comment every 15 s',
          contentType: 'text/event-stream',
        },
      ],
      // 409: the key was used with other content; 502/500: the turn failed; 504: the wait ran out.
      errors: [409, 502, 504],
      handler: async (ctx, { params, body, query }) => {
        const session = await service.require(params.session_id, ownerScope(ctx.principal));
        const chatId = session.key.split(':').slice(2).join(':') || session.key;
        const submitted = await deps.messages.submit({
          sessionKey: session.key,
          text: body.content,
          platform: session.channel,
          userId: ctx.principal.fingerprint ?? 'anonymous',
          chatId,
          channel: session.channel,
          source: 'session',
          principal: ctx.principal,
          // Addressed by session key under a token: no platform user speaks (DECISIONS §4 checks platform users).
          identity: 'skip',
          idempotency: { scope: 'principal', headers: ctx.request.headers },
          trace: ctx.request.headers, // traceparent, tracestate (DECISIONS §21)
          wait: true,
        });
        const accept = String(ctx.request.headers.accept ?? '');
        if (accept.includes('text/event-stream')) {
          await streamTurnEvents(ctx, (id, options) => deps.messages.follow(id, options), submitted.eventId, {
            afterSeq: 0,
            types: MESSAGE_STREAM_TYPES,
            withIds: true,
            endOnPause: true,
            accepted: { sessionKey: submitted.sessionKey },
          });
          return HANDLED;
        }
        const timeoutMs = query.timeout_seconds ? query.timeout_seconds * 1000 : deps.replyTimeoutMs;
        const turn = await deps.messages.waitFor(submitted.eventId, timeoutMs, ctx.signal);
        if (!turn) throw outcomeTimeout({ event_id: submitted.eventId });
        return envelopeMessage(turn);
      },
    }),
  ];
}
