/** The security audit reports the subscriptions' relaxed address rules (DECISIONS §20, ADR 0023). */
import { describe, expect, it } from 'vitest';
import { validateConfig } from '../../src/config/config.schema.js';
import { auditConfig } from '../../src/self-audit/self-audit.config.js';

function config(subscriptions: Record<string, unknown>) {
  const result = validateConfig({ subscriptions });
  if (!result.ok) throw new Error(JSON.stringify(result.errors));
  return result.config;
}

const ids = (subscriptions: Record<string, unknown>) =>
  auditConfig(config(subscriptions))
    .map((finding) => finding.id)
    .filter((id) => id.startsWith('subscriptions.'));

describe('subscriptions in the security audit', () => {
  it('reports allow_private_targets and allow_http, each as a warning, and nothing by default', () => {
    expect(ids({})).toEqual([]);
    expect(ids({ allow_private_targets: true })).toEqual(['subscriptions.allow_private_targets']);
    expect(ids({ allow_http: true })).toEqual(['subscriptions.allow_http']);
    const both = auditConfig(config({ allow_private_targets: true, allow_http: true })).filter((f) =>
      f.id.startsWith('subscriptions.'),
    );
    expect(both.map((f) => [f.id, f.severity])).toEqual([
      ['subscriptions.allow_private_targets', 'warning'],
      ['subscriptions.allow_http', 'warning'],
    ]);
  });

  it('validates the retry schedule: durations or seconds, never anything else', () => {
    expect(config({ retry_schedule: ['5s', '5m', '2h', '1d', 30] }).subscriptions.retry_schedule).toEqual([
      5, 300, 7200, 86_400, 30,
    ]);
    expect(config({}).subscriptions.retry_schedule).toEqual([5, 300, 1800, 7200, 18_000, 36_000, 36_000]);
    for (const bad of [[], ['5 minutes'], ['0s'], [-1], ['5x']]) {
      const result = validateConfig({ subscriptions: { retry_schedule: bad } });
      expect(result.ok, JSON.stringify(bad)).toBe(false);
      if (!result.ok) expect(result.errors[0]!.path).toMatch(/^subscriptions\.retry_schedule/);
    }
  });
});
