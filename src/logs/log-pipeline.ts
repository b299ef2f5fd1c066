import type { LogLevel } from '../config/config.schema.js';
import type { EventBus } from '../events/index.js';
import type { Clock } from '../lib/clock.js';
import { LogBuffer } from './log-buffer.js';
import { DailyLogFiles, logsDir } from './log-files.js';
import { createLogger, type Logger, type LogSink } from './logger.js';

/** Options of `createLogPipeline`. */
export interface LogPipelineOptions {
  /** `data_dir`; files go to `<dataDir>/logs/`. */
  dataDir: string;
  /** `logs.level`: lines below it are not logged at all (pino's filter). */
  level: LogLevel;
  /** `logs.buffer_entries`: size of the ring buffer. */
  bufferEntries: number;
  /** Secret scrubber run over every line before any sink sees it (`createTokenScrubber`). */
  scrub?: (line: string) => string;
  /** Live feed: each entry is published on topic `logs` (event `log`) while anyone listens. */
  bus?: EventBus;
  /** Replaces process stdout (tests). */
  stdout?: LogSink;
  /** Day files kept (today included); null keeps all. Default 14. */
  retainDays?: number | null;
  /** Time source of entry timestamps and file retention. Default: the wall clock. */
  clock?: Clock;
  /** Bound of the file writer's queue in lines. Default 10 000. */
  maxPendingLines?: number;
}

/** The process logger and where its lines go. */
export interface LogPipeline {
  /** Writes JSON lines to stdout, the ring buffer and the day files. */
  readonly logger: Logger;
  readonly buffer: LogBuffer;
  readonly files: DailyLogFiles;
  /** Publishes each new entry on `bus` (topic `logs`, event `log`) while it has listeners; returns the undo. */
  connectBus(bus: EventBus): () => void;
  /** Resolves once every line logged so far is in its day file. */
  flush(): Promise<void>;
  /** Flushes and closes the day files; lines logged afterwards reach stdout and the buffer only. Idempotent. */
  close(): Promise<void>;
}

/**
 * Builds the logging pipeline (DECISIONS §1, §9): one pino logger whose
 * scrubbed JSON lines go to stdout, the `LogBuffer` ring behind GET /logs
 * and the `DailyLogFiles` in `<dataDir>/logs/`, plus the WebSocket `logs`
 * topic when a bus is connected (§8).
 */
export function createLogPipeline(options: LogPipelineOptions): LogPipeline {
  const buffer = new LogBuffer(options.bufferEntries);
  const files = new DailyLogFiles({
    dir: logsDir(options.dataDir),
    ...(options.retainDays !== undefined ? { retainDays: options.retainDays } : {}),
    ...(options.clock ? { clock: options.clock } : {}),
    ...(options.maxPendingLines !== undefined ? { maxPendingLines: options.maxPendingLines } : {}),
  });
  const logger = createLogger({
    level: options.level,
    sinks: [buffer, files],
    ...(options.scrub ? { scrub: options.scrub } : {}),
    ...(options.stdout ? { stdout: options.stdout } : {}),
    ...(options.clock ? { clock: options.clock } : {}),
  });
  const connectBus = (bus: EventBus): (() => void) =>
    buffer.subscribe((entry) => {
      if (bus.hasListeners('logs')) bus.publish('logs', 'log', { ...entry });
    });
  if (options.bus) connectBus(options.bus);
  let closing: Promise<void> | null = null;
  return {
    logger,
    buffer,
    files,
    connectBus,
    flush: () => files.flush(),
    close() {
      closing ??= (async () => {
        logger.flush();
        await files.close();
      })();
      return closing;
    },
  };
}
