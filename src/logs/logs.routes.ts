import { z } from 'zod';
import { logLevels } from '../config/config.schema.js';
import { errors } from '../http/errors.js';
import { defineRoute, HttpResult, HANDLED, type RequestContext, type RouteDef } from '../http/route.js';
import { lastEventIdOf, openSse, type SseStream } from '../http/sse.js';
import type { LogEvent } from './logs.stream-schema.js';
import { q } from '../http/validation.js';
import { TooManyLogListenersError, type LogBuffer } from './log-buffer.js';
import { levelRank, matchesFilter, type LogEntry, type LogFilter } from './log-entry.js';
import type { DailyLogFiles } from './log-files.js';
import { logPageSchema } from './logs.schema.js';
import { queryLogs, type LogScanLimits } from './logs.service.js';

/** What the logs routes read. A `LogPipeline` fits as is. */
export interface LogRoutesDeps {
  buffer: LogBuffer;
  /** Day files for `since` older than the buffer; null or absent: buffer only. */
  files?: DailyLogFiles | null;
  /** Bounds of the file scan (tests). */
  scanLimits?: LogScanLimits;
}

/** Largest accepted `offset`. */
const MAX_OFFSET = 1_000_000_000;

const logsQuery = z.object({
  level: z.enum(logLevels, { message: `must be one of ${logLevels.join(', ')}` }).optional(),
  since: q.timestamp(),
  until: q.timestamp(),
  source: z.string().min(1, 'must not be empty').max(200, 'must be at most 200 characters').optional(),
  limit: q.int(1, 1000, 100),
  offset: q.int(0, MAX_OFFSET, 0),
  follow: q.bool(false),
});

/**
 * GET /logs (spec: Logs; DECISIONS §4 admin, §9): `level` (minimum),
 * `since`/`until` (ISO timestamps, inclusive), `source` (exact),
 * `limit` 1..1000 (default 100), `offset` ≥ 0, newest first →
 * `{items, total, limit, offset}` (+ `partial` when the file scan stopped early).
 * `follow=true` streams new matching entries as SSE `log` events until the
 * client goes away.
 */
export function logRoutes(deps: LogRoutesDeps): RouteDef[] {
  return [
    defineRoute({
      method: 'GET',
      path: '/logs',
      permission: 'admin',
      summary: 'Recent log entries, newest first; follow=true streams new ones as SSE `log` events',
      tags: ['logs'],
      query: logsQuery,
      responses: [
        {
          status: 200,
          description: 'One page of entries, newest first',
          schema: logPageSchema,
          headers: ['X-Log-Cursor'],
        },
        {
          status: 200,
          description: 'With follow=true: `log` events (each with an `id:`), resumable with Last-Event-ID',
          contentType: 'text/event-stream',
        },
      ],
      handler: async (ctx, { query }) => {
        if (query.since !== undefined && query.until !== undefined && query.since > query.until) {
          throw errors.validation([{ path: 'query.until', message: 'must not be before since' }]);
        }
        const filter: LogFilter = {
          ...(query.level !== undefined ? { minLevel: query.level } : {}),
          ...(query.since !== undefined ? { since: query.since } : {}),
          ...(query.until !== undefined ? { until: query.until } : {}),
          ...(query.source !== undefined ? { source: query.source } : {}),
        };
        if (query.follow) {
          followLogs(ctx, deps.buffer, filter, resumeAfter(ctx, deps.buffer));
          return HANDLED;
        }
        // The follow that comes next resumes from this page with `Last-Event-ID: <X-Log-Cursor>`, so nothing
        // logged between the two requests is missed or shown twice: the buffer is read in this same tick.
        const cursor = entryId(deps.buffer, deps.buffer.stats().stored);
        const page = await queryLogs(
          { buffer: deps.buffer, files: deps.files ?? null },
          { ...filter, limit: query.limit, offset: query.offset },
          deps.scanLimits,
        );
        return new HttpResult(200, page, { 'x-log-cursor': cursor });
      },
    }),
  ];
}

/** The id of a followed entry: `<run>-<seq>` (ADR 0017). */
function entryId(buffer: LogBuffer, seq: number): string {
  return `${buffer.run}-${seq}`;
}

