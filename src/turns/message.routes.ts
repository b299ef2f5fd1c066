import { z } from 'zod';
import { defineRoute, HttpResult, type RouteDef } from '../http/route.js';
import { objectBody, q } from '../http/validation.js';
import { sessionKeyFor } from './inbound.js';
import type { MessagePath } from './message-path.js';
import { envelopeResult, outcomeTimeout } from './outcome.js';

const nonEmpty = z.string().min(1, 'must not be empty');

const messageBody = objectBody({
  platform: nonEmpty.max(100),
  user_id: nonEmpty.max(200),
  chat_id: nonEmpty.max(200),
  text: z.string({ error: 'text is required' }).min(1, 'text must not be empty'),
  wait: z.boolean().optional(),
  timeout_seconds: z.number().int().min(1).max(600).optional(),
  idempotency_key: z.string().optional(),
});

/** POST /message (spec: Message submission and idempotent retries; DECISIONS §5, §6). */
export function messageRoutes(path: Pick<MessagePath, 'submit' | 'waitFor'>): RouteDef[] {
  return [
    defineRoute({
      method: 'POST',
      path: '/message',
      permission: 'api',
      summary: 'Submit a message; 202 once durably accepted, or the final result with wait',
      tags: ['messages'],
      body: messageBody,
      query: z.object({ wait: q.bool(false), timeout_seconds: q.optionalInt(1, 600) }),
      handler: async (ctx, { body, query }) => {
        const timeoutSeconds = body.timeout_seconds ?? query.timeout_seconds ?? 120;
        const submitted = await path.submit({
          sessionKey: sessionKeyFor(body.platform, body.chat_id),
          text: body.text,
          platform: body.platform,
          userId: body.user_id,
          chatId: body.chat_id,
          channel: body.platform,
          source: 'api',
          principal: ctx.principal,
          identity: { ip: ctx.ip, loopbackTrusted: ctx.loopbackTrusted },
          idempotency: { scope: 'principal', headers: ctx.request.headers, field: body.idempotency_key },
          wait: body.wait ?? query.wait,
        });
        if (submitted.answer === 'ack') {
          return new HttpResult(202, {
            status: 'accepted',
            event_id: submitted.eventId,
            session_key: submitted.sessionKey,
          });
        }
        const turn = await path.waitFor(submitted.eventId, timeoutSeconds * 1000, ctx.signal);
        if (!turn) throw outcomeTimeout({ event_id: submitted.eventId });
        return envelopeResult(turn);
      },
    }),
  ];
}
