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
export interface GroupCommitOptions<DB = Database> {
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
  /**
   * Where each commit is durable by itself (PostgreSQL): run first in a
   * transaction none of whose ops needs durability, so its commit does not
   * wait for the log flush (`synchronous_commit = off` for that transaction);
   * the server flushes it within a fraction of a second, or with the next
   * durable commit.
   */
  relax?: (trx: Transaction<DB>) => Promise<void>;
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
  /** True from a transaction the database refused (unreachable, disk full) until one commits durably again. */
  writesFailing: boolean;
  /** Ops waiting for a batch right now. */
  queued: number;
}

type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };

interface Pending<DB> {
  op: WriteOp<unknown, DB>;
  /** Settles only once its commit is durable (the default); false: once it has committed. */
  durable: boolean;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

/** How one op is acknowledged. */
export interface RunOptions {
  /**
   * True (the default): the op's promise resolves once its transaction has
   * committed and been made durable. False: once it has committed (visible
   * to readers); a later durable commit makes it durable too (SQLite's WAL
   * and PostgreSQL's log are written in commit order), and so does `sync()`
   * where durability is a separate flush (`syncsApart`). For writes nobody is
   * told about before something durable follows: streamed turn events, a
   * waited message's acceptance that its turn's claim makes durable.
   */
  durable?: boolean;
  /**
   * Joins the next batch ahead of ops queued without it (their order among
   * themselves kept): for an acknowledgement a caller waits for, so a backlog
   * of background writes does not hold it up. Only for ops that do not depend
   * on the effects of ops queued before them.
   */
  urgent?: boolean;
}

/**
 * Group commit: ops submitted in the same tick, and all ops submitted while a
 * batch is committing, are committed together in one transaction, so a burst
 * of N writes costs one commit (one fsync) instead of N. One batch is in
 * flight at a time; ops run in submission order inside it and their promises
 * settle only after the commit: those that need not be durable (`RunOptions`)
 * at once, in submission order, the others in submission order once the
 * batch is durable. A batch without a durable op costs no fsync.
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
  readonly #relax: ((trx: Transaction<DB>) => Promise<void>) | undefined;
  #observer: ((seconds: number, ops: number) => void) | undefined;
  /** Committed batches waiting to be made durable. */
  readonly #syncing = new Set<Promise<void>>();
  #queue: Pending<DB>[] = [];
  /** Ops queued as `urgent`: they lead the next batch. */
  #urgent: Pending<DB>[] = [];
  #draining: Promise<void> | null = null;
  #closed = false;
  #closing: Promise<void> | null = null;
  readonly #stats = { batchesCommitted: 0, opsCommitted: 0, opsFailed: 0, failedTransactions: 0, largestBatch: 0 };
  /** The last transaction's fate: the database refused it (StoreUnavailableError), or it committed durably. */
  #writesFailing = false;
  readonly #restored = new Set<() => void>();

  constructor(db: Kysely<DB>, options: GroupCommitOptions<DB> = {}) {
    this.#db = db;
    this.#maxBatch = positive('maxBatch', options.maxBatch ?? 256);
    this.#maxQueue = positive('maxQueue', options.maxQueue ?? 10_000);
    this.#durable = options.durable;
    this.#relax = options.relax;
  }

