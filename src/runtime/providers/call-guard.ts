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
  /** What came before the stream was left at the reply cap: the text so far, the usage and model seen. */
  sofar(): Pick<ModelResponse, 'content' | 'usage' | 'model'>;
}

/** The first `maxBytes` bytes of `text` as UTF-8, never splitting a character. */
export function cutUtf8(text: string, maxBytes: number): string {
  const bytes = Buffer.from(text, 'utf8');
  if (bytes.length <= maxBytes) return text;
  let end = Math.max(0, maxBytes);
  while (end > 0 && (bytes[end]! & 0xc0) === 0x80) end--; // back to the start of a character
  return bytes.subarray(0, end).toString('utf8');
}

/** A reply stopped at the cap: its text cut there, its unfinished tool calls dropped. */
function cutReply(sofar: Pick<ModelResponse, 'content' | 'usage' | 'model'>, maxBytes: number): ModelResponse {
  return {
    ...sofar,
    content: sofar.content === null ? null : cutUtf8(sofar.content, maxBytes),
    tool_calls: [],
    finish_reason: 'length',
    cut: true,
  };
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
  /** Past this many bytes of text the stream is left and the answer cut there (`ModelRequest.maxReplyBytes`). */
  maxReplyBytes?: number | undefined;
  open: (signal: AbortSignal) => Promise<AsyncIterable<T>>;
  accumulator: StreamAccumulator<T>;
  toError: (err: unknown, guard: CallGuard) => ProviderError;
}): Promise<ModelResponse> {
  const guard = new CallGuard(options.timeoutMs, options.signal);
  const callback: { error?: unknown } = {};
  try {
    if (guard.outcome) throw stoppedError(options.label, guard.outcome, options.timeoutMs);
    const stream = await options.open(guard.signal);
    const cap = options.maxReplyBytes ?? Infinity;
    let bytes = 0;
    for await (const item of stream) {
      guard.touch();
      let text = options.accumulator.add(item);
      if (!text) continue;
      bytes += Buffer.byteLength(text, 'utf8');
      const over = bytes > cap;
      // The delta that crosses the cap goes out cut, so what was streamed is what is kept.
      if (over) text = cutUtf8(text, Buffer.byteLength(text, 'utf8') - (bytes - cap));
      if (text && options.onDelta) {
        try {
          options.onDelta(text);
        } catch (err) {
          callback.error = err;
          throw err;
        }
      }
      // Leaving the loop closes the stream (the SDK aborts its request).
      if (over) return cutReply(options.accumulator.sofar(), cap);
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
