import type { Kysely, Transaction } from 'kysely';
import type { Database } from './database.js';
import { StoreUnavailableError } from './errors.js';

/**
 * One hot-path write. It receives the batch's transaction and must use only
 * that: calling `db` or `writer.run` from inside deadlocks (SQLite has one
 * connection; the writer commits one batch at a time). It may run more than
 * once: when any op of its batch fails, the batch is rolled back and each op
 * is re-run alone, so it must have no side effects outside the transaction.
 */
export type WriteOp<T, DB = Database> = (trx: Transaction<DB>) => Promise<T>;

/** Bounds of a GroupCommit. */
export interface GroupCommitOptions {
  /** Most ops committed in one transaction; default 256. */
  maxBatch?: number;
  /** Most ops waiting for a batch; beyond it `run` rejects with StoreUnavailableError. Default 10000. */
  maxQueue?: number;
  /**
   * Makes committed batches durable (SQLite: fsync of the WAL, off the event
   * loop). A batch's promises resolve only after it resolves; the next batch
   * may commit meanwhile. Absent: the commit itself is durable (PostgreSQL).
   */
  durable?: () => Promise<void>;
}

/** Counters since construction, for tests and benchmarks. */
export interface GroupCommitStats {
  /** Transactions committed (a batch, or one op re-run alone after its batch failed). */
  batchesCommitted: number;
  /** Ops whose transaction committed (their promise resolved). */
  opsCommitted: number;
  /** Ops whose promise was rejected after being queued. */
  opsFailed: number;
  /** Transactions that did not commit (rolled back, or no connection to begin one). */
  failedTransactions: number;
  /** Size of the largest committed transaction, in ops. */
  largestBatch: number;
  /** Ops waiting for a batch right now. */
  queued: number;
}

type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };

interface Pending<DB> {
  op: WriteOp<unknown, DB>;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

/**
 * Group commit: ops submitted in the same tick, and all ops submitted while a
 * batch is committing, are committed together in one transaction, so a burst
 * of N writes costs one commit (one fsync) instead of N. One batch is in
 * flight at a time; ops run in submission order inside it and their promises
 * settle in submission order, only after the commit.
 *
 * Failure: if the batch transaction fails, each of its ops is re-run alone in
 * its own transaction, so only the op at fault rejects (with its own error).
 * If the failure is StoreUnavailableError (database gone, lock timeout), the
 * whole batch rejects with it instead: re-running would only wait out the
 * same timeout once per op.
 */
export class GroupCommit<DB = Database> {
  readonly #db: Kysely<DB>;
  readonly #maxBatch: number;
  readonly #maxQueue: number;
  readonly #durable: (() => Promise<void>) | undefined;
  #observer: ((seconds: number, ops: number) => void) | undefined;
  /** Committed batches waiting to be made durable. */
  readonly #syncing = new Set<Promise<void>>();
  #queue: Pending<DB>[] = [];
  #draining: Promise<void> | null = null;
  #closed = false;
  #closing: Promise<void> | null = null;
  readonly #stats = { batchesCommitted: 0, opsCommitted: 0, opsFailed: 0, failedTransactions: 0, largestBatch: 0 };

  constructor(db: Kysely<DB>, options: GroupCommitOptions = {}) {
    this.#db = db;
    this.#maxBatch = positive('maxBatch', options.maxBatch ?? 256);
    this.#maxQueue = positive('maxQueue', options.maxQueue ?? 10_000);
    this.#durable = options.durable;
  }

