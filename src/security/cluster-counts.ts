import type { Clock } from '../lib/clock.js';
import { isoTime } from '../lib/clock.js';
import type { Logger } from '../lib/logger.js';
import type { Store } from '../store/index.js';
import { type CountRow, deleteInstanceCounts, pruneCounts, readOthers, writeCounts } from './cluster-counts.repo.js';

/**
 * Cluster-wide counts (ADR 0028). Where several gateway processes share one
 * database (`store.shared`, PostgreSQL), each keeps counting in memory, as a
 * single process does, and an exchanger writes its counts to
 * `cluster_counts` every ~250 ms (one batched upsert) and reads back the sums
 * of the other live processes (one select). A decision adds the others'
 * last-known counts to the local ones: the request path never waits for the
 * database, and the overshoot is bounded by what the other processes admit
 * within one exchange (the ADR gives the numbers).
 *
 * Window counts (rate limits) are keyed by their window's start, so a new
 * window starts from zero everywhere; gauges (the webhook's pending turns)
 * are current values. Rows of a process without a recent heartbeat
 * (`gateway_instances`) count for nothing; rows of past windows and gauges
 * of dead processes are pruned. If the database cannot be used, every
 * decision falls back to this process's own counts (logged once).
 */

/** The window counts as a rate limiter sees them. */
export interface SharedWindows {
  /** The other live processes' last-known count of `key` in the window starting at `windowStart` (ms). */
  others(key: string, windowStart: number): number;
  /** This process's count of `key` in the window starting at `windowStart` is now `count`. */
  report(key: string, windowStart: number, count: number): void;
}

/** A gauge as its owner sees it. */
export interface SharedGauge {
  /** The sum of the other live processes' last reported values; 0 when unknown or too old. */
  others(): number;
}

/** Registers a gauge: `local` is read at every exchange. */
export type GaugeRegistry = (name: string, local: () => number) => SharedGauge;

/** Default pause between two exchanges. */
export const DEFAULT_EXCHANGE_MS = 250;
/** Default window length: the rate limits' minute. */
const DEFAULT_WINDOW_MS = 60_000;
/** Default cap on window keys held (reported and read). */
const DEFAULT_MAX_KEYS = 50_000;
/** Longest pause between two prunings of the table. */
const PRUNE_EVERY_MS = 5_000;
/** Longest `close()` waits to delete this process's rows. */
const CLOSE_TIMEOUT_MS = 1_000;
/**
 * How often the timer reads the others' counts while the last read found no other process (a gateway alone
 * on its database): a peer that starts is counted within this time, and a lone gateway reads 4× less.
 */
const ALONE_READ_MS = 2_000;

/** Options of {@link ClusterCounts}. */
export interface ClusterCountsOptions {
  store: Pick<Store, 'db' | 'writer'>;
  /** This process among those sharing the database (`cluster.instance_id`, as registered in `gateway_instances`). */
  instanceId: string;
  clock: Clock;
  logger: Pick<Logger, 'warn' | 'info'>;
  /** A process whose heartbeat is older than this is dead: its counts stop counting (`cluster.takeover_after_ms`). */
  staleMs: number;
  /** Window length of the window counts, ms; default 60 000 (must match the rate limiter's). */
  windowMs?: number;
  /** Pause between exchanges, ms; default 250. */
  intervalMs?: number;
  /** Cap on window keys reported and read per exchange; default 50 000. */
  maxKeys?: number;
}

interface Gauge {
  local: () => number;
  others: number;
}

