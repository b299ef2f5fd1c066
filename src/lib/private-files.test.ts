import { chmodSync, closeSync, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  ensurePrivateDir,
  ensurePrivateDirSync,
  openPrivateFile,
  openPrivateFileSync,
  tightenPrivateFileSync,
  touchPrivateFileSync,
} from './private-files.js';

const mode = (path: string): number => statSync(path).mode & 0o777;

let home: string;
let umask: number;
beforeEach(() => {
  home = mkdtempSync(join(tmpdir(), 'gatehouse-private-'));
  umask = process.umask(0o022); // the usual default, which would leave new files 0644 and dirs 0755
});
afterEach(() => {
  process.umask(umask);
  rmSync(home, { recursive: true, force: true });
});

describe('private files', () => {
  it('creates directories 0700, parents included', async () => {
    ensurePrivateDirSync(join(home, 'a', 'b'));
    expect(mode(join(home, 'a'))).toBe(0o700);
    expect(mode(join(home, 'a', 'b'))).toBe(0o700);
    await ensurePrivateDir(join(home, 'c'));
    expect(mode(join(home, 'c'))).toBe(0o700);
  });

  it('creates files 0600', async () => {
    closeSync(openPrivateFileSync(join(home, 'sync'), 'a'));
    touchPrivateFileSync(join(home, 'touched'));
    const handle = await openPrivateFile(join(home, 'async'), 'a');
    await handle.close();
    for (const name of ['sync', 'touched', 'async']) expect(mode(join(home, name)), name).toBe(0o600);
  });

  it('tightens what is wider, clearing group and other bits only', async () => {
    const dir = join(home, 'wide');
    mkdirSync(dir, { mode: 0o755 });
    chmodSync(dir, 0o777);
    ensurePrivateDirSync(dir);
    expect(mode(dir)).toBe(0o700);

    const dir2 = join(home, 'wide2');
    mkdirSync(dir2);
    chmodSync(dir2, 0o755);
    await ensurePrivateDir(dir2);
    expect(mode(dir2)).toBe(0o700);

    for (const [name, open] of [
      ['a', (p: string) => closeSync(openPrivateFileSync(p, 'a'))],
      ['b', (p: string) => touchPrivateFileSync(p)],
      ['c', (p: string) => tightenPrivateFileSync(p)],
      ['d', async (p: string) => (await openPrivateFile(p, 'a')).close()],
    ] as const) {
      const path = join(home, name);
      writeFileSync(path, 'x');
      chmodSync(path, 0o644);
      await open(path);
      expect(mode(path), name).toBe(0o600);
    }
  });

  it('never loosens a tighter mode, and leaves a missing file missing', () => {
    const path = join(home, 'read-only');
    writeFileSync(path, 'x');
    chmodSync(path, 0o400);
    tightenPrivateFileSync(path);
    expect(mode(path)).toBe(0o400);
    tightenPrivateFileSync(join(home, 'missing'));
    expect(() => statSync(join(home, 'missing'))).toThrow();
  });
});
