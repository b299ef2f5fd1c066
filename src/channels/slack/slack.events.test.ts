import { describe, expect, it } from 'vitest';
import { handleSlackEvents, refuseSlackHeaders } from './slack.events.js';
import { signSlackRequest, SLACK_SIGNATURE_HEADER, SLACK_TIMESTAMP_HEADER } from './slack.signature.js';

const secret = 'events-secret';
const nowMs = 1_700_000_000_000;
const ts = String(nowMs / 1000);

function signed(body: string, sign = secret) {
  return {
    headers: { [SLACK_SIGNATURE_HEADER]: signSlackRequest(sign, ts, body), [SLACK_TIMESTAMP_HEADER]: ts },
    body: Buffer.from(body),
  };
}

describe('slack events endpoint', () => {
  it('checks the signature before parsing: a bad signature with a malformed body is 401, never 400', async () => {
    let delivered = 0;
    const deliver = async () => void delivered++;
    const wrong = await handleSlackEvents(signed('{not json', 'other'), { secret, nowMs, deliver });
    expect(wrong.status).toBe(401);
    const unsigned = await handleSlackEvents({ headers: {}, body: '{not json' }, { secret, nowMs, deliver });
    expect(unsigned.status).toBe(401);
    const stale = await handleSlackEvents(signed('{not json'), { secret, nowMs: nowMs + 600_000, deliver });
    expect(stale.status).toBe(401);
    const malformed = await handleSlackEvents(signed('{not json'), { secret, nowMs, deliver });
    expect(malformed.status).toBe(400);
    expect(delivered).toBe(0);
    // Without a secret nothing is accepted.
    expect((await handleSlackEvents(signed('{}'), { secret: null, nowMs, deliver })).status).toBe(401);
  });

  it('refuses missing or stale headers before the body is read', () => {
    expect(refuseSlackHeaders({}, { secret, nowMs })?.status).toBe(401);
    expect(refuseSlackHeaders(signed('{}').headers, { secret, nowMs: nowMs + 301_000 })?.status).toBe(401);
    expect(refuseSlackHeaders(signed('{}').headers, { secret, nowMs })).toBeNull();
  });

  it('answers the url_verification challenge', async () => {
    const answer = await handleSlackEvents(signed('{"type":"url_verification","challenge":"c-123","token":"t"}'), {
      secret,
      nowMs,
      deliver: null,
    });
    expect(answer).toEqual({ status: 200, body: { challenge: 'c-123' } });
  });

  it('acks 200 once delivered; 503 when not running or not accepted now (Slack retries)', async () => {
    const body = JSON.stringify({ type: 'event_callback', event_id: 'Ev1', event: { type: 'message' } });
    const seen: unknown[] = [];
    const ok = await handleSlackEvents(signed(body), { secret, nowMs, deliver: async (e) => void seen.push(e) });
    expect(ok.status).toBe(200);
    expect(seen).toHaveLength(1);
    expect((await handleSlackEvents(signed(body), { secret, nowMs, deliver: null })).status).toBe(503);
    const failing = await handleSlackEvents(signed(body), {
      secret,
      nowMs,
      deliver: () => Promise.reject(new Error('store down')),
    });
    expect(failing).toEqual({ status: 503, body: { ok: false, error: 'not accepted now; deliver again' } });
    // Other envelope types are acknowledged and passed over.
    expect(
      (await handleSlackEvents(signed('{"type":"app_rate_limited"}'), { secret, nowMs, deliver: null })).status,
    ).toBe(200);
  });
});
