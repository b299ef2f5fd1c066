import { describe, expect, it } from 'vitest';
import { ApiError } from '../../http/errors.js';
import { MAX_ID_LENGTH, parseWebhookBody } from './webhook.schema.js';

const raw = (value: unknown): Buffer => Buffer.from(typeof value === 'string' ? value : JSON.stringify(value));

/** The ApiError a parse throws (fails the test when it does not throw one). */
function rejection(body: Buffer): ApiError {
  try {
    parseWebhookBody(body);
  } catch (err) {
    if (err instanceof ApiError) return err;
    throw err;
  }
  throw new Error('expected a 400');
}

describe('parseWebhookBody', () => {
  it('reads the canonical fields, wait defaulting to false', () => {
    expect(parseWebhookBody(raw({ sender_id: 'u1', chat_id: 'c1', text: 'hi' }))).toEqual({
      senderId: 'u1',
      chatId: 'c1',
      text: 'hi',
      wait: false,
      idempotencyKey: undefined,
    });
    expect(
      parseWebhookBody(
        raw({ sender_id: 'u1', chat_id: 'c1', text: 'hi', wait: true, idempotency_key: 'k1', extra: 1 }),
      ),
    ).toEqual({ senderId: 'u1', chatId: 'c1', text: 'hi', wait: true, idempotencyKey: 'k1' });
  });

  it('accepts the aliases user_id and message, and both names when they agree', () => {
    expect(parseWebhookBody(raw({ user_id: 'u2', chat_id: 'c', message: 'yo' }))).toMatchObject({
      senderId: 'u2',
      text: 'yo',
    });
    expect(
      parseWebhookBody(raw({ sender_id: 'u', user_id: 'u', chat_id: 'c', text: 't', message: 't' })),
    ).toMatchObject({ senderId: 'u', text: 't' });
  });

  it.each([
    { name: 'invalid JSON', body: raw('{"sender_id":'), message: 'invalid JSON body' },
    { name: 'not UTF-8', body: Buffer.from([0x7b, 0xff, 0x7d]), message: 'invalid JSON body' },
    { name: 'empty body', body: Buffer.alloc(0), message: 'invalid JSON body' },
    { name: 'an array', body: raw([1, 2]), message: 'request body must be a JSON object' },
    { name: 'a string', body: raw('"text"'), message: 'request body must be a JSON object' },
    { name: 'null', body: raw('null'), message: 'request body must be a JSON object' },
  ])('$name → 400 $message', ({ body, message }) => {
    const err = rejection(body);
    expect(err.status).toBe(400);
    expect(err.message).toBe(message);
  });

  it.each([
    { name: 'missing text', body: { sender_id: 'u', chat_id: 'c' }, paths: ['body.text'] },
    { name: 'empty text', body: { sender_id: 'u', chat_id: 'c', text: '' }, paths: ['body.text'] },
    { name: 'null text', body: { sender_id: 'u', chat_id: 'c', text: null }, paths: ['body.text'] },
    { name: 'missing sender', body: { chat_id: 'c', text: 't' }, paths: ['body.sender_id'] },
    { name: 'missing chat', body: { sender_id: 'u', text: 't' }, paths: ['body.chat_id'] },
    { name: 'numeric chat', body: { sender_id: 'u', chat_id: 7, text: 't' }, paths: ['body.chat_id'] },
    { name: 'numeric alias', body: { user_id: 7, chat_id: 'c', message: 't' }, paths: ['body.user_id'] },
    { name: 'object text', body: { sender_id: 'u', chat_id: 'c', text: { a: 1 } }, paths: ['body.text'] },
    { name: 'string wait', body: { sender_id: 'u', chat_id: 'c', text: 't', wait: 'true' }, paths: ['body.wait'] },
    {
      name: 'numeric key',
      body: { sender_id: 'u', chat_id: 'c', text: 't', idempotency_key: 5 },
      paths: ['body.idempotency_key'],
    },
    {
      name: 'aliases that disagree',
      body: { sender_id: 'u', user_id: 'v', chat_id: 'c', text: 't', message: 'm' },
      paths: ['body.user_id', 'body.message'],
    },
    {
      name: 'over-long ids',
      body: { sender_id: 'u'.repeat(MAX_ID_LENGTH + 1), chat_id: 'c'.repeat(MAX_ID_LENGTH + 1), text: 't' },
      paths: ['body.sender_id', 'body.chat_id'],
    },
    { name: 'everything missing', body: {}, paths: ['body.sender_id', 'body.chat_id', 'body.text'] },
  ])('$name → 400 with details at $paths', ({ body, paths }) => {
    const err = rejection(raw(body));
    expect(err.status).toBe(400);
    expect(err.code).toBe('BAD_REQUEST');
    const details = err.details as Array<{ path: string; message: string }>;
    expect(details.map((d) => d.path)).toEqual(paths);
    for (const detail of details) expect(detail.message.length).toBeGreaterThan(0);
  });
});
