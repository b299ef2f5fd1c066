import { describe, expect, it } from 'vitest';
import { ApiError } from '../http/errors.js';
import type { Principal } from '../http/route.js';
import { ManualClock } from '../lib/clock.js';
import { createIdGenerator } from '../lib/ids.js';
import type { TurnRecord } from '../turns/index.js';
import { completionBody } from './openai.schema.js';
import { answerOf, chooseSession, inboundOf } from './openai.service.js';

const principal: Principal = { role: 'api', id: 'default', fingerprint: 'tok_12345678', scope: 'a'.repeat(64) };
const other: Principal = { role: 'api', id: 'default', fingerprint: 'tok_87654321', scope: 'b'.repeat(64) };
const ids = createIdGenerator(new ManualClock(Date.UTC(2026, 10, 23)));

function body(value: Record<string, unknown>) {
  return completionBody.parse({ model: 'gatehouse', ...value });
}

function turn(partial: Partial<TurnRecord>): TurnRecord {
  return {
    seq: 1,
    eventId: 'evt_1',
    sessionKey: 'gateway:openai:x',
    status: 'completed',
    currentTool: null,
    response: 'hi',
    terminationReason: 'completed',
    contextEpoch: 0,
    acceptedAt: '2026-11-23T10:00:00.500Z',
    startedAt: null,
    finishedAt: null,
    updatedAt: '2026-11-23T10:00:01.000Z',
    payload: null,
    result: null,
    pending: null,
    owner: null,
    ...partial,
  };
}

describe('chooseSession', () => {
  const plain = body({ messages: [{ role: 'user', content: 'x' }] });

  it('X-Session-Key wins over user; user names the session otherwise', () => {
    expect(chooseSession({ user: 'u' }, { 'x-session-key': 'h' }, principal, ids)).toEqual({
      chatId: 'h',
      named: true,
    });
    expect(chooseSession({ user: 'u' }, {}, principal, ids)).toEqual({ chatId: 'u', named: true });
  });

  it('a fresh session is new each call, or derived from principal and key for a keyed call', () => {
    const a = chooseSession(plain, {}, principal, ids);
    const b = chooseSession(plain, {}, principal, ids);
    expect(a.named).toBe(false);
    expect(a.chatId).toMatch(/^~chat_/);
    expect(b.chatId).not.toBe(a.chatId);
    const keyed = chooseSession(plain, { 'idempotency-key': 'k' }, principal, ids);
    expect(keyed.chatId).toMatch(/^~k[0-9a-f]{32}$/);
    expect(chooseSession(plain, { 'x-idempotency-key': 'k' }, principal, ids)).toEqual(keyed);
    expect(chooseSession(plain, { 'idempotency-key': 'k' }, other, ids).chatId).not.toBe(keyed.chatId);
    expect(chooseSession(plain, { 'idempotency-key': 'k2' }, principal, ids).chatId).not.toBe(keyed.chatId);
  });

  it('refuses a bad X-Session-Key and conflicting copies of it', () => {
    for (const value of ['', '~x', 'a\u0001b', 'x'.repeat(201)]) {
      expect(() => chooseSession(plain, { 'x-session-key': value }, principal, ids)).toThrow(ApiError);
    }
    expect(() => chooseSession(plain, { 'x-session-key': ['a', 'b'] }, principal, ids)).toThrow(/conflicting/);
  });
});

describe('inboundOf', () => {
  const caller = { principal, headers: {} };

  it('a fresh session carries the earlier messages as context, developer as system, the newest 100', () => {
    const earlier = Array.from({ length: 150 }, (_, i) => ({ role: 'user', content: `m${i}` }));
    const request = body({
      messages: [{ role: 'developer', content: 'dev' }, ...earlier, { role: 'user', content: 'now' }],
    });
    const inbound = inboundOf(request, { chatId: '~chat_1', named: false }, caller);
    expect(inbound).toMatchObject({ sessionKey: 'gateway:openai:~chat_1', text: 'now', identity: 'skip', wait: true });
    expect(inbound.context).toHaveLength(100);
    expect(inbound.context![0]).toEqual({ role: 'user', content: 'm50' });
    const short = inboundOf(
      body({
        messages: [
          { role: 'developer', content: 'dev' },
          { role: 'user', content: 'now' },
        ],
      }),
      { chatId: '~chat_2', named: false },
      caller,
    );
    expect(short.context).toEqual([{ role: 'system', content: 'dev' }]);
  });

  it('a named session ignores the request’s earlier messages', () => {
    const request = body({
      messages: [
        { role: 'user', content: 'old' },
        { role: 'user', content: 'new' },
      ],
    });
    const inbound = inboundOf(request, { chatId: 'alice', named: true }, caller);
    expect(inbound.context).toBeUndefined();
    expect(inbound.sessionKey).toBe('gateway:openai:alice');
  });

  it('the last message must be a non-empty user message', () => {
    const session = { chatId: 'x', named: true };
    const issueOf = (messages: unknown[]): string => {
      try {
        inboundOf(body({ messages }), session, caller);
      } catch (err) {
        return JSON.stringify((err as ApiError).details);
      }
      return 'no error';
    };
    expect(issueOf([{ role: 'system', content: 's' }])).toContain('the last message must have role user');
    expect(issueOf([{ role: 'user', content: ' ' }])).toContain('must not be empty');
  });
});

describe('answerOf', () => {
  const result = (input: number, output: number) => ({
    message: { cost: { input_tokens: input, output_tokens: output, total_usd: 0 }, content: 'hi' },
  });

  it('completed → the reply, stop, the usage', () => {
    expect(answerOf(turn({ result: result(3, 4) }))).toEqual({
      content: 'hi',
      finishReason: 'stop',
      usage: { prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 },
      notice: false,
    });
  });

  it('incomplete → length; without a reply a note with the reason', () => {
    expect(answerOf(turn({ status: 'incomplete', response: 'part' })).finishReason).toBe('length');
    const note = answerOf(turn({ status: 'incomplete', response: null, terminationReason: 'budget_exceeded' }));
    expect(note).toMatchObject({ finishReason: 'length', notice: true });
    expect(note.content).toContain('budget_exceeded');
  });

  it('pauses and interruptions → stop with a note naming the event', () => {
    const approval = answerOf(turn({ status: 'waiting_approval', response: null, currentTool: 'risky' }));
    expect(approval).toMatchObject({ finishReason: 'stop', notice: true });
    expect(approval.content).toMatch(/approve.*"risky".*evt_1/s);
    const question = answerOf(turn({ status: 'waiting_clarification', response: 'Which one?' }));
    expect(question.content).toMatch(/^Which one\?[\s\S]*evt_1/);
    const interrupted = answerOf(turn({ status: 'interrupted', response: null, terminationReason: 'shutdown' }));
    expect(interrupted.content).toMatch(/interrupted \(shutdown\).*evt_1/);
  });

  it('failed → the API error (502 for the provider)', () => {
    const failed = turn({
      status: 'failed',
      response: null,
      result: { error: { code: 'UPSTREAM_ERROR', message: 'model provider failed: boom' } },
    });
    expect(() => answerOf(failed)).toThrow(expect.objectContaining({ status: 502 }) as Error);
  });
});
