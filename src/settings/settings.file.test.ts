import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import {
  applyFileEdits,
  ConfigFileError,
  fileData,
  fileText,
  openConfigFile,
  writeFileAtomic,
} from './settings.file.js';

function tempDir(): string {
  return mkdtempSync(join(tmpdir(), 'gatehouse-file-'));
}

describe('openConfigFile + applyFileEdits', () => {
  it('edits key by key, keeping comments, order and untouched values', async () => {
    const path = join(tempDir(), 'gatehouse.yaml');
    writeFileSync(
      path,
      '# top comment\nlogs:\n  level: info # why\n  buffer_entries: 50\nagent: ~\nsecurity:\n  rate_limits: {read: 10}\n',
    );
    const file = await openConfigFile(path, {});
    applyFileEdits(file, [
      { kind: 'set', path: ['logs', 'level'], value: 'debug' },
      { kind: 'set', path: ['agent', 'approval_required'], value: ['shell', 'mail'] },
      { kind: 'set', path: ['security', 'rate_limits', 'write'], value: 7 },
      { kind: 'set', path: ['provider', 'pricing', 'gpt-4.1'], value: { input_per_mtok: 1, output_per_mtok: 2 } },
      { kind: 'delete', path: ['logs', 'buffer_entries'] },
      { kind: 'delete', path: ['nowhere', 'at', 'all'] },
    ]);
    const text = fileText(file);
    expect(text.startsWith('# top comment\n')).toBe(true);
    expect(text).toContain('level: debug # why');
    expect(parse(text)).toEqual({
      logs: { level: 'debug' },
      agent: { approval_required: ['shell', 'mail'] },
      security: { rate_limits: { read: 10, write: 7 } },
      provider: { pricing: { 'gpt-4.1': { input_per_mtok: 1, output_per_mtok: 2 } } },
    });
    expect(fileData(file)).toEqual(parse(text));
  });

  it('starts a missing file from the fallback object, and an empty file from nothing', async () => {
    const dir = tempDir();
    const missing = await openConfigFile(join(dir, 'nope.yaml'), { logs: { level: 'error' } });
    expect(missing.originalText).toBeNull();
    applyFileEdits(missing, [{ kind: 'set', path: ['budget', 'daily_usd'], value: 3 }]);
    expect(parse(fileText(missing))).toEqual({ logs: { level: 'error' }, budget: { daily_usd: 3 } });
    expect(fileText(missing)).toMatch(/^# Gatehouse configuration/);

    writeFileSync(join(dir, 'empty.yaml'), '');
    const empty = await openConfigFile(join(dir, 'empty.yaml'), { ignored: true });
    expect(fileData(empty)).toEqual({});
    applyFileEdits(empty, [{ kind: 'set', path: ['tasks', 'max_concurrent'], value: 4 }]);
    expect(parse(fileText(empty))).toEqual({ tasks: { max_concurrent: 4 } });
  });

  it('refuses invalid YAML and a non-mapping without quoting the content', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'bad.yaml'), 'provider:\n  api_key: "sk-leak\n');
    const bad = openConfigFile(join(dir, 'bad.yaml'), {});
    await expect(bad).rejects.toBeInstanceOf(ConfigFileError);
    await expect(bad).rejects.not.toThrow(/sk-leak/);
    writeFileSync(join(dir, 'list.yaml'), '- a\n- b\n');
    await expect(openConfigFile(join(dir, 'list.yaml'), {})).rejects.toThrow(/must hold a mapping/);
  });
});

describe('writeFileAtomic', () => {
  it('replaces the file with mode 0600, creating the directory, leaving no temp file', async () => {
    const dir = tempDir();
    const path = join(dir, 'sub', 'gatehouse.yaml');
    await writeFileAtomic(path, 'a: 1\n');
    expect(readFileSync(path, 'utf8')).toBe('a: 1\n');
    expect(statSync(path).mode & 0o777).toBe(0o600);
    chmodSync(path, 0o644);
    await writeFileAtomic(path, 'a: 2\n');
    expect(readFileSync(path, 'utf8')).toBe('a: 2\n');
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(readdirSync(join(dir, 'sub'))).toEqual(['gatehouse.yaml']);
  });

  it('removes its temp file and throws when the rename cannot happen', async () => {
    const dir = tempDir();
    // A non-empty directory where the file should go: the rename over it fails after the temp file was written.
    const path = join(dir, 'gatehouse.yaml');
    mkdirSync(path);
    writeFileSync(join(path, 'keep'), 'x');
    await expect(writeFileAtomic(path, 'b: 2\n')).rejects.toThrow();
    expect(readdirSync(path)).toEqual(['keep']);
    expect(readdirSync(dir)).toEqual(['gatehouse.yaml']);
  });
});
