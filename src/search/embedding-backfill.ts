import type { Logger } from '../lib/logger.js';
import type { Store } from '../store/index.js';
import { EmbeddingsError, type EmbeddingsClient } from './embeddings.js';
import { chunksAwaitingEmbedding, forgetOtherModels, storeEmbeddings } from './search.repo.js';
import { encodeVector } from './vectors.js';

/** What the background embedder uses. */
export interface EmbeddingBackfillOptions {
  store: Store;
  client: EmbeddingsClient;
  logger: Logger;
  /** Chunks embedded per request (and per write). */
  batch: number;
  /** First retry delay after a failure, in ms; doubled after each failure up to 10 min. */
  retryMs: number;
}

const MAX_RETRY_MS = 10 * 60_000;

/**
 * The background embedder, owned by the search engine: embeds chunks whose
 * `embedding_model` is null, oldest first, one batch per request, until none
 * is left. At most one loop runs and at most one more is asked for while it
 * runs, so its work is bounded by one batch in memory. On failure it logs
 * and retries after a delay that doubles up to 10 minutes. Its first run
 * forgets vectors of any other model (the configured model changed), so
 * every stored vector is comparable with the query's. `close()` stops it.
 */
export class EmbeddingBackfill {
  readonly #options: EmbeddingBackfillOptions;
  readonly #abort = new AbortController();
  #timer: NodeJS.Timeout | null = null;
  #running: Promise<void> | null = null;
  #again = false;
  #closed = false;
  #invalidated = false;
  #delayMs: number;

  constructor(options: EmbeddingBackfillOptions) {
    this.#options = options;
    this.#delayMs = options.retryMs;
  }

  /**
   * Runs the loop after `delayMs` (now by default) unless it is already
   * running (then a run-now request makes it go round once more) or due
   * sooner. No-op once closed. The timer never keeps the process alive.
   */
  schedule(delayMs = 0): void {
    if (this.#closed) return;
    if (this.#running) {
      if (delayMs === 0) this.#again = true;
      return;
    }
    if (this.#timer) {
      if (delayMs !== 0) return;
      clearTimeout(this.#timer);
    }
    this.#timer = setTimeout(() => {
      this.#timer = null;
      this.#running = this.#loop().then((retryInMs) => {
        this.#running = null;
        if (this.#again) {
          this.#again = false;
          this.schedule();
        } else if (retryInMs !== null) {
          this.schedule(retryInMs);
        }
      });
    }, delayMs);
    this.#timer.unref();
  }

  /**
   * Embeds everything pending now, after the running loop (if any) ends,
   * and resolves with how many chunks were embedded. Rejects with the
   * provider's error on the first failure.
   */
  async drain(): Promise<number> {
    while (this.#running) await this.#running;
    let total = 0;
    for (;;) {
      const done = await this.#step();
      if (done === 0) return total;
      total += done;
    }
  }

  /** Stops the loop: no more runs, the pending timer cleared, the current request aborted; resolves once it ended. Idempotent. */
  async close(): Promise<void> {
    this.#closed = true;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    this.#abort.abort();
    await this.#running;
  }

  /** Embeds until nothing is pending; never rejects. Resolves with the delay before a retry, or null when done. */
  async #loop(): Promise<number | null> {
    try {
      while (!this.#closed && (await this.#step()) > 0) {
        // keep going until nothing is pending
      }
      this.#delayMs = this.#options.retryMs;
      return null;
    } catch (error) {
      if (this.#closed) return null;
      const delay = this.#delayMs;
      this.#options.logger.warn(
        { err: errorText(error), retry_in_ms: delay },
        'background embedding failed; will retry',
      );
      this.#delayMs = Math.min(this.#delayMs * 2, MAX_RETRY_MS);
      return delay;
    }
  }

  /** Embeds one batch; resolves with its size (0: nothing pending). */
  async #step(): Promise<number> {
    const { store, client, batch } = this.#options;
    if (!this.#invalidated) {
      await store.writer.run((trx) => forgetOtherModels(trx, client.model));
      this.#invalidated = true;
    }
    const rows = await chunksAwaitingEmbedding(store.db, batch);
    if (rows.length === 0) return 0;
    const results = await this.#embedRows(rows);
    const embeddings = results.map(({ id, vector }) => ({ id, embedding: vector ? encodeVector(vector) : null }));
    await store.writer.run((trx) => storeEmbeddings(trx, client.model, embeddings));
    return rows.length;
  }

  /** Vectors for `rows`; when the provider refuses the batch, row by row, marking the refused ones. */
  async #embedRows(rows: { id: number; text: string }[]): Promise<{ id: number; vector: Float32Array | null }[]> {
    const { client } = this.#options;
    try {
      const vectors = await client.embed(
        rows.map((row) => row.text),
        this.#abort.signal,
      );
      return rows.map((row, i) => ({ id: row.id, vector: vectors[i] ?? null }));
    } catch (error) {
      if (!(error instanceof EmbeddingsError && error.rejectedInput)) throw error;
    }
    const out: { id: number; vector: Float32Array | null }[] = [];
    for (const row of rows) {
      try {
        const [vector] = await client.embed([row.text], this.#abort.signal);
        out.push({ id: row.id, vector: vector ?? null });
      } catch (error) {
        if (!(error instanceof EmbeddingsError && error.rejectedInput)) throw error;
        this.#options.logger.warn({ err: error.message, chunk_id: row.id }, 'embeddings provider refused a chunk');
        out.push({ id: row.id, vector: null });
      }
    }
    return out;
  }
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
