import { describe, expect, it } from 'vitest';
import { ApiError, errors, IdempotencyConflictError } from '../../http/errors.js';
import { StoreUnavailableError } from '../../store/errors.js';
import type { TurnEvent } from '../../turns/turn-events.js';
import { frameErrorOf, parseClientFrame, resolveTopics, turnEventStep } from './websocket.frames.js';

const event = (type: TurnEvent['type'], data: Record<string, unknown>, seq = 1): TurnEvent => ({
  eventId: 'evt_1',
  seq,
  type,
  data,
});

describe('parseClientFrame', () => {
  it('accepts every frame type', () => {
    expect(parseClientFrame('{"type":"auth","token":"t","user_id":"u"}')).toEqual({
      ok: true,
      frame: { type: 'auth', token: 't', user_id: 'u' },
    });
    expect(parseClientFrame('{"type":"message","text":"hi","ref":3,"idempotency_key":"k"}')).toEqual({
      ok: true,
      frame: { type: 'message', text: 'hi', ref: 3, idempotency_key: 'k' },
    });
    expect(parseClientFrame('{"type":"interrupt","event_id":"evt_1"}').ok).toBe(true);
    expect(parseClientFrame('{"type":"subscribe","topics":["turns"]}').ok).toBe(true);
    expect(parseClientFrame('{"type":"unsubscribe","topics":["turns"]}').ok).toBe(true);
    expect(parseClientFrame('{"type":"ping"}')).toEqual({ ok: true, frame: { type: 'ping' } });
  });

  it.each([
    ['not json', 'frame is not valid JSON'],
    ['[]', 'frame must be a JSON object'],
    ['"text"', 'frame must be a JSON object'],
    ['null', 'frame must be a JSON object'],
    ['{"type":"dance"}', 'unknown frame type'],
    ['{"text":"no type"}', 'unknown frame type'],
  ])('refuses %s as BAD_REQUEST', (text, message) => {
    const parsed = parseClientFrame(text);
    expect(parsed.ok).toBe(false);
    if (!parsed.ok) {
      expect(parsed.error.code).toBe('BAD_REQUEST');
      expect(parsed.error.message).toContain(message);
    }
  });

  it('names the bad field and keeps the ref of an invalid frame', () => {
    const parsed = parseClientFrame('{"type":"message","ref":"r9"}');
    expect(parsed).toMatchObject({ ok: false, ref: 'r9', error: { code: 'BAD_REQUEST' } });
    if (!parsed.ok) expect(parsed.error.message).toContain('text');
    expect(parseClientFrame('{"type":"message","text":""}').ok).toBe(false);
    expect(parseClientFrame('{"type":"message","text":"x","idempotency_key":5}').ok).toBe(false);
    expect(parseClientFrame('{"type":"subscribe","topics":[]}').ok).toBe(false);
    expect(parseClientFrame('{"type":"subscribe","topics":"turns"}').ok).toBe(false);
    expect(parseClientFrame('{"type":"auth","token":"t","platform":""}').ok).toBe(false);
  });

  // issue 10: the bounds of every body apply to frames too, before validation (ADR 0013).
  it.each([
    [
      'nested 10 000 deep',
      `{"type":"message","text":"x","ref":${'['.repeat(10_000)}${']'.repeat(10_000)}}`,
      {
        max_depth: 64,
      },
    ],
    [
      'with 10 001 keys',
      `{"type":"ping",${Array.from({ length: 10_000 }, (_, i) => `"k${i}":0`).join(',')}}`,
      {
        max_keys: 10_000,
      },
    ],
    ['with a __proto__ key', '{"type":"message","text":"x","__proto__":{"admin":true}}', { key: '__proto__' }],
  ])('refuses a frame %s as BAD_REQUEST with the bound in the details', (_label, text, details) => {
    const parsed = parseClientFrame(text);
    expect(parsed).toMatchObject({ ok: false, error: { code: 'BAD_REQUEST', details } });
  });

  it('accepts a frame at the depth bound', () => {
    const ref = `${'['.repeat(63)}${']'.repeat(63)}`;
    const parsed = parseClientFrame(`{"type":"ping","ref":${ref}}`);
    // The ref is not a string or number, so the frame is invalid for its fields, not for its shape.
    expect(parsed).toMatchObject({ ok: false, error: { code: 'BAD_REQUEST' } });
    if (!parsed.ok) expect(parsed.error.message).toContain('invalid ping frame');
  });
});

