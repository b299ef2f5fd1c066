import type { ChannelRegistry, WebhookChannel, WebSocketChannel } from './channels/index.js';
import type { Config } from './config/config.schema.js';
import type { ClusterBus, EventBus } from './events/index.js';
import type { Guard } from './http/guard.js';
import type { RouteDef } from './http/route.js';
import type { HttpApp } from './http/server.js';
import type { Clock } from './lib/clock.js';
import type { IdGenerator } from './lib/ids.js';
import type { Logger, LogPipeline } from './logs/index.js';
import type { GatewayMetrics } from './metrics/index.js';
import type { PairingService } from './pairing/index.js';
import type { AgentTool, ModelProvider } from './runtime/index.js';
import type { CronScheduler } from './scheduler/index.js';
import type { AuditLog } from './security/audit.js';
import type { SettingsService } from './settings/index.js';
import type { Store, StoreFaults } from './store/index.js';
import type { TaskRunner, TaskService } from './tasks/index.js';
import type { MessagePath } from './turns/index.js';
import type { LoadProbes } from './overload/index.js';

/**
 * What `createGateway` hands out: a small handle for the process entry, its
 * options, and — for tests and embedding only — the parts behind it.
 */

/** What the process entry needs from a built gateway. */
export interface Gateway {
  readonly config: Config;
  readonly app: HttpApp;
  readonly logger: Logger;
  /** The admin token when this start generated it (printed once, never logged), and where it is saved. */
  readonly firstStart: { adminToken: string | null; adminTokenPath: string | null };
  /** Starts listening; resolves to the base URL. */
  listen(): Promise<string>;
  /**
   * Graceful shutdown (DECISIONS §12): new requests 503, running work gets
   * up to `graceMs` to finish, then every part closes in order.
   */
  shutdown(graceMs?: number): Promise<void>;
}

/** The parts of a built gateway, for tests and embedding only (`gatewayInternals`). */
export interface GatewayInternals {
  readonly store: Store;
  readonly guard: Guard;
  readonly audit: AuditLog;
  readonly routes: RouteDef[];
  readonly messages: MessagePath;
  readonly provider: ModelProvider;
  readonly bus: EventBus;
  /** The cross-process bus (ADR 0025): local, redis or nats. */
  readonly cluster: ClusterBus;
  readonly metrics: GatewayMetrics;
  readonly cron: CronScheduler;
  readonly settings: SettingsService;
  readonly channels: ChannelRegistry;
  readonly pairing: PairingService;
  readonly websocket: WebSocketChannel;
  readonly webhook: WebhookChannel | null;
  readonly tasks: { service: TaskService; runner: TaskRunner };
  /** Tracing of turns (DECISIONS §21): `flush` exports the spans ended so far (a no-op when off). */
  readonly tracing: { flush(): Promise<void> };
  isDraining(): boolean;
  /** Enters draining: every request but health is answered 503 from now on. */
  beginDrain(): void;
}

/** Filled by `createGateway`: the parts behind each handle it returned. */
export const internalsOf = new WeakMap<Gateway, GatewayInternals>();

/** The parts of a gateway built by `createGateway` (tests, embedding). */
export function gatewayInternals(gateway: Gateway): GatewayInternals {
  const found = internalsOf.get(gateway);
  if (!found) throw new Error('not a gateway built by createGateway');
  return found;
}

export interface GatewayOptions {
  config: Config;
  clock?: Clock;
  ids?: IdGenerator;
  logger?: Logger;
  /** The built dashboard served at `/` (`index.html` + `assets/`); default `dist/web/` of this package. */
  dashboardRoot?: string;
  /** Routes added after the built-in ones (embedding, kernel tests). */
  extraRoutes?: RouteDef[];
  /** The configuration file read at start-up (`loadConfig().configPath`); PUT /config writes to it. */
  configPath?: string | null;
  /** That file's raw object (`loadConfig().fileObject`): the base of a write if the file has gone. */
  fileObject?: Record<string, unknown>;
  /** Log pipeline to use instead of building one (tests: read its buffer and files). Not closed by the gateway. */
  logs?: LogPipeline;
  /** Replaces the configured model provider (tests, embedding). */
  provider?: ModelProvider;
  /** Test overrides for bounds that are impractical to reach in a test. */
  limits?: { idempotencyCeiling?: number; overload?: LoadProbes };
  /** Extra agent tools registered after the built-in ones (tests, embedding). */
  tools?: AgentTool[];
  /** Tests only: the store's fault seam, to fail every query as in an outage (ADR 0014). */
  storeFaults?: StoreFaults;
  /** Keepalive interval of SSE answers in ms (default 15 s); tests shorten it. */
  ssePingMs?: number;
}

/**
 * What a start refused after the store opened does before it rethrows:
 * logs why, closes what was opened (the store, the log pipeline it built)
 * and releases the instance claim, so nothing is left half open.
 */
export function refuseStart(opened: {
  logger: Logger;
  store: Store;
  logs: LogPipeline | null;
  instance: { release(): Promise<void> };
}): (err: unknown) => Promise<never> {
  return async (err) => {
    opened.logger.error({ source: 'bus', err: (err as Error).message }, 'start-up refused: the bus cannot be used');
    await opened.store.close();
    await opened.logs?.close();
    await opened.instance.release();
    throw err;
  };
}