/**
 * Where a follower resumes (`Last-Event-ID`): null without the header (new
 * entries only); the entry number for an id of this run; 0 (every kept
 * entry) for an id of an earlier run of the process, whose numbering is
 * gone. A malformed id is 400.
 */
function resumeAfter(ctx: RequestContext, buffer: LogBuffer): number | null {
  const lastId = lastEventIdOf(ctx);
  if (lastId === null) return null;
  const match = /^([0-9a-z]{1,32})-(\d{1,15})$/.exec(lastId);
  if (!match) throw errors.badRequest('Last-Event-ID must be a log entry id (<run>-<number>)');
  return match[1] === buffer.run ? Number(match[2]) : 0;
}

/**
 * Streams entries that pass `filter` as `event: log`, each with an `id:`
 * (`<run>-<seq>`). With `afterSeq` (a resumed follower) the kept entries
 * numbered after it come first: the ring buffer keeps the newest
 * `logs.buffer_entries`, so entries older than that are not replayed (they
 * are in the day files, GET /logs?since=…). Then entries logged from now on.
 * The subscription is in place before the response headers go out and the
 * replay runs in the same tick, so a client misses nothing in between and
 * gets nothing twice. An entry past `until` ends the stream (nothing later
 * can match). Pings every 15 s.
 *
 * A client that does not take what is written (ADR 0043): once a write
 * leaves the socket full the follower stops writing and waits for it to
 * drain; entries logged meanwhile stay in the ring buffer, where the
 * follower picks them up again after its last id, and their size is counted
 * with the socket's unsent bytes, so a client that never reads is cut at
 * `limits.streams.max_buffered_bytes` (`openSse`) and resumes with
 * `Last-Event-ID`. A replay thus goes at the client's pace.
 */
function followLogs(ctx: RequestContext, buffer: LogBuffer, filter: LogFilter, afterSeq: number | null): void {
  let sse: SseStream | null = null;
  let lastSeq = afterSeq ?? buffer.stats().stored;
  /** Waiting for the socket to drain; the bytes of the matching entries logged meanwhile. */
  let waiting = false;
  let behind = 0;
  /** Writes one entry; false when the socket is full (the next ones wait for it to drain). */
  const deliver = (entry: LogEntry, time: number, seq: number): boolean => {
    if (!sse || sse.closed || seq <= lastSeq) return true;
    lastSeq = seq;
    if (filter.until !== undefined && time > filter.until) {
      sse.close();
      return true;
    }
    if (!matchesFilter(time, levelRank(entry.level), entry.source, filter)) return true;
    const event: LogEvent = entry;
    return sse.send('log', event, entryId(buffer, seq));
  };
  const wait = (stream: SseStream): void => {
    waiting = true;
    void stream.drained().then(() => catchUp(stream));
  };
  /** The kept entries after the last one written, oldest first, until the socket is full again. */
  const catchUp = (stream: SseStream): void => {
    waiting = false;
    behind = 0;
    stream.holding(0);
    for (const kept of buffer.after(lastSeq, {})) {
      if (stream.closed) return;
      if (!deliver(kept.entry, kept.time, kept.seq)) {
        wait(stream);
        return;
      }
    }
  };
  const live = (entry: LogEntry, time: number, seq: number): void => {
    if (!sse || sse.closed) return;
    if (!waiting) {
      if (!deliver(entry, time, seq)) wait(sse);
    } else if (matchesFilter(time, levelRank(entry.level), entry.source, filter)) {
      behind += JSON.stringify(entry).length + 48; // the entry's frame: id, event name, separators
      sse.holding(behind);
    }
  };
  let unsubscribe: () => void;
  try {
    unsubscribe = buffer.subscribe(live);
  } catch (err) {
    if (err instanceof TooManyLogListenersError) throw errors.unavailable(err.message);
    throw err;
  }
  try {
    sse = openSse(ctx);
  } catch (err) {
    unsubscribe();
    throw err;
  }
  sse.signal.addEventListener('abort', unsubscribe, { once: true });
  if (afterSeq !== null) catchUp(sse);
}
