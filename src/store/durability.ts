import { open } from 'node:fs/promises';

/**
 * Coalescing fsync: callers that arrive while a sync is running share the
 * next one, so N concurrent commits cost at most two fsyncs, and the fsync
 * runs on libuv's thread pool instead of blocking the event loop.
 *
 * Used for SQLite in WAL mode with `synchronous=NORMAL`: a commit writes its
 * WAL frames to the OS without syncing; the writer resolves a batch only after
 * `sync()` has flushed the WAL file. An acknowledged write is therefore on
 * disk — as with `synchronous=FULL` — while the event loop keeps committing
 * the next batch during the fsync.
 */
export class DurabilityBarrier {
  #running: Promise<void> | null = null;
  #next: Promise<void> | null = null;
  #syncs = 0;

  constructor(private readonly flush: () => Promise<void>) {}

  /** Resolves once everything committed before this call is durable. */
  sync(): Promise<void> {
    if (!this.#running) {
      this.#running = this.#start();
      return this.#running;
    }
    // A sync is in flight, but it may have started before our commit: wait for the one after it.
    this.#next ??= this.#running
      .then(
        () => undefined,
        () => undefined,
      )
      .then(() => {
        this.#next = null;
        this.#running = this.#start();
        return this.#running;
      });
    return this.#next;
  }

  /** fsyncs performed so far (tests, benchmarks). */
  get syncs(): number {
    return this.#syncs;
  }

  #start(): Promise<void> {
    const run = this.flush().finally(() => {
      this.#syncs++;
      if (this.#running === run) this.#running = null;
    });
    return run;
  }
}

/** fsyncs a file by path (a fresh descriptor each time: SQLite may recreate its WAL file). */
export async function fsyncPath(path: string): Promise<void> {
  let handle;
  try {
    handle = await open(path, 'r');
  } catch (error) {
    // No WAL file (nothing written yet, or the last connection removed it): nothing to flush.
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw error;
  }
  try {
    await handle.datasync();
  } finally {
    await handle.close();
  }
}
