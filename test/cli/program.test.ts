import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ROOT } from '../../bench/processes.js';
import { gatehouse, removeTempDirs } from './helpers.js';

const VERSION = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;

describe('gatehouse: help, version and usage errors (the built binary)', () => {
  afterAll(removeTempDirs);

  it('--help lists every command and the exit codes, exit 0', async () => {
    const run = await gatehouse(['--help']);
    expect(run.code).toBe(0);
    for (const command of [
      'serve',
      'init',
      'chat',
      'status',
      'logs',
      'pair',
      'token',
      'mcp',
      'subscriptions',
      'doctor',
      'security',
    ]) {
      expect(run.stdout).toMatch(new RegExp(`^\\s+${command}\\b`, 'm'));
    }
    expect(run.stdout).toContain('Exit codes: 0 ok, 1 a failure or a critical finding, 2 usage.');
  });

  it('each command has its own --help', async () => {
    const init = await gatehouse(['init', '--help']);
    expect(init.code).toBe(0);
    expect(init.stdout).toMatch(/--yes/);
    expect(init.stdout).toMatch(/--output <file>/);
    expect(init.stdout).toMatch(/--force/);
    const doctor = await gatehouse(['help', 'doctor']);
    expect(doctor.code).toBe(0);
    expect(doctor.stdout).toMatch(/--config <file>/);
    expect(doctor.stdout).toMatch(/--json/);
  });

  it('--version prints the package version, exit 0', async () => {
    const run = await gatehouse(['--version']);
    expect(run.code).toBe(0);
    expect(run.stdout.trim()).toBe(VERSION);
  });

  it('an unknown command, an unknown option or a bad option value is a usage error: exit 2 and a hint', async () => {
    const [command, option, value, missing] = await Promise.all([
      gatehouse(['initt']),
      gatehouse(['doctor', '--bogus']),
      gatehouse(['logs', '--level', 'loud', '--url', 'http://127.0.0.1:9']),
      gatehouse(['pair']),
    ]);
    expect(command.code).toBe(2);
    expect(command.stderr).toContain("unknown command 'initt'");
    expect(command.stderr).toContain('--help');
    expect(option.code).toBe(2);
    expect(option.stderr).toContain("unknown option '--bogus'");
    expect(value.code).toBe(2);
    expect(value.stderr).toContain('--level must be one of');
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain("missing required argument 'platform'");
  });
});
