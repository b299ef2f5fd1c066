/**
 * Shared plumbing of the route tests: an in-process gateway on real SQLite in
 * a temp dir, optionally with the OpenAI provider pointed at the fake server
 * over HTTP, plus small helpers to read what the fake and the SSE streams saw.
 */
import { rmSync } from 'node:fs';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import type { Config } from '../../src/config/config.schema.js';
import { createGateway, type Gateway, type GatewayOptions } from '../../src/gateway.js';
import { ManualClock, type Clock } from '../../src/lib/clock.js';
import { createLogger } from '../../src/logs/logger.js';
import type { AgentTool } from '../../src/runtime/tools.js';
import type { FakeChatBody, FakeOpenAI } from '../helpers/fake-openai.js';
import { adminHeaders, apiHeaders, deepMerge, testConfig } from '../helpers/gateway.js';

export { adminHeaders, apiHeaders };

/** Rate limits far above what a test sends (the limiter itself is tested elsewhere). */
export const ROOMY_LIMITS = { read: 100_000, write: 100_000, analytics: 100_000, lifecycle: 100_000 };

export interface HarnessOptions {
  /** Config overrides, deep-merged over the test config. */
  config?: Record<string, unknown>;
  /** Points `provider` at this fake (type openai, gpt-4o-mini, 5 s timeout). Without it: echo. */
  fake?: FakeOpenAI;
  /** With `fake`: also points `embeddings` at it (model fake-embed). */
  embeddings?: boolean;
  tools?: AgentTool[];
  limits?: GatewayOptions['limits'];
  /** Time source for the gateway (default: the system clock). */
  clock?: Clock;
}

export interface Harness {
  readonly gateway: Gateway;
  readonly config: Config;
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
  /** Closes the gateway and removes the data dir. */
  close(): Promise<void>;
}

/** Builds a harness; remember to `close()` it. */
export async function startHarness(options: HarnessOptions = {}): Promise<Harness> {
  let overrides: Record<string, unknown> = { security: { rate_limits: ROOMY_LIMITS } };
  if (options.fake) {
    overrides = deepMerge(overrides, {
      provider: { type: 'openai', base_url: options.fake.url, model: 'gpt-4o-mini', timeout_seconds: 5 },
      ...(options.embeddings ? { embeddings: { base_url: options.fake.url, model: 'fake-embed' } } : {}),
    });
  }
  const config = testConfig(deepMerge(overrides, options.config ?? {}));
  const build = async (): Promise<Gateway> => {
    const logger = createLogger({ level: 'error', stdout: { write: () => undefined } });
    const gateway = await createGateway({
      config,
      logger,
      ...(options.tools ? { tools: options.tools } : {}),
      ...(options.limits ? { limits: options.limits } : {}),
      ...(options.clock ? { clock: options.clock } : {}),
    });
    await gateway.app.ready();
    return gateway;
  };
  let gateway = await build();
  let closed = false;
  const harness: Harness = {
    get gateway() {
      return gateway;
    },
    config,
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
      rmSync(config.data_dir, { recursive: true, force: true });
    },
  };
  return harness;
}

/** A harness whose time is a ManualClock. */
export interface ClockedHarness extends Harness {
  readonly clock: ManualClock;
}

/** Builds a harness on a ManualClock starting at `start` (ms since the epoch); remember to `close()` it. */
export async function startClockedHarness(
  start: number,
  options: Omit<HarnessOptions, 'clock'> = {},
): Promise<ClockedHarness> {
  const clock = new ManualClock(start);
  return Object.assign(await startHarness({ ...options, clock }), { clock });
}

/** The chat-completion requests the fake received (embeddings and others left out). */
export function chatRequests(fake: FakeOpenAI): FakeChatBody[] {
  return fake.requests.filter((r) => r.path === '/v1/chat/completions').map((r) => r.body);
}

/** Text of the last message with `role` in a chat request. */
export function lastOfRole(body: FakeChatBody, role: string): string | null {
  const messages = (body.messages ?? []).filter((m) => m.role === role);
  const last = messages.at(-1);
  if (!last) return null;
  return typeof last.content === 'string' ? last.content : JSON.stringify(last.content ?? null);
}

/** Every text content of a chat request, in order (to check what the model saw). */
export function allContents(body: FakeChatBody): string[] {
  return (body.messages ?? []).map((m) => (typeof m.content === 'string' ? m.content : ''));
}

/** One parsed server-sent event. */
export interface SseEvent {
  id?: string;
  event: string;
  data: unknown;
}

/** Parses a raw `text/event-stream` body into events (comments skipped). */
export function parseSse(raw: string): SseEvent[] {
  const events: SseEvent[] = [];
  for (const block of raw.split(/\n\n/)) {
    if (block.trim() === '') continue;
    let id: string | undefined;
    let event = 'message';
    const data: string[] = [];
    for (const line of block.split('\n')) {
      if (line.startsWith(':')) continue;
      const colon = line.indexOf(':');
      const field = colon === -1 ? line : line.slice(0, colon);
      const value = colon === -1 ? '' : line.slice(colon + 1).replace(/^ /, '');
      if (field === 'id') id = value;
      else if (field === 'event') event = value;
      else if (field === 'data') data.push(value);
    }
    if (data.length === 0 && id === undefined) continue;
    events.push({ ...(id !== undefined ? { id } : {}), event, data: JSON.parse(data.join('\n')) as unknown });
  }
  return events;
}

/** A promise with its resolve handle exposed (gates for tools and providers). */
export function deferred<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

/** A tool that records its calls and answers `result` (or what `run` gives). */
export function recordingTool(
  name: string,
  run: (args: Record<string, unknown>) => unknown = () => ({ ok: true }),
): AgentTool & { calls: Array<Record<string, unknown>> } {
  const calls: Array<Record<string, unknown>> = [];
  return {
    calls,
    spec: {
      name,
      description: `test tool ${name}`,
      parameters: { type: 'object', properties: { value: { type: 'string' } } },
    },
    async run(args) {
      calls.push(args);
      return run(args);
    },
  };
}

/** ISO 8601 UTC with milliseconds (DECISIONS §2). */
export const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/** A body for POST /message in chat `chat` with `text`. */
export function msg(text: string, chat = 'c1', extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { platform: 'api', user_id: 'u1', chat_id: chat, text, ...extra };
}