  /**
   * Queues `op` for the next batch and resolves with its result once that
   * batch has committed. Rejects with the op's own error when it fails alone,
   * and with StoreUnavailableError when the writer is closed, the queue is
   * full, or the database is unreachable.
   */
  run<T>(op: WriteOp<T, DB>, options: RunOptions = {}): Promise<T> {
    if (this.#closed) return Promise.reject(new StoreUnavailableError('store is closed'));
    if (this.#queue.length + this.#urgent.length >= this.#maxQueue) {
      return Promise.reject(new StoreUnavailableError('write queue full'));
    }
    return new Promise<T>((resolve, reject) => {
      const pending = {
        op,
        durable: options.durable ?? true,
        resolve: (value: unknown) => resolve(value as T),
        reject,
      };
      (options.urgent ? this.#urgent : this.#queue).push(pending);
      this.#schedule();
    });
  }

  /**
   * True where durability is a flush apart from the commit (SQLite's WAL
   * fsync): a commit made with `durable: false` can then be made durable
   * later by `sync()`, overlapping other work meanwhile. False where each
   * durable commit waits for its own flush (PostgreSQL): a write that must be
   * durable before an effect is committed durably.
   */
  get syncsApart(): boolean {
    return this.#durable !== undefined;
  }

  /**
   * Where `syncsApart`: resolves once every transaction committed so far is
   * durable, or rejects with StoreUnavailableError when that fails. Elsewhere
   * it resolves at once (durable commits are; relaxed ones follow within the
   * server's flush delay).
   */
  sync(): Promise<void> {
    if (!this.#durable) return Promise.resolve();
    return this.#durable().then(
      () => this.#setWritesFailing(false),
      (error: unknown) => {
        this.#setWritesFailing(true);
        throw new StoreUnavailableError('commit could not be made durable', { cause: error });
      },
    );
  }

  /** Reports each batch's latency, from its start to its ops settling (metrics). */
  observe(observer: (seconds: number, ops: number) => void): void {
    this.#observer = observer;
  }

  /** A snapshot of the counters. */
  get stats(): GroupCommitStats {
    return { ...this.#stats, queued: this.#queue.length + this.#urgent.length, writesFailing: this.#writesFailing };
  }

  /**
   * True when the last transaction that reached the database was refused for
   * being unavailable (connection gone, disk full, durability lost) and none
   * has committed since: health reports it (ADR 0014). A full queue or a
   * statement's own error does not count.
   */
  get writesFailing(): boolean {
    return this.#writesFailing;
  }

  /** Calls `listener` each time a transaction commits durably after `writesFailing`; returns the unsubscribe. */
  onWritesRestored(listener: () => void): () => void {
    this.#restored.add(listener);
    return () => this.#restored.delete(listener);
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
        if (this.#queue.length + this.#urgent.length > 0) this.#schedule();
      });
  }

  async #drain(): Promise<void> {
    while (this.#queue.length + this.#urgent.length > 0) {
      const batch = this.#urgent.splice(0, this.#maxBatch);
      if (batch.length < this.#maxBatch) batch.push(...this.#queue.splice(0, this.#maxBatch - batch.length));
      await this.#commitBatch(batch);
    }
  }

  async #commitBatch(batch: Pending<DB>[]): Promise<void> {
    if (this.#observer) {
      // Reported once every op of the batch has settled (the durable ones settle last).
      const started = performance.now();
      const observer = this.#observer;
      let unsettled = batch.length;
      const settled = (): void => {
        if (--unsettled === 0) observer((performance.now() - started) / 1000, batch.length);
      };
      for (const pending of batch) {
        const { resolve, reject } = pending;
        pending.resolve = (value) => {
          settled();
          resolve(value);
        };
        pending.reject = (error) => {
          settled();
          reject(error);
        };
      }
    }
    let results: unknown[];
    try {
      const relax = batch.every((pending) => !pending.durable) ? this.#relax : undefined;
      results = await this.#db.transaction().execute(async (trx) => {
        if (relax) await relax(trx);
        const out: unknown[] = [];
        for (const pending of batch) out.push(await pending.op(trx));
        return out;
      });
    } catch (error) {
      this.#stats.failedTransactions++;
      if (error instanceof StoreUnavailableError) this.#setWritesFailing(true);
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
        const relax = pending.durable ? undefined : this.#relax;
        const value = await this.#db.transaction().execute(async (trx) => {
          if (relax) await relax(trx);
          return pending.op(trx);
        });
        outcomes.push({ ok: true, value });
        this.#committed(1);
      } catch (error) {
        this.#stats.failedTransactions++;
        if (error instanceof StoreUnavailableError) {
          this.#setWritesFailing(true);
          for (let j = i; j < batch.length; j++) outcomes.push({ ok: false, error });
          break;
        }
        outcomes.push({ ok: false, error });
      }
    }
    this.#settleOutcomes(batch, outcomes);
  }

  /**
   * Settles ops in submission order: those that need not be durable at once;
   * the others — failures included — once the batch's commits are durable
   * (at once when none of them committed).
   */
  #settleOutcomes(batch: Pending<DB>[], outcomes: Outcome[]): void {
    const settleOne = (pending: Pending<DB>, outcome: Outcome, durabilityError?: unknown): void => {
      if (outcome.ok && durabilityError === undefined) {
        pending.resolve(outcome.value);
        return;
      }
      this.#stats.opsFailed++;
      pending.reject(
        outcome.ok
          ? new StoreUnavailableError('commit could not be made durable', { cause: durabilityError })
          : outcome.error,
      );
    };
    const syncing = this.#durable !== undefined && batch.some((pending, i) => pending.durable && outcomes[i]!.ok);
    batch.forEach((pending, i) => {
      if (!syncing || !pending.durable) settleOne(pending, outcomes[i]!);
    });
    if (!syncing) {
      if (outcomes.some((o) => o.ok)) this.#setWritesFailing(false);
      return;
    }
    const settleDurable = (durabilityError?: unknown): void => {
      this.#setWritesFailing(durabilityError !== undefined);
      batch.forEach((pending, i) => {
        if (pending.durable) settleOne(pending, outcomes[i]!, durabilityError);
      });
    };
    const durable = this.#durable;
    if (!durable) return;
    const tracked: Promise<void> = durable()
      .then(
        () => settleDurable(),
        (error: unknown) => settleDurable(error),
      )
      .finally(() => this.#syncing.delete(tracked));
    this.#syncing.add(tracked);
  }

  #setWritesFailing(failing: boolean): void {
    const restored = this.#writesFailing && !failing;
    this.#writesFailing = failing;
    if (!restored) return;
    for (const listener of this.#restored) {
      try {
        listener();
      } catch {
        // a listener must not break the writer
      }
    }
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
