import { describe, expect, it } from 'vitest';
import { sizeEntry, type ContextBudget, type ContextEntry } from '../sessions/index.js';
import { ContextCache } from './context-cache.js';

const budget: ContextBudget = { maxTokens: 1000, maxMessageTokens: 100, maxMessages: 3 };

const user = (content: string): ContextEntry => ({
  role: 'user',
  content,
  toolCalls: null,
  toolCallId: null,
  name: null,
});
const sized = (content: string) => sizeEntry(user(content), budget);
const texts = (window: ReturnType<ContextCache['get']>) => window?.map((s) => s.entry.content);

describe('ContextCache', () => {
  it('answers the window of the same epoch only, keeps what the budget can send, and forgets on request', () => {
    const cache = new ContextCache(budget);
    expect(cache.get('s', 0)).toBeUndefined();
    cache.set('s', 0, [sized('a'), sized('b')]);
    cache.append('s', 0, [user('c'), user('d')]);
    expect(texts(cache.get('s', 0))).toEqual(['b', 'c', 'd']); // at most 3 messages
    expect(cache.get('s', 1)).toBeUndefined(); // another epoch: read from the store
    cache.append('s', 1, [user('e')]); // a message of another epoch drops the window
    expect(cache.get('s', 0)).toBeUndefined();
    cache.set('s', 1, [sized('x')]);
    cache.forget('s');
    expect(cache.get('s', 1)).toBeUndefined();
    expect(cache.bytes).toBe(0);
  });

  it('appends nothing to a session it does not hold, hands out copies, and drops the least recently used', () => {
    const cache = new ContextCache(budget, 1_000_000, 2);
    cache.append('nobody', 0, [user('a')]);
    expect(cache.size).toBe(0);
    cache.set('a', 0, [sized('1')]);
    cache.set('b', 0, [sized('2')]);
    cache.get('a', 0)!.push(sized('not kept')); // a copy
    expect(cache.get('a', 0)).toHaveLength(1);
    cache.set('c', 0, [sized('3')]); // `b` is the least recently used now
    expect(cache.get('b', 0)).toBeUndefined();
    expect(cache.get('a', 0)).toHaveLength(1);
    expect(cache.size).toBe(2);
  });

  it('is bounded by bytes: a giant message is held cut at the per-message cap, and the oldest windows go first', () => {
    const cache = new ContextCache(budget, 1200);
    cache.set('a', 0, [sized('x'.repeat(1_000_000))]);
    const held = cache.get('a', 0)!;
    expect(held[0]!.bytes).toBeLessThanOrEqual(400 + 16); // 100 tokens of four bytes, and the overhead
    expect(held[0]!.entry.content!.length).toBeLessThanOrEqual(400);
    expect(held[0]!.entry.content).toContain('cut');
    cache.append('a', 0, [user('y'.repeat(500))]);
    cache.set('b', 0, [sized('z'.repeat(350))]);
    cache.set('c', 0, [sized('w'.repeat(350))]); // over 1200 bytes in all: `a` goes
    expect(cache.get('a', 0)).toBeUndefined();
    expect(cache.size).toBe(2);
    expect(cache.bytes).toBeLessThanOrEqual(1200);
  });
});
