import { pino, type Logger } from 'pino';
import type { LogLevel } from '../config/config.schema.js';
import { systemClock, type Clock } from '../lib/clock.js';

export type { Logger } from '../lib/logger.js';

/** Where formatted log lines go besides stdout (the logs ring buffer, daily files). */
export interface LogSink {
  write(line: string): void;
}

/** Our level names (spec: Log entry) mapped to pino's. */
const PINO_LEVEL: Record<LogLevel, string> = { debug: 'debug', info: 'info', warning: 'warn', error: 'error' };
const LABEL: Record<string, LogLevel> = {
  trace: 'debug',
  debug: 'debug',
  info: 'info',
  warn: 'warning',
  error: 'error',
  fatal: 'error',
};

/**
 * Creates the process logger: one JSON object per line on stdout with
 * `timestamp`, `level` (debug|info|warning|error), `source` and `message`.
 * `scrub` runs over every line before it leaves the process, replacing any
 * configured secret that slipped into a message (defence in depth), before
 * stdout or any sink sees it. `clock` stamps `timestamp` (default: the wall clock).
 */
export function createLogger(options: {
  level: LogLevel;
  scrub?: (line: string) => string;
  sinks?: LogSink[];
  stdout?: LogSink;
  clock?: Clock;
}): Logger {
  const clock = options.clock ?? systemClock;
  const out = options.stdout ?? { write: (line: string) => process.stdout.write(line) };
  const sinks = options.sinks ?? [];
  const scrub = options.scrub;
  const destination = {
    write(line: string): void {
      const safe = scrub ? scrub(line) : line;
      out.write(safe);
      for (const sink of sinks) sink.write(safe);
    },
  };
  return pino(
    {
      level: PINO_LEVEL[options.level],
      // `source` comes from child bindings (`logger.child({ source })`); lines
      // logged on the root get `gateway`. Never bind `source` twice: JSON
      // lines would carry the key twice.
      base: undefined,
      mixin: (_object, _level, logger) =>
        'source' in (logger as unknown as { bindings(): Record<string, unknown> }).bindings()
          ? {}
          : { source: 'gateway' },
      messageKey: 'message',
      timestamp: () => `,"timestamp":"${new Date(clock.now()).toISOString()}"`,
      formatters: { level: (label) => ({ level: LABEL[label] ?? label }) },
      redact: {
        paths: [
          'token',
          '*.token',
          'api_key',
          '*.api_key',
          'secret',
          '*.secret',
          'authorization',
          'headers.authorization',
          'headers["x-api-token"]',
          'req.headers.authorization',
        ],
        censor: '***',
      },
    },
    destination,
  );
}
