/**
 * The in-process test gateway: a valid config in a temp data dir, one
 * builder (`startHarness`) and one vitest hook around it (`useHarness`) that
 * opens the gateway (and, when asked, a strict fake OpenAI server and a
 * ManualClock) before each test or block and closes everything after it,
 * failing the test when the fake saw a call it had no script for.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { afterAll, afterEach, beforeAll, beforeEach } from 'vitest';
import { validateConfig, type Config } from '../../src/config/config.schema.js';
import { createGateway, type Gateway, type GatewayInternals, type GatewayOptions } from '../../src/gateway.js';
import { ManualClock, type Clock } from '../../src/lib/clock.js';
import type { LogPipeline } from '../../src/logs/index.js';
import { createLogger } from '../../src/logs/logger.js';
import { startFakeOpenAI, type FakeEmbeddingReply, type FakeOpenAI, type FakeReply } from './fake-openai.js';
import { internals } from './internals.js';
import { assertNoViolations, watchResponses, type ResponseWatch } from './response-contract.js';

export const API_TOKEN = 'test-api-token-0123456789';
export const ADMIN_TOKEN = 'test-admin-token-0123456789';
export const adminHeaders = { 'x-api-token': ADMIN_TOKEN };
export const apiHeaders = { 'x-api-token': API_TOKEN };

/** Rate limits far above what a test sends (the limiter itself is tested elsewhere). */
export const ROOMY_LIMITS = { read: 100_000, write: 100_000, analytics: 100_000, lifecycle: 100_000 };

/** Deep-merges plain objects (arrays and scalars replace). */
export function deepMerge(base: Record<string, unknown>, patch: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...base };
  for (const [key, value] of Object.entries(patch)) {
    const current = out[key];
    out[key] =
      value &&
      typeof value === 'object' &&
      !Array.isArray(value) &&
      current &&
      typeof current === 'object' &&
      !Array.isArray(current)
        ? deepMerge(current as Record<string, unknown>, value as Record<string, unknown>)
        : value;
  }
  return out;
}

/** A valid config in a fresh temp data dir, with one api and one admin token, merged with `overrides`. */
export function testConfig(overrides: Record<string, unknown> = {}): Config {
  const dataDir = mkdtempSync(join(tmpdir(), 'gatehouse-test-'));
  const raw = deepMerge(
    {
      data_dir: dataDir,
      gateway: { port: 0, auth: { api_tokens: [API_TOKEN], admin_tokens: [ADMIN_TOKEN] } },
      logs: { level: 'error' },
      // Many gateways share a test process, and its memory and event loop are the whole worker's: load
      // shedding's process limits are off unless a test sets them (test/overload/).
      limits: { overload: { memory_watermark_mb: null, max_event_loop_delay_ms: null } },
    },
    overrides,
  );
  const result = validateConfig(raw);
  if (!result.ok) throw new Error(`bad test config: ${JSON.stringify(result.errors)}`);
  return result.config;
}

/** A configuration loaded by the caller (e.g. `loadConfig` on a real file), used exactly as it is. */
export interface LoadedTestConfig {
  config: Config;
  configPath: string | null;
  fileObject: Record<string, unknown>;
}

/** How to build one in-process gateway. */
export interface HarnessOptions {
  /** Config overrides, deep-merged over `testConfig()` (a fresh temp data dir, removed on close). */
  config?: Record<string, unknown>;
  /** Instead of `config`: a loaded configuration, used as is (no overrides; its directories stay the caller's). */
  loaded?: LoadedTestConfig;
  /** `ROOMY_LIMITS` under `config` (default true); false keeps the configured rate limits (tests of the limits). */
  roomyLimits?: boolean;
  /** Points `provider` at this fake (type openai, gpt-4o-mini, 5 s timeout). Without it: the echo provider. */
  fake?: FakeOpenAI;
  /** With `fake`: also points `embeddings` at it (model fake-embed). */
  embeddings?: boolean;
  /** Time source of the gateway; a number starts a fresh ManualClock there (default: the system clock). */
  clock?: Clock | number;
  tools?: GatewayOptions['tools'];
  limits?: GatewayOptions['limits'];
  extraRoutes?: GatewayOptions['extraRoutes'];
  /** Replaces the configured model provider. */
  provider?: GatewayOptions['provider'];
  /** The store's fault seam (ADR 0014). */
  storeFaults?: GatewayOptions['storeFaults'];
  /** Keepalive interval of SSE answers in ms (default 15 s). */
  ssePingMs?: GatewayOptions['ssePingMs'];
  /**
   * Builds the log pipeline GET /logs serves from (its logger is the
   * gateway's), once, for the harness's config; the harness closes it after
   * the gateway and before removing the data dir.
   */
  logs?: (config: Config) => LogPipeline;
}

