import { defineConfig } from 'vitest/config';

/**
 * `npm run test:cluster`: the cluster tier — two and three built gateway processes on one PostgreSQL
 * database with a Redis bus and with a NATS bus (ADR 0029). About 2 minutes; `.ci/run` runs it after the
 * fault tier.
 */
export default defineConfig({
  test: {
    include: ['test/cluster/**/*.test.ts'],
    environment: 'node',
    testTimeout: 120_000,
    hookTimeout: 90_000,
    pool: 'forks',
    fileParallelism: false,
    env: { TZ: 'UTC' },
  },
});