/** The exchanger: one per gateway process sharing its database; `start()` it, `close()` it. */
export class ClusterCounts {
  /** The window counts, for the rate limiter. */
  readonly windows: SharedWindows;
  private readonly windowMs: number;
  private readonly intervalMs: number;
  private readonly maxKeys: number;
  /** This process's window counts changed since the last write, by `windowStart|key`. */
  private dirty = new Map<string, CountRow>();
  /** The others' sums of the last read, by `windowStart|key`. */
  private othersByWindow = new Map<string, number>();
  private readonly gauges = new Map<string, Gauge>();
  /** When the others' gauges were last read (ms); their values expire after `staleMs`. */
  private lastReadAt = Number.NEGATIVE_INFINITY;
  private lastPruneAt = Number.NEGATIVE_INFINITY;
  /** The value of each gauge as last written: unchanged gauges are rewritten only with each prune. */
  private readonly writtenGauges = new Map<string, number>();
  private failing = false;
  private closed = false;
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<boolean> | null = null;
  /** The last read found no other live process's rows. */
  private alone = false;

  constructor(private readonly options: ClusterCountsOptions) {
    this.windowMs = options.windowMs ?? DEFAULT_WINDOW_MS;
    this.intervalMs = options.intervalMs ?? DEFAULT_EXCHANGE_MS;
    this.maxKeys = options.maxKeys ?? DEFAULT_MAX_KEYS;
    if (!(this.windowMs > 0)) throw new RangeError('windowMs must be positive');
    if (!(this.intervalMs > 0)) throw new RangeError('intervalMs must be positive');
    if (!(this.maxKeys >= 1)) throw new RangeError('maxKeys must be at least 1');
    this.windows = {
      others: (key, windowStart) => this.othersByWindow.get(`${windowStart}|${key}`) ?? 0,
      report: (key, windowStart, count) => this.report(key, windowStart, count),
    };
  }

  /** Registers the gauge `name`, whose local value `local()` is reported at every exchange. */
  gauge(name: string, local: () => number): SharedGauge {
    const gauge: Gauge = { local, others: 0 };
    this.gauges.set(name, gauge);
    return {
      others: () => (this.options.clock.now() - this.lastReadAt <= this.options.staleMs ? gauge.others : 0),
    };
  }

  /** Window keys waiting to be written (bounded by `maxKeys`). */
  get pendingReports(): number {
    return this.dirty.size;
  }

  /** Starts exchanging every `intervalMs` (the timer does not keep the process alive). Idempotent. */
  start(): void {
    if (this.closed || this.timer !== null || this.running !== null) return;
    this.schedule();
  }

  /**
   * One exchange: writes this process's changed window counts and every
   * gauge, prunes now and then, and reads the others' sums. Resolves true
   * when it reached the database, false otherwise (never rejects).
   */
  exchange(): Promise<boolean> {
    return this.exchangeWith(true);
  }

  /**
   * What the timer runs every `intervalMs`: an exchange that, while the last read found no other process,
   * skips reading until `ALONE_READ_MS` (at most half of `staleMs`) have passed since it.
   */
  tick(): Promise<boolean> {
    return this.exchangeWith(false);
  }

  private exchangeWith(alwaysRead: boolean): Promise<boolean> {
    if (this.closed) return Promise.resolve(false);
    if (this.running) return this.running;
    const run = this.exchangeOnce(alwaysRead).finally(() => {
      if (this.running === run) this.running = null;
    });
    this.running = run;
    return run;
  }

