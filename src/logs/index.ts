/** The logs capability: logger, ring buffer, day files, GET /logs (DECISIONS §1, §8, §9). */
export { createLogger, type Logger, type LogSink } from './logger.js';
export {
  LOG_LEVELS,
  levelRank,
  matchesFilter,
  parseLogLine,
  peekLineTime,
  utcDay,
  MAX_ENTRY_CHARS,
  type LogEntry,
  type LogFilter,
  type ParsedLogLine,
} from './log-entry.js';
export {
  LogBuffer,
  TooManyLogListenersError,
  type LogBufferOldest,
  type LogBufferOptions,
  type LogBufferPage,
  type LogBufferStats,
  type LogListener,
  type NumberedLogEntry,
} from './log-buffer.js';
export {
  DailyLogFiles,
  DEFAULT_RETAIN_DAYS,
  logFileName,
  logsDir,
  readLinesBackward,
  type DailyLogFilesOptions,
  type DailyLogFilesStats,
  type ReadBackwardOptions,
} from './log-files.js';
export {
  DEFAULT_MAX_SCAN_CHARS,
  queryLogs,
  type LogPage,
  type LogQuery,
  type LogScanLimits,
  type LogSources,
} from './logs.service.js';
export { logRoutes, type LogRoutesDeps } from './logs.routes.js';
export { LOG_STREAM_EVENTS, type LogEvent } from './logs.stream-schema.js';
export { createLogPipeline, type LogPipeline, type LogPipelineOptions } from './log-pipeline.js';
