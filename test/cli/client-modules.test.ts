/**
 * The client commands load only what they use (ADR 0044): `--version`, `--help`, `status`, `token show` and
 * `logs` answer without loading the gateway's server modules (composition root, HTTP server, store, message
 * path, Fastify, Kysely, SQLite, pino). Each process records the modules it loads (test/process/module-log.mjs);
 * the gateway they talk to runs with the same recorder, and it does load them (the check can fail).
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GATEWAY_MAIN, GATEWAY_NODE_FLAGS, spawnGateway, stopChild, type Child } from '../../bench/processes.js';
import { loadedSources, MODULE_LOG_FLAGS, serverModulesIn, SERVER_MODULES } from '../process/loaded-modules.js';
import { cleanEnv, freePort, removeTempDirs, tempDir, writeConfig, type Run } from './helpers.js';

/** The configuration's schema (zod): validating the whole configuration is for `serve` and `doctor`. */
const CONFIG_SCHEMA = 'src/config/config.schema.ts';

/** Runs `gatehouse <args>` with the module recorder; resolves with how it ended and the sources it loaded. */
function recorded(args: string[], cwd: string, log: string): Promise<Run & { sources: Set<string> }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...GATEWAY_NODE_FLAGS, ...MODULE_LOG_FLAGS, GATEWAY_MAIN, ...args], {
      cwd,
      env: cleanEnv({ GATEHOUSE_MODULE_LOG: log }),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
    child.once('error', reject);
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr, sources: loadedSources(log) });
    });
  });
}

describe('the client commands load only what they use', () => {
  let dir: string;
  let file: string;
  let gateway: Child;
  let gatewayLog: string;

  beforeAll(async () => {
    dir = tempDir();
    file = writeConfig(dir, { data_dir: join(dir, 'data'), gateway: { port: await freePort() } });
    gatewayLog = join(dir, 'gateway.modules');
    gateway = spawnGateway(['--config', file], {
      cwd: dir,
      nodeArgs: [...MODULE_LOG_FLAGS],
      env: { GATEHOUSE_MODULE_LOG: gatewayLog },
      startTimeoutMs: 20_000,
    });
    await gateway.ready;
  });

  afterAll(async () => {
    if (gateway) await stopChild(gateway, 5_000);
    removeTempDirs();
  });

  it('the gateway itself loads the server modules (what the check looks for)', () => {
    const sources = loadedSources(gatewayLog);
    expect(sources.has('src/cli/program.ts')).toBe(true);
    expect(serverModulesIn(sources)).toEqual(SERVER_MODULES);
  });

  const commands: Array<{ name: string; args: () => string[]; expectOut: RegExp }> = [
    { name: '--version', args: () => ['--version'], expectOut: /^\d+\.\d+\.\d+\n$/ },
    { name: '--help', args: () => ['--help'], expectOut: /Usage: gatehouse/ },
    { name: 'status', args: () => ['status', '--config', file], expectOut: /Gatehouse at http:\/\/127\.0\.0\.1:\d+/ },
    { name: 'token show', args: () => ['token', 'show', '--config', file], expectOut: /Admin token / },
    { name: 'logs', args: () => ['logs', '--config', file, '--limit', '5'], expectOut: /listening on/ },
  ];

  for (const command of commands) {
    it(`gatehouse ${command.name} answers without them`, async () => {
      const log = join(dir, `${command.name.replace(/\W+/g, '-')}.modules`);
      const run = await recorded(command.args(), dir, log);
      expect(run.code, run.stderr).toBe(0);
      expect(run.stdout).toMatch(command.expectOut);
      expect(run.sources.has('src/cli/program.ts')).toBe(true); // the recorder saw the command line itself
      expect(serverModulesIn(run.sources)).toEqual([]);
      // Nor the configuration's schema: the few keys a client reads are read without it.
      expect([...run.sources].filter((s) => s === CONFIG_SCHEMA || s.startsWith('node_modules/zod/'))).toEqual([]);
    });
  }

  it('a key the client reads that is not valid is reported as serve reports it (the schema is loaded then)', async () => {
    const bad = writeConfig(dir, { data_dir: join(dir, 'data'), gateway: { port: 'eighty' } }, 'bad.yaml');
    const run = await recorded(['token', 'show', '--config', bad], dir, join(dir, 'bad.modules'));
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/gateway\.port/);
    expect(run.sources.has(CONFIG_SCHEMA)).toBe(true);
  });
});
