import { describe, expect, it } from 'vitest';
import {
  checkSlackHeaders,
  signSlackRequest,
  SLACK_SIGNATURE_HEADER,
  SLACK_TIMESTAMP_HEADER,
  verifySlackRequest,
} from './slack.signature.js';

const secret = '8f742231b10e8888abcd99yyyzzz85a5';
const now = 1_700_000_000_000;
const ts = String(now / 1000);
const body = Buffer.from('{"type":"event_callback","event_id":"Ev1"}');

function headers(signature: string, timestamp = ts) {
  return { [SLACK_SIGNATURE_HEADER]: signature, [SLACK_TIMESTAMP_HEADER]: timestamp };
}

describe('slack request signing', () => {
  it("matches Slack's documented example", () => {
    // From Slack's "Verifying requests from Slack" guide.
    const example =
      'token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c';
    expect(signSlackRequest(secret, 1531420618, example)).toBe(
      'v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503',
    );
  });

  it('accepts a correct signature within five minutes, either way', () => {
    const good = signSlackRequest(secret, ts, body);
    expect(verifySlackRequest({ secret, headers: headers(good), body, nowMs: now })).toEqual({ ok: true });
    expect(verifySlackRequest({ secret, headers: headers(good), body, nowMs: now + 299_000 }).ok).toBe(true);
    expect(verifySlackRequest({ secret, headers: headers(good), body, nowMs: now - 299_000 }).ok).toBe(true);
  });

  it('refuses missing, stale, malformed and wrong signatures', () => {
    const good = signSlackRequest(secret, ts, body);
    const verdict = (h: Record<string, string | string[] | undefined>, nowMs = now, s: string | null = secret) =>
      verifySlackRequest({ secret: s, headers: h, body, nowMs });
    expect(verdict({})).toEqual({ ok: false, reason: 'missing signature' });
    expect(verdict({ [SLACK_SIGNATURE_HEADER]: good })).toEqual({ ok: false, reason: 'missing signature' });
    expect(verdict(headers(good), now + 301_000)).toEqual({ ok: false, reason: 'stale timestamp' });
    expect(verdict(headers(good), now - 301_000)).toEqual({ ok: false, reason: 'stale timestamp' });
    expect(verdict(headers('sha256=abc'))).toEqual({ ok: false, reason: 'malformed signature' });
    expect(verdict(headers(good, '17e8'))).toEqual({ ok: false, reason: 'malformed timestamp' });
    expect(verdict(headers(signSlackRequest('other', ts, body)))).toEqual({ ok: false, reason: 'wrong signature' });
    // Signed at another time than the header says: the timestamp is part of what is signed.
    expect(verdict(headers(signSlackRequest(secret, Number(ts) - 1, body)))).toEqual({
      ok: false,
      reason: 'wrong signature',
    });
    expect(verdict({ [SLACK_SIGNATURE_HEADER]: [good, good], [SLACK_TIMESTAMP_HEADER]: ts }).ok).toBe(false);
    expect(verdict(headers(good), now, null)).toEqual({ ok: false, reason: 'no signing secret configured' });
    // A changed body fails.
    expect(
      verifySlackRequest({ secret, headers: headers(good), body: Buffer.from(`${body.toString()} `), nowMs: now }).ok,
    ).toBe(false);
  });

  it('checks the headers alone before the body is read', () => {
    expect(checkSlackHeaders({}, now).ok).toBe(false);
    expect(checkSlackHeaders(headers(`v0=${'0'.repeat(64)}`), now).ok).toBe(true);
    expect(checkSlackHeaders(headers(`v0=${'0'.repeat(64)}`, String(Number(ts) - 400)), now).ok).toBe(false);
  });
});
