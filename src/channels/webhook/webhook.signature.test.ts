import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  missingSignature,
  signStandardWebhook,
  signXSignature,
  standardWebhooksKey,
  TIMESTAMP_TOLERANCE_SECONDS,
  verifyWebhookSignature,
  type SignatureHeaders,
} from './webhook.signature.js';

const SECRET = 's3cret';
const BODY = Buffer.from('{"sender_id":"u1","chat_id":"c1","text":"hi"}');
const NOW_MS = Date.UTC(2026, 10, 21, 10, 0, 0);
const NOW_S = NOW_MS / 1000;
const hex = createHmac('sha256', SECRET).update(BODY).digest('hex');

function verify(headers: SignatureHeaders, options: { secret?: string | null; body?: Buffer; nowMs?: number } = {}) {
  return verifyWebhookSignature({
    secret: options.secret === undefined ? SECRET : options.secret,
    body: options.body ?? BODY,
    headers,
    nowMs: options.nowMs ?? NOW_MS,
  });
}

function standard(secret: string, id: string, ts: number, body: Buffer = BODY, signature?: string): SignatureHeaders {
  return {
    'webhook-id': id,
    'webhook-timestamp': String(ts),
    'webhook-signature': signature ?? signStandardWebhook(secret, id, ts, body),
  };
}

describe('X-Signature (HMAC-SHA256 over the raw body)', () => {
  const cases: Array<{ name: string; headers: SignatureHeaders; ok: boolean }> = [
    { name: 'sha256= prefix', headers: { 'x-signature': `sha256=${hex}` }, ok: true },
    { name: 'bare hex', headers: { 'x-signature': hex }, ok: true },
    { name: 'uppercase hex', headers: { 'x-signature': `sha256=${hex.toUpperCase()}` }, ok: true },
    { name: 'uppercase prefix', headers: { 'x-signature': `SHA256=${hex}` }, ok: true },
    { name: 'missing', headers: {}, ok: false },
    { name: 'empty', headers: { 'x-signature': '' }, ok: false },
    { name: 'prefix only', headers: { 'x-signature': 'sha256=' }, ok: false },
    { name: 'wrong signature', headers: { 'x-signature': `sha256=${'0'.repeat(64)}` }, ok: false },
    {
      name: 'one digit changed',
      headers: { 'x-signature': `sha256=${hex.slice(0, -1)}${hex.endsWith('0') ? '1' : '0'}` },
      ok: false,
    },
    { name: 'too short', headers: { 'x-signature': `sha256=${hex.slice(0, 62)}` }, ok: false },
    { name: 'too long', headers: { 'x-signature': `sha256=${hex}00` }, ok: false },
    { name: 'not hex', headers: { 'x-signature': `sha256=${'z'.repeat(64)}` }, ok: false },
    { name: 'other algorithm prefix', headers: { 'x-signature': `sha1=${hex}` }, ok: false },
    { name: 'base64 of the digest', headers: { 'x-signature': Buffer.from(hex, 'hex').toString('base64') }, ok: false },
    {
      name: 'signed with another secret',
      headers: { 'x-signature': createHmac('sha256', 'other').update(BODY).digest('hex') },
      ok: false,
    },
  ];

  it.each(cases)('$name → ok=$ok', ({ headers, ok }) => {
    const verdict = verify(headers);
    expect(verdict.ok).toBe(ok);
    if (verdict.ok) expect(verdict).toEqual({ ok: true, scheme: 'x-signature', webhookId: null });
  });

  it('covers the exact bytes: a re-serialised body with the same meaning fails', () => {
    const reformatted = Buffer.from(JSON.stringify(JSON.parse(BODY.toString()), null, 1));
    expect(verify({ 'x-signature': hex }, { body: reformatted }).ok).toBe(false);
  });

  it('signXSignature produces what the verifier accepts', () => {
    expect(signXSignature(SECRET, BODY)).toBe(`sha256=${hex}`);
  });

  it('never puts the secret or a signature into the failure reason', () => {
    const verdict = verify({ 'x-signature': `sha256=${'a'.repeat(64)}` });
    expect(verdict.ok).toBe(false);
    if (!verdict.ok) {
      expect(verdict.reason).not.toContain(SECRET);
      expect(verdict.reason).not.toContain('a'.repeat(16));
    }
  });
});

