import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DATA_DIR_CONFIG_FILE, dataDirConfigPath, loadConfig } from './config.load.js';
import { isLiveConfigPath, isLockedConfigPath } from './config.live.js';
import {
  diffConfigPaths,
  getConfigPath,
  jsonEqual,
  mergeConfigPatch,
  pathsOverlap,
  setConfigPath,
} from './config.merge.js';
import { defaultConfig, validateConfig } from './config.schema.js';
import { deepObject } from '../../test/helpers/deep.js';

describe('mergeConfigPatch', () => {
  it('merges objects, replaces arrays and scalars, and leaves its inputs alone', () => {
    const base = { a: { b: 1, c: [1, 2], d: { e: 'x' } }, f: 'keep' };
    const patch = { a: { c: [3], d: { g: true } } };
    const out = mergeConfigPatch(base, patch);
    expect(out).toEqual({ a: { b: 1, c: [3], d: { e: 'x', g: true } }, f: 'keep' });
    expect(base).toEqual({ a: { b: 1, c: [1, 2], d: { e: 'x' } }, f: 'keep' });
    (out.a as { c: number[] }).c.push(4);
    expect(patch.a.c).toEqual([3]);
  });

  it('removes a key set to null, so validation restores its default', () => {
    const base = defaultConfig();
    base.agent.max_tool_iterations = 3;
    base.logs.level = 'debug';
    const merged = mergeConfigPatch(base, { agent: { max_tool_iterations: null }, logs: null });
    const result = validateConfig(merged);
    expect(result.ok && result.config.agent.max_tool_iterations).toBe(8);
    expect(result.ok && result.config.logs).toEqual({ level: 'info', buffer_entries: 10_000 });
  });

  it('creates objects the base lacks, dropping nulls inside them', () => {
    expect(mergeConfigPatch({}, { agent: { system_prompt: null, max_tool_iterations: 2 } })).toEqual({
      agent: { max_tool_iterations: 2 },
    });
  });

  it('keeps __proto__ an ordinary (unknown) key instead of a prototype', () => {
    const patch = JSON.parse('{"__proto__": {"polluted": true}, "logs": {"level": "debug"}}') as Record<
      string,
      unknown
    >;
    const out = mergeConfigPatch({}, patch);
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype);
    expect(Object.keys(out)).toContain('__proto__');
    const result = validateConfig(mergeConfigPatch(defaultConfig(), patch));
    expect(result.ok).toBe(false);
    expect(!result.ok && result.errors.map((e) => e.path)).toContain('__proto__');
  });
});

describe('diffConfigPaths and path helpers', () => {
  it('lists leaf paths that differ, sorted; arrays compare whole', () => {
    const a = defaultConfig();
    const b = structuredClone(a);
    b.logs.level = 'debug';
    b.agent.approval_required = ['shell'];
    b.provider.pricing = { 'gpt-4.1': { input_per_mtok: 1, output_per_mtok: 2 } };
    expect(diffConfigPaths(a, b)).toEqual([
      ['agent', 'approval_required'],
      ['logs', 'level'],
      ['provider', 'pricing', 'gpt-4.1'],
    ]);
    expect(diffConfigPaths(a, structuredClone(a))).toEqual([]);
  });

  it('jsonEqual ignores key order and tells arrays from objects', () => {
    expect(jsonEqual({ a: 1, b: [1, { c: 2 }] }, { b: [1, { c: 2 }], a: 1 })).toBe(true);
    expect(jsonEqual([], {})).toBe(false);
    expect(jsonEqual({ a: undefined }, {})).toBe(false);
    expect(jsonEqual(null, null)).toBe(true);
  });

  it('get/set work on paths, set creates objects and undefined deletes', () => {
    const root: Record<string, unknown> = {};
    setConfigPath(root, ['a', 'b'], [1]);
    expect(getConfigPath(root, ['a', 'b'])).toEqual([1]);
    setConfigPath(root, ['a', 'b'], undefined);
    expect(root).toEqual({ a: {} });
    expect(getConfigPath(root, ['a', 'x', 'y'])).toBeUndefined();
    expect(getConfigPath(root, ['toString'])).toBeUndefined();
    expect(pathsOverlap(['a'], ['a', 'b'])).toBe(true);
    expect(pathsOverlap(['a', 'b'], ['a', 'c'])).toBe(false);
  });
});

