/**
 * Calls `probe` every `intervalMs` until it returns something other than
 * `undefined`; rejects with `what` (and the last observation) after `timeoutMs`.
 */
export async function pollUntil<T>(
  what: string,
  probe: () => Promise<T | undefined>,
  options: { timeoutMs?: number; intervalMs?: number; describe?: () => string } = {},
): Promise<T> {
  const deadline = Date.now() + (options.timeoutMs ?? 10_000);
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() >= deadline) {
      throw new Error(`gave up waiting for ${what}${options.describe ? `: ${options.describe()}` : ''}`);
    }
    await new Promise((resolve) => setTimeout(resolve, options.intervalMs ?? 100));
  }
}

/** Polls `probe` every 20 ms until it is truthy; fails with `what` after `ms` (`pollUntil` for truthy answers). */
export function until<T>(what: string, probe: () => T | Promise<T>, ms = 8000): Promise<NonNullable<T>> {
  return pollUntil(what, async () => ((await probe()) || undefined) as NonNullable<T> | undefined, {
    timeoutMs: ms,
    intervalMs: 20,
  });
}
