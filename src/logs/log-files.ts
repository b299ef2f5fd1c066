import { open, readdir, unlink, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { systemClock, type Clock } from '../lib/clock.js';
import { ensurePrivateDir, openPrivateFile } from '../lib/private-files.js';
import { peekLineTime, utcDay } from './log-entry.js';
import type { LogSink } from './logger.js';

/** `gatehouse-YYYY-MM-DD.jsonl`: one file per UTC day. */
const FILE_PATTERN = /^gatehouse-(\d{4}-\d{2}-\d{2})\.jsonl$/;
const DAY_MS = 86_400_000;

/** `<dataDir>/logs` (DECISIONS §1). */
export function logsDir(dataDir: string): string {
  return join(dataDir, 'logs');
}

/** File name of one UTC day's log: `gatehouse-YYYY-MM-DD.jsonl`. */
export function logFileName(day: string): string {
  return `gatehouse-${day}.jsonl`;
}

/** Counters of a `DailyLogFiles`. */
export interface DailyLogFilesStats {
  /** Lines appended to a file. */
  written: number;
  /** Lines lost: queue full, write failure, or written after `close()`. */
  dropped: number;
  /** `write` calls made on files; many lines share one. */
  batches: number;
  /** Lines queued or being written now. */
  pending: number;
  /** Old day files removed by retention. */
  pruned: number;
}

/** Options of `DailyLogFiles`. */
export interface DailyLogFilesOptions {
  /** Directory of the files (created 0700), normally `logsDir(data_dir)`. */
  dir: string;
  /** Decides retention and the day of a line without a readable timestamp. Default: the wall clock. */
  clock?: Clock;
  /** Keep the files of the last N UTC days (today included); null keeps all. Default 14. */
  retainDays?: number | null;
  /** Queue bound in lines; lines beyond it are dropped and counted. Default 10 000. */
  maxPendingLines?: number;
  /** Queue bound in characters (UTF-16 units). Default 8 Mi. */
  maxPendingChars?: number;
  /**
   * Told about write failures and overflow, once per episode. Must not log
   * through the logger that feeds this sink. Default: one line on stderr.
   */
  onError?: (err: Error) => void;
}

/** Default `retainDays`. */
export const DEFAULT_RETAIN_DAYS = 14;

/**
 * Daily JSONL log files (DECISIONS §1, §9): each line goes to
 * `<dir>/gatehouse-YYYY-MM-DD.jsonl`, the UTC day of the line's own
 * `timestamp`, so files rotate exactly at midnight UTC. `write` only queues
 * (bounded; overflow is dropped and counted); one background loop appends
 * whatever is queued with one `write` per day per batch. Files are 0600 in a
 * 0700 directory. Retention removes day files older than `retainDays` each
 * time a new day's file is opened.
 */
export class DailyLogFiles implements LogSink {
  /** Directory holding the day files. */
  readonly dir: string;
  private readonly clock: Clock;
  private readonly retainDays: number | null;
  private readonly maxPendingLines: number;
  private readonly maxPendingChars: number;
  private readonly onError: (err: Error) => void;
  private queue: string[] = [];
  private queuedChars = 0;
  private inFlightLines = 0;
  private inFlightChars = 0;
  private loop: Promise<void> | null = null;
  /** Lines accepted into the queue so far. */
  private enqueued = 0;
  /** Of those, lines the loop has written or dropped; they settle in queue order. */
  private settled = 0;
  private waiters: { target: number; resolve: () => void }[] = [];
  private current: { day: string; handle: FileHandle } | null = null;
  private dirReady = false;
  private closed = false;
  private closing: Promise<void> | null = null;
  private overflowReported = false;
  private failureReported = false;
  private readonly counters = { written: 0, dropped: 0, batches: 0, pruned: 0 };

  constructor(options: DailyLogFilesOptions) {
    this.dir = options.dir;
    this.clock = options.clock ?? systemClock;
    this.retainDays = options.retainDays === undefined ? DEFAULT_RETAIN_DAYS : options.retainDays;
    this.maxPendingLines = options.maxPendingLines ?? 10_000;
    this.maxPendingChars = options.maxPendingChars ?? 8 * 1024 * 1024;
    this.onError = options.onError ?? ((err) => void process.stderr.write(`gatehouse: ${err.message}\n`));
  }

  /** Queues one line; never blocks, never throws. Dropped (and counted) when full or closed. */
  write(line: string): void {
    if (this.closed) {
      this.counters.dropped += 1;
      return;
    }
    const text = line.endsWith('\n') ? line : `${line}\n`;
    if (
      this.queue.length + this.inFlightLines >= this.maxPendingLines ||
      this.queuedChars + this.inFlightChars + text.length > this.maxPendingChars
    ) {
      this.counters.dropped += 1;
      if (!this.overflowReported) {
        this.overflowReported = true;
        this.report(new Error('log file queue full; dropping log lines'));
      }
      return;
    }
    this.queue.push(text);
    this.queuedChars += text.length;
    this.enqueued += 1;
    this.schedule();
  }

  /**
   * Resolves once every line queued before the call is written (or counted
   * as dropped). Lines logged meanwhile do not hold it up.
   */
  flush(): Promise<void> {
    const target = this.enqueued;
    if (this.settled >= target) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push({ target, resolve }));
  }

  /** Writes what is queued, then closes the open file. Later lines are dropped. Idempotent. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      this.closed = true;
      await this.flush();
      const open = this.current;
      this.current = null;
      await open?.handle.close().catch(() => undefined);
    })();
    return this.closing;
  }

  /** Counters so far. */
  stats(): DailyLogFilesStats {
    return { ...this.counters, pending: this.queue.length + this.inFlightLines };
  }

  /** Path of one UTC day's file (`YYYY-MM-DD`). */
  pathFor(day: string): string {
    return join(this.dir, logFileName(day));
  }

  /** The days that have a file, oldest first. Empty when the directory does not exist. */
  async days(): Promise<string[]> {
    let names: string[];
    try {
      names = await readdir(this.dir);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw err;
    }
    const days: string[] = [];
    for (const name of names) {
      const match = FILE_PATTERN.exec(name);
      if (match?.[1]) days.push(match[1]);
    }
    return days.sort();
  }

  /** One day's lines, newest first (see `readLinesBackward`). Nothing when the file does not exist. */
  linesNewestFirst(day: string): AsyncGenerator<string> {
    return readLinesBackward(this.pathFor(day));
  }

  private settle(lines: number): void {
    this.settled += lines;
    if (this.waiters.length === 0) return;
    const still: { target: number; resolve: () => void }[] = [];
    for (const waiter of this.waiters) {
      if (waiter.target <= this.settled) waiter.resolve();
      else still.push(waiter);
    }
    this.waiters = still;
  }

  private report(err: Error): void {
    try {
      this.onError(err);
    } catch {
      // an error reporter must not break the writer
    }
  }

  private schedule(): void {
    if (this.loop !== null) return;
    // Start on the next turn of the event loop so lines logged in one turn share a batch.
    this.loop = new Promise<void>((resolve) => setImmediate(resolve))
      .then(() => this.drain())
      .finally(() => {
        this.loop = null;
        if (this.queue.length > 0) this.schedule();
      });
  }

  private async drain(): Promise<void> {
    while (this.queue.length > 0) {
      const batch = this.queue;
      this.queue = [];
      this.inFlightLines = batch.length;
      this.inFlightChars = this.queuedChars;
      this.queuedChars = 0;
      let i = 0;
      while (i < batch.length) {
        const day = this.dayOf(batch[i]!);
        let j = i + 1;
        while (j < batch.length && this.dayOf(batch[j]!) === day) j++;
        const lines = batch.slice(i, j);
        try {
          const handle = await this.handleFor(day);
          await appendWhole(handle, lines.join(''));
          this.counters.written += lines.length;
          this.counters.batches += 1;
          this.failureReported = false;
        } catch (err) {
          this.counters.dropped += lines.length;
          const stale = this.current;
          this.current = null;
          await stale?.handle.close().catch(() => undefined);
          if (!this.failureReported) {
            this.failureReported = true;
            const cause = err instanceof Error ? err : new Error(String(err));
            this.report(new Error(`log file write failed (${lines.length} lines lost): ${cause.message}`, { cause }));
          }
        }
        this.settle(lines.length);
        i = j;
      }
      this.inFlightLines = 0;
      this.inFlightChars = 0;
      if (this.queue.length < this.maxPendingLines) this.overflowReported = false;
    }
  }

  /** UTC day of a line's timestamp; the clock's day when the line has none. */
  private dayOf(line: string): string {
    const time = peekLineTime(line);
    return utcDay(Number.isNaN(time) ? this.clock.now() : time);
  }

  private async handleFor(day: string): Promise<FileHandle> {
    if (this.current?.day === day) return this.current.handle;
    const previous = this.current;
    this.current = null;
    await previous?.handle.close().catch(() => undefined);
    if (!this.dirReady) {
      await ensurePrivateDir(this.dir);
      this.dirReady = true;
    }
    const handle = await openPrivateFile(this.pathFor(day), 'a'); // 0600, or tightened when an older file is wider
    this.current = { day, handle };
    await this.prune();
    return handle;
  }

  /** Removes day files older than the retention window (by the clock's UTC day). */
  private async prune(): Promise<void> {
    if (this.retainDays === null) return;
    const oldestKept = utcDay(this.clock.now() - (this.retainDays - 1) * DAY_MS);
    try {
      for (const day of await this.days()) {
        if (day >= oldestKept) break;
        await unlink(this.pathFor(day));
        this.counters.pruned += 1;
      }
    } catch (err) {
      this.report(new Error(`log retention failed: ${(err as Error).message}`));
    }
  }
}

