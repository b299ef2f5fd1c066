/**
 * The `gatehouse` command runs from the bundle (dist/bundle/, ADR 0044), built by `npm ci` / `npm test`
 * (scripts/build-if-needed.mjs): on a fresh data dir it starts and answers /health; the files the bundle finds
 * beside the compiled modules (the docs page, the package version) are found; and a stack trace names the
 * source files and lines, through the bundle's source maps.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ROOT, spawnGateway, stopChild, waitForHealth } from '../../bench/processes.js';
import { freePort, gatehouse, removeTempDirs, tempDir, writeConfig } from '../cli/helpers.js';
import { loadedSources, MODULE_LOG_FLAGS } from './loaded-modules.js';

const PACKAGE_VERSION = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;

afterAll(removeTempDirs);

describe('the bundled gateway', () => {
  it('starts on a fresh data dir from the bundle and answers /health, the docs page and its version', async () => {
    const dir = tempDir();
    const file = writeConfig(dir, { data_dir: join(dir, 'data'), gateway: { port: await freePort() } });
    const log = join(dir, 'modules');
    const gateway = spawnGateway(['--config', file], {
      cwd: dir,
      nodeArgs: [...MODULE_LOG_FLAGS],
      env: { GATEHOUSE_MODULE_LOG: log },
      startTimeoutMs: 20_000,
    });
    try {
      const url = await gateway.ready;
      const health = (await waitForHealth(url)) as { version: string };
      expect(health.version).toBe(PACKAGE_VERSION);
      const docs = await fetch(`${url}/api/v1/docs/docs.css`);
      expect(docs.status).toBe(200);
      expect((await docs.text()).length).toBeGreaterThan(0);
    } finally {
      expect(await stopChild(gateway, 10_000)).toBe(0);
    }
    const urls = readFileSync(log, 'utf8').split('\n');
    // The bundle's entry ran, and no module tsc compiled except main.js itself.
    expect(urls.some((u) => u.endsWith('/dist/bundle/cli.js'))).toBe(true);
    expect(urls.filter((u) => u.includes('/dist/src/') && !u.endsWith('/dist/src/main.js'))).toEqual([]);
    expect(loadedSources(log).has('src/gateway.ts')).toBe(true);
  });

  it('names the source files and lines in a stack trace', async () => {
    const dir = tempDir();
    // A data dir that is a file: rotating the admin token fails in mkdir, an error no command expects.
    writeFileSync(join(dir, 'not-a-dir'), '');
    writeConfig(dir, { data_dir: join(dir, 'not-a-dir') });
    const run = await gatehouse(['token', 'rotate'], { cwd: dir });
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('gatehouse: fatal: Error: ENOTDIR');
    expect(run.stderr).toMatch(/at ensurePrivateDirSync \(.*\/src\/lib\/private-files\.ts:\d+:\d+\)/);
    expect(run.stderr).toMatch(/at replaceAdminToken \(.*\/src\/security\/admin-token\.ts:\d+:\d+\)/);
  });
});
