import type { LogBuffer } from './log-buffer.js';
import {
  levelRank,
  matchesFilter,
  parseLogLine,
  peekLineTime,
  utcDay,
  type LogEntry,
  type LogFilter,
} from './log-entry.js';
import type { DailyLogFiles } from './log-files.js';

/** GET /logs: filters plus offset pagination. */
export interface LogQuery extends LogFilter {
  /** 1..1000. */
  limit: number;
  /** ≥ 0. */
  offset: number;
}

/** The answer of GET /logs (spec: Logs; DECISIONS §9), newest first. */
export interface LogPage {
  items: LogEntry[];
  /**
   * Matching entries. Exact, unless `partial` is set: then the day files were
   * not read to the end and `total` counts the matches seen (a lower bound).
   */
  total: number;
  limit: number;
  offset: number;
  /** Present (true) when the file scan stopped early: more matches may exist. */
  partial?: true;
}

/** Where log entries are read from. */
export interface LogSources {
  buffer: LogBuffer;
  /** The daily files; without them only the buffer is searched. */
  files?: DailyLogFiles | null;
}

/** Bounds on the work one query may do in the day files. */
export interface LogScanLimits {
  /** Characters of log lines examined at most (about bytes for ASCII). Default 64 Mi. */
  maxScanChars?: number;
}

/** Default `maxScanChars`. */
export const DEFAULT_MAX_SCAN_CHARS = 64 * 1024 * 1024;

/**
 * Answers a log query, newest first. The ring buffer is searched first. When
 * `since` reaches back before the oldest buffered entry (older entries were
 * overwritten, or come from an earlier run), the day files from `since`'s
 * day to the buffer's oldest day are read backwards for the older entries,
 * skipping those the buffer still holds. That scan stops as soon as the page
 * is full and one more match proves there are more (then `partial`), or
 * after `maxScanChars`, so a request never reads the whole history.
 */
export async function queryLogs(sources: LogSources, query: LogQuery, limits: LogScanLimits = {}): Promise<LogPage> {
  const { buffer, files } = sources;
  const filter: LogFilter = {
    ...(query.minLevel !== undefined ? { minLevel: query.minLevel } : {}),
    ...(query.since !== undefined ? { since: query.since } : {}),
    ...(query.until !== undefined ? { until: query.until } : {}),
    ...(query.source !== undefined ? { source: query.source } : {}),
  };
  const fromBuffer = buffer.query(filter, { limit: query.limit, offset: query.offset });
  const page: LogPage = { items: fromBuffer.items, total: fromBuffer.total, limit: query.limit, offset: query.offset };
  const oldest = buffer.oldest();
  if (!files || query.since === undefined || (oldest !== null && query.since >= oldest.time)) return page;
  if (query.until !== undefined && query.until < query.since) return page;

  // Entries older than the buffer: the files, newest first, from the buffer's oldest moment down to `since`.
  await files.flush(); // an entry overwritten in the ring may still be queued for its file
  const cutoff = oldest?.time ?? Number.POSITIVE_INFINITY;
  let skipAtCutoff = oldest?.count ?? 0;
  const upper = Math.min(cutoff, query.until ?? Number.POSITIVE_INFINITY);
  const firstDay = utcDay(query.since);
  const lastDay = Number.isFinite(upper) ? utcDay(upper) : null;
  const days = (await files.days()).filter((day) => day >= firstDay && (lastDay === null || day <= lastDay)).reverse();

  const wanted = query.offset + query.limit;
  const needed = Math.max(0, wanted - fromBuffer.total); // matches from the files that fill the page
  const maxScanChars = limits.maxScanChars ?? DEFAULT_MAX_SCAN_CHARS;
  let scanned = 0;
  let matches = 0;
  scan: for (const day of days) {
    for await (const line of files.linesNewestFirst(day)) {
      scanned += line.length;
      if (scanned > maxScanChars) {
        page.partial = true;
        break scan;
      }
      const time = peekLineTime(line);
      if (Number.isNaN(time) || time > upper) continue;
      if (time === cutoff && skipAtCutoff > 0) {
        skipAtCutoff -= 1; // the newest lines of that millisecond are the ones the buffer holds
        continue;
      }
      if (time < query.since) continue;
      const parsed = parseLogLine(line);
      if (!parsed) continue;
      const { entry } = parsed;
      if (!matchesFilter(parsed.time, levelRank(entry.level), entry.source, filter)) continue;
      if (matches === needed) {
        page.partial = true; // the page is full and more exist
        matches += 1;
        break scan;
      }
      const index = fromBuffer.total + matches;
      if (index >= query.offset) page.items.push(entry);
      matches += 1;
    }
  }
  page.total = fromBuffer.total + matches;
  return page;
}