/**
 * Appends `text` whole or not at all: a short write (the disk filled up in the
 * middle of a batch) is continued, and when the rest is refused what was
 * written is cut off again, so the file stays whole lines and the lines
 * written once there is room start on a line of their own.
 */
async function appendWhole(handle: FileHandle, text: string): Promise<void> {
  const data = Buffer.from(text, 'utf8');
  let done = 0;
  try {
    while (done < data.length) done += (await handle.write(data, done, data.length - done)).bytesWritten;
  } catch (err) {
    if (done > 0) {
      await handle
        .stat()
        .then(({ size }) => handle.truncate(size - done))
        .catch(() => undefined); // the write's own error is the one reported
    }
    throw err;
  }
}

/** Options of `readLinesBackward`. */
export interface ReadBackwardOptions {
  /** Bytes read per step. Default 64 KiB. */
  chunkBytes?: number;
  /** Longer lines are skipped whole. Default 1 MiB. */
  maxLineBytes?: number;
}

/**
 * Yields a file's non-empty lines from the last to the first, reading fixed
 * chunks from the end, so a caller that stops early reads only the tail.
 * Splits on the byte `\n`, which never occurs inside a UTF-8 sequence. Yields
 * nothing when the file does not exist; closes the file when the caller stops.
 */
export async function* readLinesBackward(path: string, options: ReadBackwardOptions = {}): AsyncGenerator<string> {
  const chunkBytes = options.chunkBytes ?? 64 * 1024;
  const maxLineBytes = options.maxLineBytes ?? 1024 * 1024;
  let handle: FileHandle;
  try {
    handle = await open(path, 'r');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw err;
  }
  try {
    let position = (await handle.stat()).size;
    let tail: Buffer = Buffer.alloc(0); // the start of a line whose beginning is not read yet
    let skipping = false; // inside an over-long line
    while (position > 0) {
      const length = Math.min(chunkBytes, position);
      position -= length;
      const chunk = Buffer.allocUnsafe(length);
      const { bytesRead } = await handle.read(chunk, 0, length, position);
      const data = tail.length > 0 ? Buffer.concat([chunk.subarray(0, bytesRead), tail]) : chunk.subarray(0, bytesRead);
      let end = data.length;
      for (let i = data.length - 1; i >= 0; i--) {
        if (data[i] !== 0x0a) continue;
        if (skipping) skipping = false;
        else if (end > i + 1) yield data.toString('utf8', i + 1, end);
        end = i;
      }
      tail = Buffer.from(data.subarray(0, end));
      if (tail.length > maxLineBytes) {
        tail = Buffer.alloc(0);
        skipping = true;
      }
    }
    if (tail.length > 0 && !skipping) yield tail.toString('utf8');
  } finally {
    await handle.close().catch(() => undefined);
  }
}