/** One in-process gateway (not listening unless `gateway.listen()` is called), ready for `inject`. */
export interface Harness {
  /** The gateway handle: `app`, `listen`, `shutdown`, `config`, `logger` (anything else through `internals`). */
  readonly gateway: Gateway;
  /** The gateway's internals (`internals(gateway)`). */
  readonly internals: GatewayInternals;
  readonly config: Config;
  /** Every log line written (JSON strings), unless the harness has a log pipeline. */
  readonly logs: string[];
  /** The fake the provider points at; throws when the harness has none. */
  readonly fake: FakeOpenAI;
  /** The gateway's ManualClock; throws when its clock is another one. */
  readonly clock: ManualClock;
  /**
   * The response contract of the current gateway (ADR 0016): every answer is
   * checked against the OpenAPI document; `close()` throws the violations.
   */
  readonly responses: ResponseWatch;
  inject(options: InjectOptions): Promise<LightMyRequestResponse>;
  /** POST /api/v1/message with the api token (plus `headers`). */
  message(
    body: Record<string, unknown>,
    headers?: Record<string, string>,
    query?: string,
  ): Promise<LightMyRequestResponse>;
  /** GET with the admin token. */
  adminGet(url: string): Promise<LightMyRequestResponse>;
  /** Shuts the gateway down (running turns get `graceMs`) and builds a new one on the same data dir. */
  restart(graceMs?: number): Promise<void>;
  /** Shuts the gateway down and removes the data dir it made; idempotent. */
  close(): Promise<void>;
}

/** Builds a harness; remember to `close()` it (`useHarness` does). */
export async function startHarness(options: HarnessOptions = {}): Promise<Harness> {
  const config = options.loaded?.config ?? testConfig(harnessOverrides(options));
  const clock = typeof options.clock === 'number' ? new ManualClock(options.clock) : options.clock;
  const logs: string[] = [];
  const pipeline = options.logs?.(config);
  const build = async (): Promise<Gateway> => {
    const logger =
      pipeline?.logger ?? createLogger({ level: config.logs.level, stdout: { write: (line) => void logs.push(line) } });
    const gateway = await createGateway({
      config,
      logger,
      ...(clock ? { clock } : {}),
      ...(options.loaded ? { configPath: options.loaded.configPath, fileObject: options.loaded.fileObject } : {}),
      ...(options.tools ? { tools: options.tools } : {}),
      ...(options.limits ? { limits: options.limits } : {}),
      ...(options.extraRoutes ? { extraRoutes: options.extraRoutes } : {}),
      ...(options.provider ? { provider: options.provider } : {}),
      ...(options.storeFaults ? { storeFaults: options.storeFaults } : {}),
      ...(options.ssePingMs !== undefined ? { ssePingMs: options.ssePingMs } : {}),
      ...(pipeline ? { logs: pipeline } : {}),
    });
    watches.push(watchResponses(gateway.app, () => internals(gateway).routes, config));
    await gateway.app.ready();
    return gateway;
  };
  const watches: ResponseWatch[] = [];
  let gateway = await build();
  let closed = false;
  const harness: Harness = {
    get gateway() {
      return gateway;
    },
    get internals() {
      return internals(gateway);
    },
    config,
    logs,
    get fake() {
      if (!options.fake) throw new Error('this harness has no fake provider (pass `fake`)');
      return options.fake;
    },
    get clock() {
      if (!(clock instanceof ManualClock)) throw new Error('this harness runs on no ManualClock (pass `clock`)');
      return clock;
    },
    get responses() {
      return watches[watches.length - 1]!;
    },
    inject: (opts) => gateway.app.inject(opts),
    message: (body, headers = {}, query = '') =>
      gateway.app.inject({
        method: 'POST',
        url: `/api/v1/message${query}`,
        headers: { ...apiHeaders, ...headers },
        payload: body,
      }),
    adminGet: (url) => gateway.app.inject({ method: 'GET', url, headers: adminHeaders }),
    async restart(graceMs = 1_000) {
      await gateway.shutdown(graceMs);
      gateway = await build();
    },
    async close() {
      if (closed) return;
      closed = true;
      await gateway.shutdown(0);
      await pipeline?.close();
      if (!options.loaded) rmSync(config.data_dir, { recursive: true, force: true });
      for (const watch of watches) assertNoViolations(watch);
    },
  };
  return harness;
}

/** The config overrides a harness applies over the test config: roomy limits, the fake, then `config`. */
function harnessOverrides(options: HarnessOptions): Record<string, unknown> {
  let overrides: Record<string, unknown> =
    options.roomyLimits === false ? {} : { security: { rate_limits: ROOMY_LIMITS } };
  if (options.fake) {
    overrides = deepMerge(overrides, {
      provider: { type: 'openai', base_url: options.fake.url, model: 'gpt-4o-mini', timeout_seconds: 5 },
      ...(options.embeddings ? { embeddings: { base_url: options.fake.url, model: 'fake-embed' } } : {}),
    });
  }
  return deepMerge(overrides, options.config ?? {});
}

