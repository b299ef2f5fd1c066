import { parseJsonBounded } from '../../lib/json.js';
import { checkSlackHeaders, verifySlackRequest, type SlackHeaders } from './slack.signature.js';

/** Slack's header on a retried delivery (1, 2, 3). */
export const SLACK_RETRY_HEADER = 'x-slack-retry-num';

/** An answer of the Events API handler, framework-free. */
export interface SlackEventsAnswer {
  status: number;
  body: Record<string, unknown>;
}

/** One Events API request as the route hands it over. */
export interface SlackEventsRequest {
  headers: SlackHeaders;
  body: Buffer | string;
}

/** What the handler needs: the secret, the clock, and the running receiver (null while the channel is off). */
export interface SlackEventsOptions {
  secret: string | null;
  nowMs: number;
  deliver: ((envelope: unknown) => Promise<void>) | null;
}

const UNAUTHORIZED: SlackEventsAnswer = { status: 401, body: { ok: false, error: 'invalid signature' } };

/**
 * The answer to a request whose headers already fail the signature check
 * (missing or stale): given before its body is read. Null when the headers
 * pass (the body is checked next).
 */
export function refuseSlackHeaders(headers: SlackHeaders, options: Pick<SlackEventsOptions, 'secret' | 'nowMs'>) {
  if (!options.secret || !checkSlackHeaders(headers, options.nowMs).ok) return UNAUTHORIZED;
  return null;
}

/**
 * Handles one Events API request (DECISIONS §16): the signature over the
 * raw bytes first (missing, stale or wrong → 401, before any parsing), then
 * bounded JSON (400), then by type: `url_verification` → its `challenge`;
 * `event_callback` → `deliver`, which resolves once the event is durably
 * decided (200, Slack's ack) and rejects when it could not be decided now
 * (503: Slack delivers it again with `X-Slack-Retry-Num`). A retry of an
 * event already handled is acknowledged without a second turn. Other
 * envelopes are acknowledged and passed over.
 */
export async function handleSlackEvents(
  request: SlackEventsRequest,
  options: SlackEventsOptions,
): Promise<SlackEventsAnswer> {
  const body = typeof request.body === 'string' ? Buffer.from(request.body, 'utf8') : request.body;
  const verdict = verifySlackRequest({
    secret: options.secret,
    headers: request.headers,
    body,
    nowMs: options.nowMs,
  });
  if (!verdict.ok) return UNAUTHORIZED;
  const parsed = parseJsonBounded(body.toString('utf8'));
  if (!parsed.ok || typeof parsed.value !== 'object' || parsed.value === null || Array.isArray(parsed.value)) {
    return { status: 400, body: { ok: false, error: 'body must be one Events API envelope (JSON object)' } };
  }
  const envelope = parsed.value as Record<string, unknown>;
  if (envelope.type === 'url_verification') {
    if (typeof envelope.challenge !== 'string') return { status: 400, body: { ok: false, error: 'no challenge' } };
    return { status: 200, body: { challenge: envelope.challenge } };
  }
  if (envelope.type !== 'event_callback') return { status: 200, body: { ok: true } };
  if (!options.deliver) return { status: 503, body: { ok: false, error: 'channel not running' } };
  try {
    await options.deliver(envelope);
    return { status: 200, body: { ok: true } };
  } catch {
    return { status: 503, body: { ok: false, error: 'not accepted now; deliver again' } };
  }
}
