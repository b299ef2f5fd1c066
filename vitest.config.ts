import { defineConfig } from 'vitest/config';

/** `npm test`: unit, store-contract, route and end-to-end tests. The fault tier runs apart (vitest.faults.config.ts). */
export default defineConfig({
  test: {
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
    exclude: ['test/faults/**', 'test/cluster/**', 'node_modules/**', 'dist/**'],
    environment: 'node',
    testTimeout: 20_000,
    hookTimeout: 30_000,
    pool: 'forks',
    env: { TZ: 'UTC' },
  },
});
