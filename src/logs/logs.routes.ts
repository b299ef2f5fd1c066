import { z } from 'zod';
import { logLevels } from '../config/config.schema.js';
import { errors } from '../http/errors.js';
import { defineRoute, HANDLED, type RequestContext, type RouteDef } from '../http/route.js';
import { openSse, type SseStream } from '../http/sse.js';
import { q } from '../http/validation.js';
import { TooManyLogListenersError, type LogBuffer } from './log-buffer.js';
import { levelRank, matchesFilter, type LogFilter } from './log-entry.js';
import type { DailyLogFiles } from './log-files.js';
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
          followLogs(ctx, deps.buffer, filter);
          return HANDLED;
        }
        return queryLogs(
          { buffer: deps.buffer, files: deps.files ?? null },
          { ...filter, limit: query.limit, offset: query.offset },
          deps.scanLimits,
        );
      },
    }),
  ];
}

/**
 * Streams entries logged from now on that pass `filter`, as `event: log`.
 * The subscription is in place before the response headers go out, so a
 * client that has the headers misses nothing. An entry past `until` ends the
 * stream (nothing later can match). Slow readers are cut off by `openSse`'s
 * buffer bound; pings every 15 s.
 */
function followLogs(ctx: RequestContext, buffer: LogBuffer, filter: LogFilter): void {
  let sse: SseStream | null = null;
  let unsubscribe: () => void;
  try {
    unsubscribe = buffer.subscribe((entry, time) => {
      if (!sse || sse.closed) return;
      if (filter.until !== undefined && time > filter.until) {
        sse.close();
        return;
      }
      if (matchesFilter(time, levelRank(entry.level), entry.source, filter)) sse.send('log', entry);
    });
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
}
