/**
 * The data directory keeps other local users out (issue 10, ADR 0013): the
 * directory 0700, the database with its WAL and shared-memory files, the
 * audit log and the day log files 0600 — created that way, and tightened at
 * start when an older install left them wider.
 */
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createLogPipeline, type LogPipeline } from '../../src/logs/index.js';
import { startHarness, testConfig, type Harness } from '../helpers/harness.js';
import { internals } from '../helpers/internals.js';

const mode = (path: string): string => (statSync(path).mode & 0o777).toString(8).padStart(4, '0');

let home: string | null = null;
let harness: Harness | null = null;
afterEach(async () => {
  await harness?.close();
  harness = null;
  if (home) rmSync(home, { recursive: true, force: true });
  home = null;
});

/** Starts a gateway on `dataDir` with a log pipeline writing day files, writes one audit record and one log line. */
async function startOn(dataDir: string): Promise<Harness> {
  const config = testConfig({ data_dir: dataDir, logs: { level: 'info' } });
  let pipeline: LogPipeline | undefined;
  harness = await startHarness({
    loaded: { config, configPath: null, fileObject: {} },
    logs: (c) =>
      (pipeline = createLogPipeline({
        dataDir: c.data_dir,
        level: 'info',
        bufferEntries: 100,
        stdout: { write: () => undefined },
      })),
  });
  const parts = internals(harness.gateway);
  parts.audit.record({ event: 'auth_failure', ip: '127.0.0.1', user: 'tok_x', mode: 'open' });
  await parts.audit.flush();
  harness.gateway.logger.info('a line for the day file');
  await pipeline?.flush();
  const res = await harness.inject({
    method: 'POST',
    url: '/api/v1/sessions',
    payload: {},
    headers: { 'x-api-token': 'test-api-token-0123456789' },
  });
  expect(res.statusCode).toBe(201);
  return harness;
}

/** Waits (bounded) until the log pipeline wrote its first day file. */
async function dayFiles(dataDir: string): Promise<string[]> {
  const dir = join(dataDir, 'logs');
  for (let i = 0; i < 100; i++) {
    const files = existsSync(dir) ? readdirSync(dir).filter((f) => f.endsWith('.jsonl')) : [];
    if (files.length > 0) return files.map((f) => join(dir, f));
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error('no day log file was written');
}

function expectPrivate(dataDir: string, logFiles: string[]): void {
  expect(mode(dataDir), 'data dir').toBe('0700');
  for (const name of ['gatehouse.db', 'gatehouse.db-wal', 'gatehouse.db-shm']) {
    expect(mode(join(dataDir, name)), name).toBe('0600');
  }
  expect(mode(join(dataDir, 'gateway_auth')), 'gateway_auth').toBe('0700');
  expect(mode(join(dataDir, 'gateway_auth', 'audit.jsonl')), 'audit.jsonl').toBe('0600');
  expect(mode(join(dataDir, 'logs')), 'logs dir').toBe('0700');
  for (const file of logFiles) expect(mode(file), file).toBe('0600');
}

describe('data directory modes', () => {
  it('creates the data dir 0700 and every private file 0600, whatever the umask allows', async () => {
    home = mkdtempSync(join(tmpdir(), 'gatehouse-modes-'));
    const dataDir = join(home, 'data');
    const previous = process.umask(0o022);
    try {
      await startOn(dataDir);
      expectPrivate(dataDir, await dayFiles(dataDir));
    } finally {
      process.umask(previous);
    }
  });

  it('tightens what an older install left readable, at start', async () => {
    home = mkdtempSync(join(tmpdir(), 'gatehouse-modes-'));
    const dataDir = join(home, 'data');
    await startOn(dataDir);
    const logFiles = await dayFiles(dataDir);
    await harness!.close();
    harness = null;

    // As an older version left them: everything readable by everyone.
    chmodSync(dataDir, 0o755);
    chmodSync(join(dataDir, 'gateway_auth'), 0o755);
    chmodSync(join(dataDir, 'logs'), 0o755);
    mkdirSync(join(dataDir, 'spare'), { recursive: true });
    for (const name of ['gatehouse.db', 'gatehouse.db-wal', 'gatehouse.db-shm']) {
      const path = join(dataDir, name);
      if (!existsSync(path)) writeFileSync(path, '');
      chmodSync(path, 0o644);
    }
    chmodSync(join(dataDir, 'gateway_auth', 'audit.jsonl'), 0o644);
    for (const file of logFiles) chmodSync(file, 0o644);

    await startOn(dataDir);
    expectPrivate(dataDir, await dayFiles(dataDir));
  });
});