describe('no secret configured', () => {
  it.each([null, ''])('skips verification (secret %j), even with a wrong signature', (secret) => {
    expect(verify({}, { secret })).toEqual({ ok: true, scheme: 'none', webhookId: null });
    expect(verify({ 'x-signature': 'nonsense' }, { secret }).ok).toBe(true);
  });

  it('still reports the Standard Webhooks id as the key of last resort', () => {
    expect(verify(standard('x', 'msg_1', NOW_S), { secret: null })).toEqual({
      ok: true,
      scheme: 'none',
      webhookId: 'msg_1',
    });
  });
});

describe('Standard Webhooks', () => {
  it('matches the reference test vector (whsec_ secret)', () => {
    const verdict = verifyWebhookSignature({
      secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
      body: Buffer.from('{"test": 2432232314}'),
      headers: {
        'webhook-id': 'msg_p5jXN8AQM9LWM0D4loKWxJek',
        'webhook-timestamp': '1614265330',
        'webhook-signature': 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=',
      },
      nowMs: 1614265330 * 1000,
    });
    expect(verdict).toEqual({ ok: true, scheme: 'standard-webhooks', webhookId: 'msg_p5jXN8AQM9LWM0D4loKWxJek' });
  });

  it('uses the base64 key after whsec_, and any other secret as its UTF-8 bytes', () => {
    const key = Buffer.from('0123456789abcdef0123456789abcdef');
    expect(standardWebhooksKey(`whsec_${key.toString('base64')}`)).toEqual(key);
    expect(standardWebhooksKey(SECRET)).toEqual(Buffer.from(SECRET, 'utf8'));
    const whsec = `whsec_${key.toString('base64')}`;
    expect(verify(standard(whsec, 'msg_1', NOW_S), { secret: whsec }).ok).toBe(true);
    // The same key bytes as a plain secret: the whsec_ form is not the UTF-8 of the string.
    const plainSigned = `v1,${createHmac('sha256', Buffer.from(whsec, 'utf8')).update(`msg_1.${NOW_S}.`).update(BODY).digest('base64')}`;
    expect(verify(standard(whsec, 'msg_1', NOW_S, BODY, plainSigned), { secret: whsec }).ok).toBe(false);
  });

  it('accepts a plain secret', () => {
    expect(verify(standard(SECRET, 'msg_2', NOW_S))).toEqual({
      ok: true,
      scheme: 'standard-webhooks',
      webhookId: 'msg_2',
    });
  });

  it('rejects a bad signature, another id, and another body', () => {
    const good = signStandardWebhook(SECRET, 'msg_3', NOW_S, BODY);
    expect(verify(standard(SECRET, 'msg_3', NOW_S, BODY, `v1,${Buffer.alloc(32).toString('base64')}`)).ok).toBe(false);
    expect(verify(standard(SECRET, 'msg_other', NOW_S, BODY, good)).ok).toBe(false);
    expect(verify(standard(SECRET, 'msg_3', NOW_S, BODY, good), { body: Buffer.from('{}') }).ok).toBe(false);
    expect(verify(standard(SECRET, 'msg_3', NOW_S, BODY, good.replace('v1,', 'v2,'))).ok).toBe(false);
    expect(verify(standard(SECRET, 'msg_3', NOW_S, BODY, 'v1,not base64!')).ok).toBe(false);
    expect(verify(standard(SECRET, 'msg_3', NOW_S, BODY, 'garbage')).ok).toBe(false);
  });

  it('passes when any one of several space-separated signatures is valid', () => {
    const good = signStandardWebhook(SECRET, 'msg_4', NOW_S, BODY);
    const bad = `v1,${Buffer.alloc(32, 7).toString('base64')}`;
    const other = signStandardWebhook('rotated-out', 'msg_4', NOW_S, BODY);
    expect(verify(standard(SECRET, 'msg_4', NOW_S, BODY, `${bad} ${good}`)).ok).toBe(true);
    expect(verify(standard(SECRET, 'msg_4', NOW_S, BODY, `${good} ${bad}`)).ok).toBe(true);
    expect(verify(standard(SECRET, 'msg_4', NOW_S, BODY, `v1a,xyz ${other} ${good}`)).ok).toBe(true);
    expect(verify(standard(SECRET, 'msg_4', NOW_S, BODY, `${bad} ${other}`)).ok).toBe(false);
  });

  it.each([
    { name: 'at the past edge', offset: -TIMESTAMP_TOLERANCE_SECONDS, ok: true },
    { name: 'at the future edge', offset: TIMESTAMP_TOLERANCE_SECONDS, ok: true },
    { name: 'stale', offset: -TIMESTAMP_TOLERANCE_SECONDS - 1, ok: false },
    { name: 'in the future', offset: TIMESTAMP_TOLERANCE_SECONDS + 1, ok: false },
  ])('timestamp $name ($offset s) → ok=$ok', ({ offset, ok }) => {
    const ts = NOW_S + offset;
    expect(verify(standard(SECRET, 'msg_5', ts)).ok).toBe(ok);
  });

  it('rejects a timestamp that is not unix seconds, and incomplete headers', () => {
    const ts = NOW_S;
    const signature = signStandardWebhook(SECRET, 'msg_6', ts, BODY);
    expect(verify({ ...standard(SECRET, 'msg_6', ts), 'webhook-timestamp': new Date(NOW_MS).toISOString() }).ok).toBe(
      false,
    );
    expect(verify({ ...standard(SECRET, 'msg_6', ts), 'webhook-timestamp': `${ts}.5` }).ok).toBe(false);
    expect(verify({ 'webhook-id': 'msg_6', 'webhook-signature': signature }).ok).toBe(false);
    expect(verify({ 'webhook-id': 'msg_6', 'webhook-timestamp': String(ts) }).ok).toBe(false);
    expect(verify({ 'webhook-timestamp': String(ts), 'webhook-signature': signature }).ok).toBe(false);
  });

  it('passes when either scheme is valid, and fails when the present ones are both wrong', () => {
    const std = standard(SECRET, 'msg_7', NOW_S);
    expect(verify({ ...std, 'x-signature': 'sha256=' + '0'.repeat(64) })).toEqual({
      ok: true,
      scheme: 'standard-webhooks',
      webhookId: 'msg_7',
    });
    expect(verify({ ...std, 'x-signature': hex }).ok).toBe(true);
    expect(verify({ ...std, 'webhook-signature': 'v1,AAAA', 'x-signature': '0'.repeat(64) }).ok).toBe(false);
  });
});

describe('missingSignature (decided from the headers, before the body is read)', () => {
  const cases: Array<[string, SignatureHeaders]> = [
    ['no signature header', {}],
    ['an empty webhook-id', { 'webhook-id': '', 'webhook-signature': 'v1,AAAA' }],
    ['webhook-id without webhook-signature', { 'webhook-id': 'msg_1' }],
    ['X-Signature twice', { 'x-signature': [hex, hex] }],
    ['X-Signature present', { 'x-signature': 'not even hex' }],
    ['Standard Webhooks present', { 'webhook-id': 'msg_1', 'webhook-signature': 'v1,AAAA' }],
  ];

  it.each(cases)('agrees with verifyWebhookSignature: %s', (_label, headers) => {
    const missing = missingSignature(SECRET, headers);
    const verdict = verify(headers);
    expect(missing).toBe(!verdict.ok && verdict.reason === 'missing signature');
  });

  it('never refuses without a secret', () => {
    expect(missingSignature(null, {})).toBe(false);
    expect(missingSignature('', {})).toBe(false);
    expect(missingSignature(SECRET, {})).toBe(true);
  });
});
