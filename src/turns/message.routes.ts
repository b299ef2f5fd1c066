import { z } from 'zod';
import { defineRoute, HttpResult, type RouteDef } from '../http/route.js';
import { objectBody, q } from '../http/validation.js';
import { sessionKeyFor } from './inbound.js';
import type { MessagePath } from './message-path.js';
import { envelopeResult, outcomeTimeout } from './outcome.js';
import { serverTimingHeader, type TurnMarks } from './turn-timings.js';
import { messageAcceptedSchema, messageResultSchema } from './turns.schema.js';

const nonEmpty = z.string().min(1, 'must not be empty');

const messageBody = objectBody({
  platform: nonEmpty.max(100),
  user_id: nonEmpty.max(200),
  chat_id: nonEmpty.max(200),
  text: z.string({ error: 'text is required' }).min(1, 'text must not be empty'),
  wait: z.boolean().optional(),
  timeout_seconds: z.number().int().min(1).max(600).optional(),
  idempotency_key: z.string().optional(),
  agent: z.string().min(1).max(64).optional().describe('The agent a session this creates gets (DECISIONS §17)'),
});

/**
 * POST /message (spec: Message submission and idempotent retries; DECISIONS §5, §6). Every answer carries
 * `Server-Timing`: the phases of its turn it waited for (accept, queue, claim, provider, persist, deliver)
 * and `total`.
 */
export function messageRoutes(path: Pick<MessagePath, 'submit' | 'waitFor' | 'timings'>): RouteDef[] {
  return [
    defineRoute({
      method: 'POST',
      path: '/message',
      permission: 'api',
      summary: 'Submit a message; 202 once durably accepted, or the final result with wait',
      tags: ['messages'],
      body: messageBody,
      query: z.object({ wait: q.bool(false), timeout_seconds: q.optionalInt(1, 600) }),
      responses: [
        {
          status: 202,
          description: 'Accepted once durably stored (without wait; a retry of such an original answers it again)',
          schema: messageAcceptedSchema,
          headers: ['Server-Timing'],
        },
        {
          status: 200,
          description: "With wait: the turn's final state or pause (incomplete and interrupted turns too)",
          schema: messageResultSchema,
          headers: ['Server-Timing'],
        },
      ],
      // 403/404: an agent the token may not use, or none such; 409: the key was used with other content;
      // 502/500: the turn failed; 504: the wait ran out.
      errors: [403, 404, 409, 502, 504],
      handler: async (ctx, { body, query }) => {
        const receivedAt = performance.now();
        const timeoutSeconds = body.timeout_seconds ?? query.timeout_seconds ?? 120;
        const wait = body.wait ?? query.wait;
        const submitted = await path.submit({
          sessionKey: sessionKeyFor(body.platform, body.chat_id, ctx.principal),
          text: body.text,
          platform: body.platform,
          userId: body.user_id,
          chatId: body.chat_id,
          channel: body.platform,
          source: 'api',
          principal: ctx.principal,
          ...(body.agent !== undefined ? { agent: body.agent } : {}),
          identity: { ip: ctx.ip, loopbackTrusted: ctx.loopbackTrusted },
          idempotency: { scope: 'principal', headers: ctx.request.headers, field: body.idempotency_key },
          trace: ctx.request.headers, // traceparent, tracestate (DECISIONS §21)
          wait,
          // A waited answer is the outcome alone: its acceptance rides on the turn's durable commits.
          outcomeOnly: true,
        });
        // A replay's answer is its own: the original's marks belong to the original's answer.
        const marks = (): TurnMarks | undefined => (submitted.replay ? undefined : path.timings(submitted.eventId));
        if (submitted.answer === 'ack') {
          const timing = serverTimingHeader(marks(), receivedAt);
          return new HttpResult(
            202,
            { status: 'accepted', event_id: submitted.eventId, session_key: submitted.sessionKey },
            { 'server-timing': timing },
          );
        }
        const turn = await path.waitFor(submitted.eventId, timeoutSeconds * 1000, ctx.signal);
        if (!turn) throw outcomeTimeout({ event_id: submitted.eventId });
        const result = envelopeResult(turn);
        const timing = serverTimingHeader(marks(), receivedAt);
        return new HttpResult(result.status, result.body, { ...result.headers, 'server-timing': timing });
      },
    }),
  ];
}
