import type { Usage } from './provider.js';

/** USD per million tokens, the unit providers publish prices in. */
export interface Price {
  input_per_mtok: number;
  output_per_mtok: number;
}

/**
 * Built-in list prices (USD per million tokens, standard tier, no caching or
 * batch discounts), as publicly listed at the time of writing. Prices change:
 * `provider.pricing` in the configuration overrides or extends this table
 * per model, and a model found in neither costs 0.
 */
export const BUILTIN_PRICES: Readonly<Record<string, Price>> = {
  // OpenAI
  'gpt-4o': { input_per_mtok: 2.5, output_per_mtok: 10 },
  'gpt-4o-mini': { input_per_mtok: 0.15, output_per_mtok: 0.6 },
  'gpt-4.1': { input_per_mtok: 2, output_per_mtok: 8 },
  'gpt-4.1-mini': { input_per_mtok: 0.4, output_per_mtok: 1.6 },
  'gpt-4.1-nano': { input_per_mtok: 0.1, output_per_mtok: 0.4 },
  'gpt-5': { input_per_mtok: 1.25, output_per_mtok: 10 },
  'gpt-5-mini': { input_per_mtok: 0.25, output_per_mtok: 2 },
  'gpt-5-nano': { input_per_mtok: 0.05, output_per_mtok: 0.4 },
  'gpt-5.1': { input_per_mtok: 1.25, output_per_mtok: 10 },
  o3: { input_per_mtok: 2, output_per_mtok: 8 },
  'o3-mini': { input_per_mtok: 1.1, output_per_mtok: 4.4 },
  'o4-mini': { input_per_mtok: 1.1, output_per_mtok: 4.4 },
  // Anthropic
  'claude-opus-4-5': { input_per_mtok: 5, output_per_mtok: 25 },
  'claude-opus-4-1': { input_per_mtok: 15, output_per_mtok: 75 },
  'claude-opus-4': { input_per_mtok: 15, output_per_mtok: 75 },
  'claude-sonnet-4-5': { input_per_mtok: 3, output_per_mtok: 15 },
  'claude-sonnet-4': { input_per_mtok: 3, output_per_mtok: 15 },
  'claude-haiku-4-5': { input_per_mtok: 1, output_per_mtok: 5 },
  'claude-3-5-haiku': { input_per_mtok: 0.8, output_per_mtok: 4 },
};

/** Characters that may follow a table entry in a longer model name (`gpt-4o-2024-08-06`, `llama3:8b`). */
const NAME_BOUNDARY = /^[-:@]/;

/**
 * The price of `model`: an exact override first, otherwise the longest entry
 * of overrides ∪ built-ins (overrides winning on equal names) that is the
 * whole name or a prefix of it followed by `-`, `:` or `@` — so
 * `gpt-4o-2024-08-06` finds `gpt-4o`, `gpt-4o-mini-2024-07-18` finds
 * `gpt-4o-mini`, and `o3` does not match `o30`. A `vendor/` prefix
 * (`openai/gpt-4o`) is ignored. Echo and unknown models → null (cost 0).
 */
export function priceFor(model: string, overrides: Readonly<Record<string, Price>>): Price | null {
  const exact = overrides[model];
  if (exact) return { ...exact };
  const name = model.slice(model.lastIndexOf('/') + 1).toLowerCase();
  const table = new Map<string, Price>();
  for (const [key, price] of Object.entries(BUILTIN_PRICES)) table.set(key.toLowerCase(), price);
  for (const [key, price] of Object.entries(overrides)) table.set(key.toLowerCase(), price);
  let best: { key: string; price: Price } | null = null;
  for (const [key, price] of table) {
    const matches = name === key || (name.startsWith(key) && NAME_BOUNDARY.test(name.slice(key.length)));
    if (matches && (!best || key.length > best.key.length)) best = { key, price };
  }
  return best ? { ...best.price } : null;
}

/**
 * Cost of one call in integer nano-dollars (1e-9 USD), so that sums over
 * turns, sessions and days are exact: `round(input × input_per_mtok × 1000 +
 * output × output_per_mtok × 1000)`. A null price costs 0.
 */
export function costNanoUsd(usage: Usage, price: Price | null): number {
  if (!price) return 0;
  return Math.round(
    usage.input_tokens * price.input_per_mtok * 1000 + usage.output_tokens * price.output_per_mtok * 1000,
  );
}