  /** Stops exchanging and deletes this process's rows (best effort, bounded). Idempotent. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.running;
    const { store, instanceId } = this.options;
    let timeout: NodeJS.Timeout | undefined;
    await Promise.race([
      store.writer.run((trx) => deleteInstanceCounts(trx, instanceId), { durable: false }).catch(() => undefined),
      new Promise<void>((resolve) => {
        timeout = setTimeout(resolve, CLOSE_TIMEOUT_MS);
        timeout.unref();
      }),
    ]);
    clearTimeout(timeout);
    this.dirty.clear();
    this.othersByWindow.clear();
  }

  private schedule(): void {
    this.timer = setTimeout(() => {
      this.timer = null;
      void this.tick().then(() => {
        if (!this.closed && this.timer === null) this.schedule();
      });
    }, this.intervalMs);
    this.timer.unref();
  }

  private report(key: string, windowStart: number, count: number): void {
    const id = `${windowStart}|${key}`;
    const known = this.dirty.get(id);
    if (known) {
      known.count = Math.max(known.count, count);
      return;
    }
    while (this.dirty.size >= this.maxKeys) {
      const oldest = this.dirty.keys().next();
      if (oldest.done === true) break;
      this.dirty.delete(oldest.value);
    }
    this.dirty.set(id, { kind: 'window', key, windowStart, count });
  }

  private async exchangeOnce(alwaysRead: boolean): Promise<boolean> {
    const { store, instanceId, clock, staleMs } = this.options;
    const now = clock.now();
    const currentStart = Math.floor(now / this.windowMs) * this.windowMs;
    // Counts of windows already over need not be told.
    const reports = [...this.dirty.values()].filter((row) => row.windowStart + this.windowMs > now);
    this.dirty = new Map();
    const prune = now - this.lastPruneAt >= Math.min(PRUNE_EVERY_MS, this.windowMs);
    // A gauge is written when it changed, and every one again with each prune (a row another process pruned
    // while this one looked dead comes back): an idle gateway writes nothing in between.
    const gaugeRows: CountRow[] = [...this.gauges]
      .map(([name, gauge]): CountRow => ({
        kind: 'gauge',
        key: name,
        windowStart: 0,
        count: Math.max(0, Math.trunc(gauge.local())),
      }))
      .filter((row) => prune || this.writtenGauges.get(row.key) !== row.count);
    const rows = [...reports, ...gaugeRows];
    const nowIso = isoTime(now);
    const staleBeforeIso = isoTime(now - staleMs);
    try {
      if (rows.length > 0 || prune) {
        await store.writer.run(
          async (trx) => {
            if (rows.length > 0) await writeCounts(trx, instanceId, rows, nowIso);
            // The previous window is kept a while for processes whose clocks lag.
            if (prune) await pruneCounts(trx, { windowsUpTo: currentStart - 2 * this.windowMs, staleBeforeIso });
          },
          { durable: false },
        );
      }
      for (const row of gaugeRows) this.writtenGauges.set(row.key, row.count);
      if (prune) this.lastPruneAt = now;
      const readEvery = Math.min(ALONE_READ_MS, staleMs / 2);
      if (!alwaysRead && this.alone && now - this.lastReadAt < readEvery) return true;
      const others = await readOthers(store.db, {
        self: instanceId,
        windowsAfter: now - this.windowMs,
        staleBeforeIso,
        limit: this.maxKeys + this.gauges.size,
      });
      this.alone = others.length === 0;
      this.apply(others, now);
      if (this.failing) {
        this.failing = false;
        this.options.logger.info({ source: 'cluster' }, 'cluster-wide limits: counts exchanged again');
      }
      return true;
    } catch (err) {
      // Not written: report them again next time, unless newer counts were reported meanwhile.
      for (const row of reports) {
        if (this.closed) break;
        this.report(row.key, row.windowStart, row.count);
      }
      if (!this.failing) {
        this.failing = true;
        this.options.logger.warn(
          { source: 'cluster', err: err instanceof Error ? err.message : String(err) },
          'cluster-wide limits: counts cannot be exchanged; each process counts alone until the database answers',
        );
      }
      return false;
    }
  }

  private apply(rows: readonly CountRow[], now: number): void {
    const windows = new Map<string, number>();
    const gauges = new Map<string, number>();
    for (const row of rows) {
      if (row.kind === 'gauge') gauges.set(row.key, row.count);
      else windows.set(`${row.windowStart}|${row.key}`, row.count);
    }
    this.othersByWindow = windows;
    for (const [name, gauge] of this.gauges) gauge.others = gauges.get(name) ?? 0;
    this.lastReadAt = now;
  }
}
