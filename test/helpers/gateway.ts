import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { validateConfig, type Config } from '../../src/config/config.schema.js';
import { createGateway, type Gateway } from '../../src/gateway.js';
import { createLogger } from '../../src/logs/logger.js';
import type { Clock } from '../../src/lib/clock.js';

export const API_TOKEN = 'test-api-token-0123456789';
export const ADMIN_TOKEN = 'test-admin-token-0123456789';

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
    },
    overrides,
  );
  const result = validateConfig(raw);
  if (!result.ok) throw new Error(`bad test config: ${JSON.stringify(result.errors)}`);
  return result.config;
}

export interface TestGateway {
  gateway: Gateway;
  config: Config;
  /** Collected log lines (JSON strings). */
  logs: string[];
  close(): Promise<void>;
}

/** Builds an in-process gateway (not listening) for `app.inject` tests. */
export async function startTestGateway(overrides: Record<string, unknown> = {}, clock?: Clock): Promise<TestGateway> {
  const config = testConfig(overrides);
  const logs: string[] = [];
  const logger = createLogger({ level: config.logs.level, stdout: { write: (line) => void logs.push(line) } });
  const gateway = await createGateway({ config, logger, ...(clock ? { clock } : {}) });
  await gateway.app.ready();
  return {
    gateway,
    config,
    logs,
    async close() {
      await gateway.shutdown(0);
      rmSync(config.data_dir, { recursive: true, force: true });
    },
  };
}

export const adminHeaders = { 'x-api-token': ADMIN_TOKEN };
export const apiHeaders = { 'x-api-token': API_TOKEN };
