import type { Config } from '../../src/config/config.schema.js';
import { createLogPipeline, type LogPipeline } from '../../src/logs/index.js';

/**
 * The log pipeline GET /logs serves from, built from the config's level and
 * buffer size, writing nothing to stdout: for a harness's `logs` option where
 * a test reads the logs through the API (or the pipeline's buffer) only.
 */
export function quietLogPipeline(config: Config): LogPipeline {
  return createLogPipeline({
    dataDir: config.data_dir,
    level: config.logs.level,
    bufferEntries: config.logs.buffer_entries,
    stdout: { write: () => undefined },
  });
}
