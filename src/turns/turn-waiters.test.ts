import { describe, expect, it } from 'vitest';
import { RECENT_OUTCOME_MAX_CHARS, withinChars } from './turn-waiters.js';

describe('withinChars', () => {
  it('counts strings, keys and scalars, and stops at the limit', () => {
    expect(withinChars({ a: 'xyz' }, 4)).toBe(true);
    expect(withinChars({ a: 'xyz' }, 3)).toBe(false);
    expect(withinChars([null, 1, true], 24)).toBe(true);
    expect(withinChars([null, 1, true], 23)).toBe(false);
  });

  it('refuses a result carrying a large tool result', () => {
    const result = { response: 'ok', tool_calls: [{ name: 't', result: 'x'.repeat(RECENT_OUTCOME_MAX_CHARS) }] };
    expect(withinChars(result, RECENT_OUTCOME_MAX_CHARS)).toBe(false);
    expect(withinChars({ response: 'ok', tool_calls: [] }, RECENT_OUTCOME_MAX_CHARS)).toBe(true);
  });
});
