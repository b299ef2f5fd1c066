/**
 * The cost of a model in a breakdown. A model that used tokens but cost nothing has no price (neither the
 * built-in table nor `provider.pricing` of the configuration names it; priced models cost at least a
 * nano-dollar per token): the cell says so and where prices are set, instead of a bare `$0.00` that reads as
 * "free".
 */
import { usd } from '../../ui';
import './cost-cell.css';

/** True when `model` used tokens at no cost: no price entry covers it. */
export function unpriced(row: { input_tokens: number; output_tokens: number; cost_usd: number }): boolean {
  return row.cost_usd === 0 && row.input_tokens + row.output_tokens > 0;
}

/** `$0.12`, or `$0.00 — no price for <model>` for a model without a price entry. */
export function ModelCost({
  model,
  row,
}: {
  model: string;
  row: { input_tokens: number; output_tokens: number; cost_usd: number };
}) {
  if (!unpriced(row)) return <>{usd(row.cost_usd)}</>;
  return (
    <span class="no-price" data-no-price={model}>
      {usd(0)} — no price for {model}
    </span>
  );
}

/** Where prices come from, under a breakdown that has a model without one. */
export function PriceHint({ models }: { models: readonly string[] }) {
  if (models.length === 0) return null;
  return (
    <p class="muted price-hint">
      No price is known for {models.join(', ')}, so its cost shows as $0.00. Prices are set per model under{' '}
      <code>provider.pricing</code> of the configuration (USD per million tokens, e.g.{' '}
      <code>{'{input_per_mtok: 0.5, output_per_mtok: 1.5}'}</code>) on the <a href="#/config">Config</a> page or in the
      config file; a built-in table covers well-known models.
    </p>
  );
}
