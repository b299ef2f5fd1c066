import { logLevels, type LogLevel } from '../config/config.schema.js';

/**
 * One log entry as the API shows it (spec: Log entry): `metadata` holds every
 * field of the logged line other than the four named ones. Entries are built
 * from the JSON lines the logger writes (after secret scrubbing), never from
 * anything else, and the raw line is not kept.
 */
export interface LogEntry {
  /** ISO 8601 UTC with milliseconds. */
  timestamp: string;
  level: LogLevel;
  /** Component name (`http`, `audit`, `lifecycle`, …; `gateway` when none was bound). */
  source: string;
  message: string;
  metadata: Record<string, unknown>;
}

/** A parsed entry plus its timestamp in epoch milliseconds (for filtering without re-parsing). */
export interface ParsedLogLine {
  entry: LogEntry;
  time: number;
}

/** Entry filters of GET /logs. Every field is optional; all given ones must match. */
export interface LogFilter {
  /** Minimum level: debug < info < warning < error. */
  minLevel?: LogLevel;
  /** Inclusive lower bound, epoch milliseconds. */
  since?: number;
  /** Inclusive upper bound, epoch milliseconds. */
  until?: number;
  /** Exact component name. */
  source?: string;
}

/** The level names in ascending severity (spec: Log entry). */
export const LOG_LEVELS: readonly LogLevel[] = logLevels;

const RANK: Record<LogLevel, number> = { debug: 0, info: 1, warning: 2, error: 3 };

/** Severity rank of a level: debug 0, info 1, warning 2, error 3. */
export function levelRank(level: LogLevel): number {
  return RANK[level];
}

/** Lines longer than this (in UTF-16 units) keep a shortened message and no metadata: entries stay small. */
export const MAX_ENTRY_CHARS = 32_768;
/** Message length kept from an over-long line. */
const TRUNCATED_MESSAGE_CHARS = 4_096;

/** Pino's numeric levels, for lines written by a plain pino logger. */
function levelFromNumber(value: number): LogLevel {
  if (value >= 50) return 'error';
  if (value >= 40) return 'warning';
  if (value >= 30) return 'info';
  return 'debug';
}

function normalizeLevel(value: unknown): LogLevel | null {
  if (typeof value === 'number' && Number.isFinite(value)) return levelFromNumber(value);
  if (typeof value !== 'string') return null;
  switch (value) {
    case 'debug':
    case 'trace':
      return 'debug';
    case 'info':
      return 'info';
    case 'warning':
    case 'warn':
      return 'warning';
    case 'error':
    case 'fatal':
      return 'error';
    default:
      return null;
  }
}

function textOf(value: unknown): string {
  if (value === undefined || value === null) return '';
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return JSON.stringify(value);
}

/**
 * Parses one JSON log line (`{level, timestamp, source, message, ...}`) into
 * an entry. Returns null for anything that is not a JSON object with a valid
 * `timestamp` and `level`. A line longer than `maxChars` keeps the first
 * 4096 characters of its message and `metadata: {truncated: true,
 * original_chars}` so one huge line cannot hold much memory.
 */
export function parseLogLine(line: string, maxChars = MAX_ENTRY_CHARS): ParsedLogLine | null {
  let raw: unknown;
  try {
    raw = JSON.parse(line);
  } catch {
    return null;
  }
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) return null;
  const { timestamp, level, source, message, ...rest } = raw as Record<string, unknown>;
  if (typeof timestamp !== 'string') return null;
  const time = Date.parse(timestamp);
  if (Number.isNaN(time)) return null;
  const lvl = normalizeLevel(level);
  if (lvl === null) return null;
  const long = line.length > maxChars;
  let text = textOf(message);
  if (long && text.length > TRUNCATED_MESSAGE_CHARS) text = `${text.slice(0, TRUNCATED_MESSAGE_CHARS)}…`;
  return {
    time,
    entry: {
      timestamp: new Date(time).toISOString(),
      level: lvl,
      source: typeof source === 'string' && source !== '' ? source : 'gateway',
      message: text,
      metadata: long ? { truncated: true, original_chars: line.length } : rest,
    },
  };
}

/**
 * Reads the `timestamp` of a logger line without parsing all of it (the
 * logger writes `"timestamp":"…"` near the start). Returns epoch ms, or NaN.
 */
export function peekLineTime(line: string): number {
  const key = '"timestamp":"';
  const at = line.indexOf(key);
  if (at < 0) return Number.NaN;
  const start = at + key.length;
  const end = line.indexOf('"', start);
  if (end < 0 || end - start > 40) return Number.NaN;
  return Date.parse(line.slice(start, end));
}

/** True when an entry with this time, level rank and source passes the filter. */
export function matchesFilter(time: number, rank: number, source: string, filter: LogFilter): boolean {
  if (filter.minLevel !== undefined && rank < RANK[filter.minLevel]) return false;
  if (filter.since !== undefined && time < filter.since) return false;
  if (filter.until !== undefined && time > filter.until) return false;
  if (filter.source !== undefined && source !== filter.source) return false;
  return true;
}

/** The UTC calendar day (`YYYY-MM-DD`) of an epoch-millisecond time. */
export function utcDay(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}
