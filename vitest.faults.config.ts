import { defineConfig } from 'vitest/config';

/**
 * `npm run test:faults`: the fault tier — property-based fuzzing of every route, store outages and kill -9
 * loops against real processes and databases. About 5 minutes; `.ci/run` runs it after `npm test`.
 */
export default defineConfig({
  test: {
    include: ['test/faults/**/*.test.ts'],
    environment: 'node',
    testTimeout: 600_000,
    hookTimeout: 60_000,
    pool: 'forks',
    fileParallelism: false,
    env: { TZ: 'UTC' },
  },
});
