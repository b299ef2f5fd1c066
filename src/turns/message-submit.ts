import { ApiError, errors } from '../http/errors.js';
import { HttpResult, type Principal } from '../http/route.js';
import { fingerprint, resolveKey } from '../idempotency/idempotency.service.js';
import type { Intake, SubmitResult } from './intake.js';
import type { InboundPayload } from './turn-runner.js';
import type { TurnWaiters } from './turn-waiters.js';
import { turnError, turnOutcomeMessage } from './turns.presenter.js';
import type { TurnRecord } from './turns.repo.js';

/** The session key of a platform conversation (DECISIONS §5). */
export function sessionKeyFor(platform: string, chatId: string): string {
  return `gateway:${platform}:${chatId}`;
}

/** Idempotency scope of a principal and session: the same for HTTP and WebSocket (DECISIONS §6). */
export function principalSessionScope(principal: Principal, sessionKey: string): string {
  return `${principal.scope}|${sessionKey}`;
}

/**
 * Submits a message from an HTTP or WebSocket caller with its optional key:
 * validates the key(s), computes the content fingerprint and scope, and hands
 * it to intake. Replays and conflicts come back from intake.
 */
export async function submitMessage(
  intake: Intake,
  input: {
    principal: Principal;
    payload: InboundPayload;
    sessionKey: string;
    headers: Record<string, string | string[] | undefined>;
    bodyKey?: unknown;
    wait: boolean;
  },
): Promise<SubmitResult> {
  const key = resolveKey(input.headers, input.bodyKey);
  const { platform, user_id, chat_id, text } = input.payload;
  return intake.submit({
    sessionKey: input.sessionKey,
    payload: input.payload,
    ...(key !== undefined
      ? {
          idempotency: {
            scope: principalSessionScope(input.principal, input.sessionKey),
            key,
            fingerprint: fingerprint({ platform, user_id, chat_id, text }),
            wait: input.wait,
          },
        }
      : {}),
  });
}

/** Waits for a turn's outcome; 504 TIMEOUT (the turn goes on) when it does not come in time. */
export async function awaitOutcome(
  waiters: TurnWaiters,
  eventId: string,
  timeoutMs: number,
  signal?: AbortSignal,
): Promise<TurnRecord> {
  const turn = await waiters.wait(eventId, timeoutMs, signal);
  if (!turn) {
    throw errors.timeout('timed out waiting for the turn; it goes on — retry with the same key for the result', {
      event_id: eventId,
    });
  }
  return turn;
}

/** Throws the envelope for a failed turn (502 for the provider, else 500), with `details.event_id`. */
export function throwIfFailed(turn: TurnRecord): void {
  if (turn.status !== 'failed') return;
  const error = turnError(turn);
  const code = error?.code === 'UPSTREAM_ERROR' ? 'UPSTREAM_ERROR' : 'INTERNAL_ERROR';
  throw new ApiError(code, error?.message ?? 'the turn failed', { event_id: turn.eventId });
}

/** POST /message with wait: 200 `{status, event_id, session_key, response, message}`. */
export function waitedResult(turn: TurnRecord): HttpResult {
  throwIfFailed(turn);
  return new HttpResult(200, {
    status: turn.status,
    event_id: turn.eventId,
    session_key: turn.sessionKey,
    response: turn.response,
    message: turnOutcomeMessage(turn),
  });
}
