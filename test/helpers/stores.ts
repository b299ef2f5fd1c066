/**
 * Store backends for tests: the same suite runs against every database
 * (Kysely's habit). It reads the test-only environment variables
 * GATEHOUSE_TEST_PG_URL and GATEHOUSE_REQUIRE_PG, and probes PostgreSQL once
 * when first imported.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { describe } from 'vitest';
import type { Clock } from '../../src/lib/clock.js';
import { errorMessage } from '../../src/store/errors.js';
import {
  type GroupCommitOptions,
  type Store,
  type StoreDriver,
  type StoreOptions,
  openStore,
} from '../../src/store/index.js';

/** A store on a fresh, private database. */
export interface TestStore {
  store: Store;
  /** The options `store` was opened with; `reopen` uses them again. */
  options: StoreOptions;
  /** Opens another store on the same database (SQLite: same dataDir; PostgreSQL: same schema). Does not close `store`. */
  reopen(): Promise<Store>;
  /** Closes every store opened through this handle and deletes the database (temp dir / schema). */
  cleanup(): Promise<void>;
}

/** Per-test tweaks of the store options. */
export interface TestStoreOverrides {
  writer?: GroupCommitOptions;
  clock?: Clock;
  /** The fault seam (ADR 0014). */
  faults?: StoreOptions['faults'];
  onConnectionError?: StoreOptions['onConnectionError'];
}

/** One database to run a suite against. */
export interface TestBackend {
  name: StoreDriver;
  /** True when the suite should be skipped (PostgreSQL unreachable and not required). */
  skip: boolean;
  /** Why it is skipped, for the suite title; null when it runs. */
  skipReason: string | null;
  /** Opens a migrated store on a throwaway database. */
  open(overrides?: TestStoreOverrides): Promise<TestStore>;
}

const DEFAULT_PG_URL = 'postgres://postgres@127.0.0.1:5432/test';
const pgUrl = process.env.GATEHOUSE_TEST_PG_URL ?? DEFAULT_PG_URL;
const pgRequired = process.env.GATEHOUSE_REQUIRE_PG === '1';
const pgProblem = await probePostgres(pgUrl);

if (pgProblem !== null && !pgRequired) {
  console.warn(
    `[store tests] PostgreSQL not reachable at ${redactUrl(pgUrl)} (${pgProblem}): postgres cases are SKIPPED. ` +
      'Set GATEHOUSE_TEST_PG_URL to point at one, or GATEHOUSE_REQUIRE_PG=1 to fail instead of skipping.',
  );
}

/**
 * SQLite (a fresh temp dir per `open`) and PostgreSQL (a random schema per
 * `open` in GATEHOUSE_TEST_PG_URL, default postgres://postgres@127.0.0.1:5432/test).
 * When PostgreSQL is unreachable its backend is marked `skip`, unless
 * GATEHOUSE_REQUIRE_PG=1: then it runs and every `open` throws, so the suite
 * fails loudly.
 */
export function testBackends(): TestBackend[] {
  const pgSkipped = pgProblem !== null && !pgRequired;
  return [
    { name: 'sqlite', skip: false, skipReason: null, open: openSqlite },
    {
      name: 'postgres',
      skip: pgSkipped,
      skipReason: pgSkipped ? `PostgreSQL not reachable at ${redactUrl(pgUrl)}` : null,
      open: openPostgres,
    },
  ];
}

/**
 * `describe(title [backend], body)` once per backend, skipping (with the
 * reason in the title) a backend marked `skip`.
 */
export function describeBackends(title: string, body: (backend: TestBackend) => void): void {
  for (const backend of testBackends()) {
    const name = backend.skip
      ? `${title} [${backend.name}] (skipped: ${backend.skipReason})`
      : `${title} [${backend.name}]`;
    describe.skipIf(backend.skip)(name, () => body(backend));
  }
}

async function openSqlite(overrides: TestStoreOverrides = {}): Promise<TestStore> {
  const dataDir = mkdtempSync(join(tmpdir(), 'gatehouse-store-'));
  return openTracked({ driver: 'sqlite', dataDir, ...overrides }, async () => {
    rmSync(dataDir, { recursive: true, force: true });
  });
}

async function openPostgres(overrides: TestStoreOverrides = {}): Promise<TestStore> {
  if (pgProblem !== null) {
    throw new Error(`GATEHOUSE_REQUIRE_PG=1 but PostgreSQL is not reachable at ${redactUrl(pgUrl)}: ${pgProblem}`);
  }
  const schema = `gh_test_${randomBytes(8).toString('hex')}`;
  const options: StoreOptions = {
    driver: 'postgres',
    dataDir: tmpdir(),
    url: pgUrl,
    schema,
    poolSize: 4,
    ...overrides,
  };
  return openTracked(options, () => dropSchema(schema));
}

async function openTracked(options: StoreOptions, removeDatabase: () => Promise<void>): Promise<TestStore> {
  const opened: Store[] = [];
  const open = async (): Promise<Store> => {
    const store = await openStore(options);
    opened.push(store);
    return store;
  };
  let store: Store;
  try {
    store = await open();
  } catch (error) {
    await removeDatabase();
    throw error;
  }
  return {
    store,
    options,
    reopen: open,
    cleanup: async () => {
      await Promise.allSettled(opened.map((s) => s.close()));
      await removeDatabase();
    },
  };
}

async function dropSchema(schema: string): Promise<void> {
  await withClient(async (client) => {
    await client.query(`drop schema if exists "${schema}" cascade`);
  });
}

async function probePostgres(url: string): Promise<string | null> {
  try {
    await withClient(async (client) => {
      await client.query('select 1');
    }, url);
    return null;
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    return errorMessage(error) || (typeof code === 'string' ? code : 'connection failed');
  }
}

async function withClient(use: (client: pg.Client) => Promise<void>, url = pgUrl): Promise<void> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2000 });
  client.on('error', () => {});
  try {
    await client.connect();
    await use(client);
  } finally {
    await client.end().catch(() => undefined);
  }
}

function redactUrl(raw: string): string {
  try {
    const url = new URL(raw);
    if (url.password) url.password = '***';
    return url.toString();
  } catch {
    return '(unparseable URL)';
  }
}