describe('resolveTopics', () => {
  it('deduplicates known topics in request order and lists unknown ones', () => {
    expect(resolveTopics(['tasks', 'turns', 'tasks', 'gossip'])).toEqual({
      topics: ['tasks', 'turns'],
      unknown: ['gossip'],
    });
  });
});

describe('frameErrorOf', () => {
  it('keeps ApiError codes and maps the idempotency conflict and store outages to HTTP code names', () => {
    expect(frameErrorOf(errors.badRequest('nope'))).toEqual({
      code: 'BAD_REQUEST',
      message: 'nope',
      unexpected: false,
    });
    expect(frameErrorOf(errors.rateLimited(3))).toMatchObject({
      code: 'RATE_LIMITED',
      details: { retry_after_seconds: 3 },
    });
    expect(frameErrorOf(new ApiError('BAD_REQUEST', 'bad', [{ path: 'a', message: 'b' }]))).toMatchObject({
      details: { issues: [{ path: 'a', message: 'b' }] },
    });
    expect(frameErrorOf(new IdempotencyConflictError())).toMatchObject({ code: 'CONFLICT', unexpected: false });
    expect(frameErrorOf(new StoreUnavailableError('down'))).toEqual({
      code: 'UNAVAILABLE',
      message: 'storage unavailable',
      details: { reason: 'store_unavailable', retry_after_seconds: 2 },
      unexpected: false,
    });
  });

  it('hides anything else behind INTERNAL_ERROR', () => {
    expect(frameErrorOf(new Error('secret detail'))).toEqual({
      code: 'INTERNAL_ERROR',
      message: 'internal error',
      unexpected: true,
    });
  });
});

describe('turnEventStep', () => {
  it('maps stream events to frames', () => {
    expect(turnEventStep(event('delta', { content: 'he' }), { live: true })).toEqual({
      kind: 'frame',
      frame: { type: 'delta', event_id: 'evt_1', seq: 1, content: 'he' },
    });
    expect(turnEventStep(event('tool_call', { id: 'c1', name: 'n', arguments: '{}' }), { live: false })).toEqual({
      kind: 'frame',
      frame: { type: 'tool_call', event_id: 'evt_1', seq: 1, id: 'c1', name: 'n', arguments: '{}' },
    });
    expect(turnEventStep(event('tool_result', { id: 'c1', name: 'n', result: { ok: 1 } }), { live: true })).toEqual({
      kind: 'frame',
      frame: { type: 'tool_result', event_id: 'evt_1', seq: 1, id: 'c1', name: 'n', result: { ok: 1 } },
    });
    expect(turnEventStep(event('done', { status: 'completed', message: { content: 'x' } }), { live: false })).toEqual({
      kind: 'end',
      frame: { type: 'final', event_id: 'evt_1', seq: 1, status: 'completed', message: { content: 'x' } },
    });
  });

  it('ends on a pause only when seen live; running status is not sent', () => {
    const pause = event('status', { status: 'waiting_approval', message: { content: null } });
    expect(turnEventStep(pause, { live: false })).toEqual({ kind: 'skip' });
    expect(turnEventStep(pause, { live: true })).toEqual({
      kind: 'end',
      frame: { type: 'final', event_id: 'evt_1', seq: 1, status: 'waiting_approval', message: { content: null } },
    });
    expect(turnEventStep(event('status', { status: 'running' }), { live: true })).toEqual({ kind: 'skip' });
  });

  it('turns an error event into an error frame with the ref; unknown codes become INTERNAL_ERROR', () => {
    const failed = event('error', { error: { code: 'UPSTREAM_ERROR', message: 'model provider failed: x' } });
    expect(turnEventStep(failed, { live: true, ref: 'r' })).toEqual({
      kind: 'end',
      frame: {
        type: 'error',
        ref: 'r',
        event_id: 'evt_1',
        seq: 1,
        error: { code: 'UPSTREAM_ERROR', message: 'model provider failed: x' },
      },
    });
    expect(turnEventStep(event('error', { error: { code: 'WHATEVER' } }), { live: true })).toMatchObject({
      frame: { error: { code: 'INTERNAL_ERROR', message: 'the turn failed' } },
    });
  });
});
