import { afterEach } from 'vitest';

/**
 * Registers an afterEach that runs, last-in first-out, the clean-ups a test
 * added (clients to close, servers to stop); returns the function that adds
 * one. Hooks registered later (e.g. `useHarness`) tear down before these.
 */
export function useCleanups(): (cleanup: () => unknown) => void {
  const cleanups: Array<() => unknown> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });
  return (cleanup) => void cleanups.push(cleanup);
}
