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