describe('deep input (ADR 0013: no recursion over request data)', () => {
  const DEPTH = 100_000;

  it('merges, compares and diffs 100 000 levels without exhausting the stack', () => {
    const merged = mergeConfigPatch({ keep: true }, deepObject(DEPTH));
    expect(merged.keep).toBe(true);
    expect(jsonEqual(merged.a, deepObject(DEPTH).a)).toBe(true);
    expect(jsonEqual(deepObject(DEPTH, 1), deepObject(DEPTH, 2))).toBe(false);
    const paths = diffConfigPaths(deepObject(DEPTH, 1), deepObject(DEPTH, 2));
    expect(paths).toHaveLength(1);
    expect(paths[0]).toHaveLength(DEPTH);
  });

  it('diffs in a stable order whatever the walk: ties of dotted forms are ordered by keys', () => {
    expect(diffConfigPaths({ a: { b: 1 }, 'a.b': 1 }, { a: { b: 2 }, 'a.b': 2 })).toEqual([['a', 'b'], ['a.b']]);
  });
});

describe('live and locked keys', () => {
  it('classifies keys and everything under them', () => {
    expect(isLiveConfigPath(['logs', 'level'])).toBe(true);
    expect(isLiveConfigPath(['logs', 'buffer_entries'])).toBe(false);
    expect(isLiveConfigPath(['security', 'rate_limits', 'lifecycle'])).toBe(true);
    expect(isLiveConfigPath(['security', 'profile'])).toBe(false);
    expect(isLiveConfigPath(['provider', 'pricing', 'gpt-4.1'])).toBe(true);
    expect(isLiveConfigPath(['provider', 'api_key'])).toBe(false);
    expect(isLiveConfigPath(['gateway', 'port'])).toBe(false);
    expect(isLockedConfigPath(['gateway', 'auth', 'api_tokens'])).toBe(true);
    expect(isLockedConfigPath(['gateway', 'port'])).toBe(false);
  });
});

describe('loadConfig dataDirFallback', () => {
  function setup(): { cwd: string; dataDir: string } {
    const cwd = mkdtempSync(join(tmpdir(), 'gatehouse-fallback-'));
    const dataDir = join(cwd, 'state');
    mkdirSync(dataDir);
    writeFileSync(dataDirConfigPath(dataDir), 'logs:\n  level: debug\n');
    return { cwd, dataDir };
  }

  it('is off by default: <data_dir>/gatehouse.yaml is not read', () => {
    const { cwd } = setup();
    const loaded = loadConfig({ argv: ['--data-dir', 'state'], env: {}, cwd });
    expect(loaded.configPath).toBeNull();
    expect(loaded.config.logs.level).toBe('info');
  });

  it('reads <data_dir>/gatehouse.yaml when asked and no other file exists', () => {
    const { cwd, dataDir } = setup();
    const viaFlag = loadConfig({ argv: ['--data-dir', 'state'], env: {}, cwd, dataDirFallback: true });
    expect(viaFlag.configPath).toBe(join(dataDir, DATA_DIR_CONFIG_FILE));
    expect(viaFlag.config.logs.level).toBe('debug');
    const viaEnv = loadConfig({ argv: [], env: { GATEHOUSE_DATA_DIR: dataDir }, cwd, dataDirFallback: true });
    expect(viaEnv.config.logs.level).toBe('debug');
  });

  it('prefers ./gatehouse.yaml and an explicit --config', () => {
    const { cwd } = setup();
    writeFileSync(join(cwd, 'gatehouse.yaml'), 'logs:\n  level: error\n');
    const loaded = loadConfig({ argv: ['--data-dir', 'state'], env: {}, cwd, dataDirFallback: true });
    expect(loaded.configPath).toBe(join(cwd, 'gatehouse.yaml'));
    expect(loaded.config.logs.level).toBe('error');
  });
});
