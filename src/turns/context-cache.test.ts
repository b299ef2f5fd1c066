import { describe, expect, it } from 'vitest';
import type { ContextEntry } from '../sessions/index.js';
import { ContextCache } from './context-cache.js';

const user = (content: string): ContextEntry => ({
  role: 'user',
  content,
  toolCalls: null,
  toolCallId: null,
  name: null,
});

describe('ContextCache', () => {
  it('answers the window of the same epoch only, keeps the newest `limit` messages, and forgets on request', () => {
    const cache = new ContextCache(3);
    expect(cache.get('s', 0)).toBeUndefined();
    cache.set('s', 0, [user('a'), user('b')]);
    cache.append('s', 0, [user('c'), user('d')]);
    expect(cache.get('s', 0)?.map((m) => m.content)).toEqual(['b', 'c', 'd']);
    expect(cache.get('s', 1)).toBeUndefined(); // another epoch: read from the store
    cache.append('s', 1, [user('e')]); // a message of another epoch drops the window
    expect(cache.get('s', 0)).toBeUndefined();
    cache.set('s', 1, [user('x')]);
    cache.forget('s');
    expect(cache.get('s', 1)).toBeUndefined();
  });

  it('appends nothing to a session it does not hold, hands out copies, and drops the least recently used', () => {
    const cache = new ContextCache(10, 2);
    cache.append('nobody', 0, [user('a')]);
    expect(cache.size).toBe(0);
    cache.set('a', 0, [user('1')]);
    cache.set('b', 0, [user('2')]);
    cache.get('a', 0)!.push(user('not kept')); // a copy
    expect(cache.get('a', 0)).toHaveLength(1);
    cache.set('c', 0, [user('3')]); // `b` is the least recently used now
    expect(cache.get('b', 0)).toBeUndefined();
    expect(cache.get('a', 0)).toHaveLength(1);
    expect(cache.size).toBe(2);
  });
});
