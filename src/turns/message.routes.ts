import { z } from 'zod';
import { defineRoute, HttpResult, type RouteDef } from '../http/route.js';
import { objectBody, q } from '../http/validation.js';
import type { IdentityCheck } from '../channels/identity-check.js';
import type { Intake } from './intake.js';
import { awaitOutcome, sessionKeyFor, submitMessage, waitedResult } from './message-submit.js';
import type { TurnWaiters } from './turn-waiters.js';

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
export function messageRoutes(deps: {
  intake: Intake;
  waiters: TurnWaiters;
  /** Checks the caller's user identity by auth mode; throws 403. */
  checkIdentity: IdentityCheck;
}): RouteDef[] {
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
        const wait = body.wait ?? query.wait;
        const timeoutSeconds = body.timeout_seconds ?? query.timeout_seconds ?? 120;
        await deps.checkIdentity({
          platform: body.platform,
          userId: body.user_id,
          loopbackTrusted: ctx.loopbackTrusted,
          ip: ctx.ip,
        });
        const sessionKey = sessionKeyFor(body.platform, body.chat_id);
        const result = await submitMessage(deps.intake, {
          principal: ctx.principal,
          sessionKey,
          headers: ctx.request.headers,
          bodyKey: body.idempotency_key,
          wait,
          payload: {
            text: body.text,
            platform: body.platform,
            user_id: body.user_id,
            chat_id: body.chat_id,
            channel: body.platform,
            source: 'api',
          },
        });
        // A retry of a waited request waits too (spec rules 5 and 6).
        const effectiveWait = wait || (result.replay && result.originalWait);
        if (!effectiveWait) {
          return new HttpResult(202, { status: 'accepted', event_id: result.eventId, session_key: result.sessionKey });
        }
        const turn = await awaitOutcome(deps.waiters, result.eventId, timeoutSeconds * 1000, ctx.signal);
        return waitedResult(turn);
      },
    }),
  ];
}