  /**
   * Queues `op` for the next batch and resolves with its result once that
   * batch has committed. Rejects with the op's own error when it fails alone,
   * and with StoreUnavailableError when the writer is closed, the queue is
   * full, or the database is unreachable.
   */
  run<T>(op: WriteOp<T, DB>): Promise<T> {
    if (this.#closed) return Promise.reject(new StoreUnavailableError('store is closed'));
    if (this.#queue.length >= this.#maxQueue) {
      return Promise.reject(new StoreUnavailableError('write queue full'));
    }
    return new Promise<T>((resolve, reject) => {
      this.#queue.push({ op, resolve: (value) => resolve(value as T), reject });
      this.#schedule();
    });
  }

  /** Reports each batch's latency, from its start to its ops settling (metrics). */
  observe(observer: (seconds: number, ops: number) => void): void {
    this.#observer = observer;
  }

  /** A snapshot of the counters. */
  get stats(): GroupCommitStats {
    return { ...this.#stats, queued: this.#queue.length };
  }

  /**
   * Stops accepting ops (later `run` calls reject with StoreUnavailableError),
   * then resolves once every op already queued has settled (an op that never
   * settles holds it forever). Idempotent.
   */
  close(): Promise<void> {
    this.#closed = true;
    this.#closing ??= (async () => {
      while (this.#draining) await this.#draining;
      while (this.#syncing.size > 0) await Promise.all([...this.#syncing]);
    })();
    return this.#closing;
  }

  #schedule(): void {
    if (this.#draining) return; // the running drain loop takes new ops as its next batch
    // setImmediate rather than a microtask: ops submitted after awaits within
    // the current turn of the event loop still join the first batch.
    this.#draining = new Promise<void>((resolve) => setImmediate(resolve))
      .then(() => this.#drain())
      .finally(() => {
        this.#draining = null;
        if (this.#queue.length > 0) this.#schedule();
      });
  }

  async #drain(): Promise<void> {
    while (this.#queue.length > 0) {
      await this.#commitBatch(this.#queue.splice(0, this.#maxBatch));
    }
  }

  async #commitBatch(batch: Pending<DB>[]): Promise<void> {
    if (this.#observer) {
      const started = performance.now();
      const observer = this.#observer;
      const last = batch[batch.length - 1]!;
      const { resolve, reject } = last;
      last.resolve = (value) => {
        observer((performance.now() - started) / 1000, batch.length);
        resolve(value);
      };
      last.reject = (error) => {
        observer((performance.now() - started) / 1000, batch.length);
        reject(error);
      };
    }
    let results: unknown[];
    try {
      results = await this.#db.transaction().execute(async (trx) => {
        const out: unknown[] = [];
        for (const pending of batch) out.push(await pending.op(trx));
        return out;
      });
    } catch (error) {
      this.#stats.failedTransactions++;
      if (batch.length === 1 || error instanceof StoreUnavailableError) {
        this.#rejectAll(batch, error);
        return;
      }
      await this.#commitOneByOne(batch);
      return;
    }
    this.#committed(batch.length);
    this.#settleOutcomes(
      batch,
      results.map((value) => ({ ok: true, value })),
    );
  }

  async #commitOneByOne(batch: Pending<DB>[]): Promise<void> {
    const outcomes: Outcome[] = [];
    for (let i = 0; i < batch.length; i++) {
      const pending = batch[i]!;
      try {
        outcomes.push({ ok: true, value: await this.#db.transaction().execute((trx) => pending.op(trx)) });
        this.#committed(1);
      } catch (error) {
        this.#stats.failedTransactions++;
        if (error instanceof StoreUnavailableError) {
          for (let j = i; j < batch.length; j++) outcomes.push({ ok: false, error });
          break;
        }
        outcomes.push({ ok: false, error });
      }
    }
    this.#settleOutcomes(batch, outcomes);
  }

  /** Settles ops in order; when any committed, all of them wait until the commits are durable. */
  #settleOutcomes(batch: Pending<DB>[], outcomes: Outcome[]): void {
    const settle = (durabilityError?: unknown): void => {
      batch.forEach((pending, i) => {
        const outcome = outcomes[i]!;
        if (outcome.ok && durabilityError === undefined) {
          pending.resolve(outcome.value);
        } else {
          this.#stats.opsFailed++;
          pending.reject(
            outcome.ok
              ? new StoreUnavailableError('commit could not be made durable', { cause: durabilityError })
              : outcome.error,
          );
        }
      });
    };
    if (!this.#durable || !outcomes.some((o) => o.ok)) {
      settle();
      return;
    }
    const tracked: Promise<void> = this.#durable()
      .then(
        () => settle(),
        (error: unknown) => settle(error),
      )
      .finally(() => this.#syncing.delete(tracked));
    this.#syncing.add(tracked);
  }

  #committed(ops: number): void {
    this.#stats.batchesCommitted++;
    this.#stats.opsCommitted += ops;
    this.#stats.largestBatch = Math.max(this.#stats.largestBatch, ops);
  }

  #rejectAll(batch: Pending<DB>[], error: unknown): void {
    this.#stats.opsFailed += batch.length;
    for (const pending of batch) pending.reject(error);
  }
}

function positive(name: string, value: number): number {
  if (!Number.isInteger(value) || value < 1) throw new RangeError(`GroupCommit ${name} must be a positive integer`);
  return value;
}
