import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { type ClientSettings, clientSettings, readRawConfig } from './config.file.js';
import { clientSettingsOf, loadConfig } from './config.load.js';

/** A working directory holding `gatehouse.yaml` with `yaml` (none when undefined). */
function dirWith(yaml?: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-config-file-'));
  if (yaml !== undefined) writeFileSync(join(dir, 'gatehouse.yaml'), yaml);
  return dir;
}

/** The client settings read without the schema, or null. */
function fast(cwd: string, env: NodeJS.ProcessEnv = {}): ClientSettings | null {
  return clientSettings(readRawConfig({ flags: {}, env, cwd, dataDirFallback: true }), cwd);
}

/** The same settings from the validated configuration. */
function validated(cwd: string, env: NodeJS.ProcessEnv = {}): ClientSettings {
  return clientSettingsOf(loadConfig({ argv: [], env, cwd, dataDirFallback: true }));
}

describe('client settings read without the schema', () => {
  const cases: Array<[string, string | undefined, NodeJS.ProcessEnv]> = [
    ['no file: the defaults', undefined, {}],
    ['an empty file', '', {}],
    [
      'every key read, set',
      'data_dir: ./state\ngateway:\n  host: 0.0.0.0\n  port: 9000\n  api_prefix: /gw/v2\n  auth:\n    admin_tokens: [a-token-of-length]\n    api_tokens: [b-token, c-token]\nsecurity:\n  profile: extended\n',
      {},
    ],
    [
      'the environment over the file',
      'gateway:\n  port: 9000\n',
      { GATEHOUSE_PORT: '9100', GATEHOUSE_HOST: '::', GATEHOUSE_DATA_DIR: '/tmp/gh' },
    ],
    ['other keys are not read', 'limits:\n  overload:\n    memory_watermark_mb: 300\nlogs:\n  level: warning\n', {}],
  ];
  for (const [name, yaml, env] of cases) {
    it(`${name}: the same as the validated configuration`, () => {
      const cwd = dirWith(yaml);
      expect(fast(cwd, env)).toEqual(validated(cwd, env));
    });
  }

  const invalid: Array<[string, string, NodeJS.ProcessEnv]> = [
    ['a port that is text', 'gateway:\n  port: eighty\n', {}],
    ['a port out of range', 'gateway:\n  port: 70000\n', {}],
    ['a port from the environment that is not a number', '', { GATEHOUSE_PORT: '80a' }],
    ['an api_prefix ending in /', 'gateway:\n  api_prefix: /api/\n', {}],
    ['an unknown profile', 'security:\n  profile: lax\n', {}],
    ['a token that is not text', 'gateway:\n  auth:\n    api_tokens: [123]\n', {}],
    ['gateway that is not a mapping', 'gateway: 8080\n', {}],
    ['an empty data_dir', 'data_dir: ""\n', {}],
  ];
  for (const [name, yaml, env] of invalid) {
    it(`${name}: not read here (the schema names the problem)`, () => {
      const cwd = dirWith(yaml);
      expect(fast(cwd, env)).toBeNull();
      expect(() => validated(cwd, env)).toThrow(/invalid configuration/);
    });
  }
});
