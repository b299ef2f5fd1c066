import { describe, expect, it } from 'vitest';
import { BUILTIN_PRICES, costNanoUsd, priceFor } from './pricing.js';

describe('priceFor', () => {
  it('finds built-in entries by exact name', () => {
    expect(priceFor('gpt-4o-mini', {})).toEqual({ input_per_mtok: 0.15, output_per_mtok: 0.6 });
    expect(priceFor('claude-sonnet-4-5', {})).toEqual({ input_per_mtok: 3, output_per_mtok: 15 });
  });

  it('matches dated model names by longest prefix', () => {
    expect(priceFor('gpt-4o-2024-08-06', {})).toEqual(BUILTIN_PRICES['gpt-4o']);
    expect(priceFor('gpt-4o-mini-2024-07-18', {})).toEqual(BUILTIN_PRICES['gpt-4o-mini']);
    expect(priceFor('gpt-4.1-mini-2025-04-14', {})).toEqual(BUILTIN_PRICES['gpt-4.1-mini']);
    expect(priceFor('claude-haiku-4-5-20251001', {})).toEqual(BUILTIN_PRICES['claude-haiku-4-5']);
    expect(priceFor('openai/gpt-4o', {})).toEqual(BUILTIN_PRICES['gpt-4o']);
  });

  it('only matches a prefix at a name boundary', () => {
    expect(priceFor('o30', {})).toBeNull();
    expect(priceFor('gpt-4o2', {})).toBeNull();
  });

  it('lets overrides win and extend the table', () => {
    const overrides = {
      'gpt-4o': { input_per_mtok: 1, output_per_mtok: 2 },
      'llama3.1': { input_per_mtok: 0.01, output_per_mtok: 0.02 },
    };
    expect(priceFor('gpt-4o', overrides)).toEqual({ input_per_mtok: 1, output_per_mtok: 2 });
    expect(priceFor('gpt-4o-2024-11-20', overrides)).toEqual({ input_per_mtok: 1, output_per_mtok: 2 });
    // an override of the shorter name does not capture the longer built-in entry
    expect(priceFor('gpt-4o-mini', overrides)).toEqual(BUILTIN_PRICES['gpt-4o-mini']);
    expect(priceFor('llama3.1:8b', overrides)).toEqual({ input_per_mtok: 0.01, output_per_mtok: 0.02 });
  });

  it('returns null for echo and unknown models', () => {
    expect(priceFor('echo', {})).toBeNull();
    expect(priceFor('mistral-large', {})).toBeNull();
  });
});

describe('costNanoUsd', () => {
  it('computes integer nano-dollars', () => {
    const price = { input_per_mtok: 0.15, output_per_mtok: 0.6 };
    // 1000 × 0.15 $/M = 0.00015 $ = 150 000 n$; 500 × 0.6 $/M = 0.0003 $ = 300 000 n$
    expect(costNanoUsd({ input_tokens: 1000, output_tokens: 500 }, price)).toBe(450_000);
    expect(costNanoUsd({ input_tokens: 1, output_tokens: 0 }, price)).toBe(150);
    expect(
      costNanoUsd({ input_tokens: 1_000_000, output_tokens: 1_000_000 }, { input_per_mtok: 3, output_per_mtok: 15 }),
    ).toBe(18_000_000_000);
  });

  it('sums exactly where float dollars would drift', () => {
    const price = { input_per_mtok: 0.1, output_per_mtok: 0.3 };
    let nano = 0;
    let dollars = 0;
    for (let i = 0; i < 1000; i++) {
      nano += costNanoUsd({ input_tokens: 7, output_tokens: 3 }, price);
      dollars += (7 * 0.1 + 3 * 0.3) / 1e6;
    }
    expect(Number.isInteger(nano)).toBe(true);
    expect(nano).toBe(1000 * (700 + 900));
    expect(dollars).not.toBe(nano / 1e9); // the float sum is off; the integer one is not
  });

  it('costs nothing without a price', () => {
    expect(costNanoUsd({ input_tokens: 123, output_tokens: 456 }, null)).toBe(0);
    expect(costNanoUsd({ input_tokens: 123, output_tokens: 456 }, priceFor('echo', {}))).toBe(0);
  });
});