/** Standing replies of the hook's fake OpenAI (queued replies are added by each test). */
export interface FakeScript {
  /** Answers every chat call the test's queue does not cover. */
  always?: FakeReply;
  /** Answers every embeddings call the test's queue does not cover. */
  alwaysEmbeddings?: FakeEmbeddingReply;
}

/** What `useHarness` opens around each test (or block). */
export interface HarnessHookOptions extends Omit<HarnessOptions, 'fake'> {
  /**
   * Starts a fresh strict fake OpenAI for each test (or block) and points the
   * provider at it; `true` scripts nothing, a `FakeScript` sets standing
   * replies. After the test, a call it had no script for fails the test.
   */
  fake?: true | FakeScript;
  /** `each` (default): a new gateway per test; `all`: one for the describe block (each test cleans up). */
  scope?: 'each' | 'all';
  /** Opens the gateway in the hook (default true); false: each test calls `open()` with its own options. */
  autoOpen?: boolean;
}

/** The accessor `useHarness` returns: the harness of the running test, plus `open`. */
export interface HarnessHook extends Harness {
  /**
   * Opens the harness of this test with `options` over the hook's options
   * (`config` deep-merged), closing one already open; the hook closes it.
   */
  open(options?: HarnessOptions): Promise<Harness>;
}

/**
 * Registers the set-up and tear-down of a gateway around each test of the
 * enclosing describe block (or around the whole block with `scope: 'all'`)
 * and returns an accessor to it. `options` may be a function, read when the
 * hook runs.
 */
export function useHarness(options: HarnessHookOptions | (() => HarnessHookOptions) = {}): HarnessHook {
  const read = (): HarnessHookOptions => (typeof options === 'function' ? options() : options);
  let base: HarnessOptions = {};
  let fake: FakeOpenAI | undefined;
  let current: Harness | undefined;

  const setUp = async (): Promise<void> => {
    const { fake: script, scope: _scope, autoOpen, ...rest } = read();
    base = rest;
    if (script) {
      fake = await startFakeOpenAI();
      if (script !== true && script.always) fake.always(script.always);
      if (script !== true && script.alwaysEmbeddings) fake.alwaysEmbeddings(script.alwaysEmbeddings);
      base = { ...base, fake };
    }
    if (autoOpen !== false) current = await startHarness(base);
  };
  const tearDown = async (): Promise<void> => {
    const harness = current;
    const server = fake;
    current = undefined;
    fake = undefined;
    try {
      await harness?.close();
    } finally {
      await server?.close();
    }
    server?.verify();
  };
  const open = async (extra: HarnessOptions = {}): Promise<Harness> => {
    await current?.close();
    current = undefined;
    current = await startHarness({
      ...base,
      ...extra,
      ...(base.config || extra.config ? { config: deepMerge(base.config ?? {}, extra.config ?? {}) } : {}),
    });
    return current;
  };
  const opened = (): Harness => {
    if (!current) throw new Error('no harness is open: call open() in the test (autoOpen is off)');
    return current;
  };

  if (read().scope === 'all') {
    beforeAll(setUp);
    afterAll(tearDown);
    // Pin an unscripted call on the test that made it, not on the whole block.
    afterEach(() => fake?.verify());
  } else {
    beforeEach(setUp);
    afterEach(tearDown);
  }

  return {
    open,
    get gateway() {
      return opened().gateway;
    },
    get internals() {
      return opened().internals;
    },
    get config() {
      return opened().config;
    },
    get logs() {
      return opened().logs;
    },
    get fake() {
      if (!fake) throw new Error('this hook has no fake provider (pass `fake`)');
      return fake;
    },
    get clock() {
      return opened().clock;
    },
    get responses() {
      return opened().responses;
    },
    inject: (opts) => opened().inject(opts),
    message: (body, headers, query) => opened().message(body, headers, query),
    adminGet: (url) => opened().adminGet(url),
    restart: (graceMs) => opened().restart(graceMs),
    close: () => opened().close(),
  };
}

/** The harness as the scheduler's tests know it. */
export type TestGateway = Harness;

/**
 * A harness with the configured rate limits, from config overrides and a
 * clock (the signature src/scheduler/cron-scheduler.test.ts calls).
 */
export function startTestGateway(overrides: Record<string, unknown> = {}, clock?: Clock): Promise<Harness> {
  return startHarness({ config: overrides, roomyLimits: false, ...(clock ? { clock } : {}) });
}
