/**
 * Tracing (DECISIONS §21, ADR 0039): off unless `tracing.enabled` (which an OTLP endpoint in the environment
 * sets, through the config loader). Off, nothing of OpenTelemetry is loaded and the message path is handed no
 * tracer: each phase of a turn then costs one null check. On, the SDK is imported once here and started; its
 * spans are flushed and the SDK shut down in the `backends` phase of the shutdown.
 */
import type { Config } from '../config/config.schema.js';
import type { Logger } from '../lib/logger.js';
import type { GatewayModule } from '../module.js';
import type { TurnTracer } from '../turns/index.js';

/** How long the shutdown waits for the last spans to reach the collector. */
const SHUTDOWN_BOUND_MS = 5_000;

/** Tracing of one gateway. */
export interface Tracing {
  /** What the message path is handed: null when tracing is off. */
  readonly tracer: TurnTracer | null;
  /** Installs it in the gateway (its shutdown). */
  readonly module: GatewayModule;
  /** Exports the spans ended so far (tests, the shutdown). */
  flush(): Promise<void>;
}

/** True once this process loaded the OpenTelemetry SDK (tests: tracing off loads nothing). */
let sdkLoaded = false;

/** Whether the OpenTelemetry SDK was loaded in this process. */
export function tracingSdkLoaded(): boolean {
  return sdkLoaded;
}

/** Tracing as configured: the SDK loaded and started only when `tracing.enabled`. */
export async function openTracing(
  config: Config,
  about: { instanceId: string; version: string; logger: Logger },
): Promise<Tracing> {
  if (!config.tracing.enabled) {
    return { tracer: null, module: { name: 'tracing' }, flush: async () => undefined };
  }
  const { startTracingSdk } = await import('./tracing.sdk.js');
  sdkLoaded = true;
  const sdk = startTracingSdk(config, about);
  const log = about.logger.child({ source: 'tracing' });
  log.info({ endpoint: config.tracing.endpoint ?? 'OTEL_EXPORTER_OTLP_*' }, 'tracing turns with OpenTelemetry');
  return {
    tracer: sdk.tracer,
    flush: () => sdk.flush(),
    module: {
      name: 'tracing',
      stop: {
        // After the turns and the edges: the spans of the last turns are ended by then.
        backends: async () => {
          let timer: NodeJS.Timeout | undefined;
          const bound = new Promise<'timeout'>((resolve) => {
            timer = setTimeout(() => resolve('timeout'), SHUTDOWN_BOUND_MS);
            timer.unref();
          });
          const done = sdk.shutdown().then(
            () => 'done' as const,
            (err: unknown) => {
              log.warn({ err: (err as Error).message }, 'exporting the last spans failed');
              return 'done' as const;
            },
          );
          if ((await Promise.race([done, bound])) === 'timeout') {
            log.warn({ timeout_ms: SHUTDOWN_BOUND_MS }, 'the last spans were not exported in time');
          }
          clearTimeout(timer);
        },
      },
    },
  };
}
