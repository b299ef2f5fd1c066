import { open, type FileHandle } from 'node:fs/promises';

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

/**
 * A file fsynced through one descriptor kept open (the SQLite WAL): opening
 * and closing it around every fsync cost two more thread-pool round trips
 * and system calls per commit. The WAL keeps its inode while the database is
 * open in this process — SQLite removes it only when the last connection
 * closes, and the store's connection stays open until `close()` — so the
 * descriptor stays valid; checkpoints rewrite or truncate the same file.
 *
 * Opened lazily: a WAL that does not exist yet holds nothing to flush. A
 * failed fsync rejects (the writer reports the commit as not durable); the
 * descriptor is kept.
 */
export class DurableFile {
  #handle: FileHandle | null = null;
  #opening: Promise<FileHandle | null> | null = null;
  #closed = false;

  constructor(private readonly path: string) {}

  /** fdatasync of the file; resolves at once when it does not exist yet. Rejects after `close()`. */
  async sync(): Promise<void> {
    if (this.#closed) throw new Error(`${this.path}: closed`);
    const handle = this.#handle ?? (await this.#open());
    if (handle) await handle.datasync();
  }

  /** Closes the descriptor (after the store's last commit). Idempotent. */
  async close(): Promise<void> {
    this.#closed = true;
    const handle = this.#handle ?? (await this.#opening?.catch(() => null)) ?? null;
    this.#handle = null;
    await handle?.close();
  }

  #open(): Promise<FileHandle | null> {
    this.#opening ??= open(this.path, 'r').then(
      (handle) => {
        this.#opening = null;
        if (this.#closed) {
          void handle.close().catch(() => undefined);
          throw new Error(`${this.path}: closed`);
        }
        this.#handle = handle;
        return handle;
      },
      (error: unknown) => {
        this.#opening = null;
        // No WAL yet (nothing written): nothing to flush.
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
        throw error;
      },
    );
    return this.#opening;
  }
}
