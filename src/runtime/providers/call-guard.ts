import type { ModelResponse } from './provider.js';
import { ProviderError } from './provider-error.js';

/**
 * Bounds one model call in time and ties it to the caller's AbortSignal.
 *
 * The SDKs' own `timeout` only covers the wait for response headers; a
 * server that sends headers and then goes silent mid-stream would hang the
 * turn forever. The guard is an inactivity watchdog over the whole call:
 * it fires when nothing has arrived for `timeoutMs` — before the first byte
 * or between two stream events — so a call never hangs past the timeout,
 * while a long answer that keeps streaming is not cut off.
 */
export class CallGuard {
  /** Pass to the SDK as the request's `signal`. */
  readonly signal: AbortSignal;
  private readonly controller = new AbortController();
  private timer: NodeJS.Timeout | undefined;
  private why: 'timeout' | 'aborted' | null = null;
  private readonly onExternalAbort = (): void => this.stop('aborted');

  constructor(
    private readonly timeoutMs: number,
    private readonly external?: AbortSignal,
  ) {
    this.signal = this.controller.signal;
    if (external?.aborted) {
      this.stop('aborted');
      return;
    }
    external?.addEventListener('abort', this.onExternalAbort, { once: true });
    this.arm();
  }

  /** Why the call was stopped, or null while it may go on. */
  get outcome(): 'timeout' | 'aborted' | null {
    return this.why;
  }

  /** Records progress (a stream event arrived): the inactivity clock restarts. */
  touch(): void {
    if (this.why === null) this.arm();
  }

  /** Releases the timer and the listener on the caller's signal; call once the call settles. */
  dispose(): void {
    clearTimeout(this.timer);
    this.external?.removeEventListener('abort', this.onExternalAbort);
  }

  private arm(): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.stop('timeout'), this.timeoutMs);
  }

  private stop(why: 'timeout' | 'aborted'): void {
    if (this.why !== null) return;
    this.why = why;
    clearTimeout(this.timer);
    this.controller.abort();
  }
}

/** The error for a call the guard stopped: silence past the timeout, or the caller's abort. */
export function stoppedError(label: string, why: 'timeout' | 'aborted', timeoutMs: number): ProviderError {
  return why === 'timeout'
    ? new ProviderError(`${label}: timed out (no data for ${timeoutMs / 1000} s)`, 'timeout')
    : new ProviderError(`${label}: call aborted`, 'aborted');
}

/** Folds a provider's stream items into its answer; `add` returns the text an item adds. */
export interface StreamAccumulator<T> {
  add(item: T): string;
  finish(): ModelResponse;
}

/**
 * Runs one streaming model call under a CallGuard: opens the stream with the
 * guard's signal, feeds every item to the accumulator, forwards text to
 * `onDelta`, and maps failures with `toError`. An error thrown by `onDelta`
 * itself is rethrown unchanged; the guard is always disposed.
 */
export async function runGuardedStream<T>(options: {
  label: string;
  timeoutMs: number;
  signal: AbortSignal | undefined;
  onDelta: ((text: string) => void) | undefined;
  open: (signal: AbortSignal) => Promise<AsyncIterable<T>>;
  accumulator: StreamAccumulator<T>;
  toError: (err: unknown, guard: CallGuard) => ProviderError;
}): Promise<ModelResponse> {
  const guard = new CallGuard(options.timeoutMs, options.signal);
  const callback: { error?: unknown } = {};
  try {
    if (guard.outcome) throw stoppedError(options.label, guard.outcome, options.timeoutMs);
    const stream = await options.open(guard.signal);
    for await (const item of stream) {
      guard.touch();
      const text = options.accumulator.add(item);
      if (text && options.onDelta) {
        try {
          options.onDelta(text);
        } catch (err) {
          callback.error = err;
          throw err;
        }
      }
    }
    // The SDKs end the iteration quietly when their signal fires mid-stream.
    if (guard.outcome) throw stoppedError(options.label, guard.outcome, options.timeoutMs);
    return options.accumulator.finish();
  } catch (err) {
    if ('error' in callback) throw callback.error;
    throw options.toError(err, guard);
  } finally {
    guard.dispose();
  }
}
