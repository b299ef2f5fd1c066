import { lstat, readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { FileProbe, ProbeEntry } from './self-audit.js';

/** The kind of a `Stats`. */
function kindOf(stats: { isDirectory(): boolean; isFile(): boolean; isSymbolicLink(): boolean }): ProbeEntry['kind'] {
  if (stats.isSymbolicLink()) return 'symlink';
  if (stats.isDirectory()) return 'dir';
  if (stats.isFile()) return 'file';
  return 'other';
}

/**
 * The real file system for the self-audit's data-dir check (ADR 0023):
 * asynchronous `lstat`/`stat` and `readdir`, so a running gateway's event loop
 * keeps serving during the walk. A path that vanished reads as missing.
 */
export const nodeFileProbe: FileProbe = {
  posixModes: process.platform !== 'win32',
  async entry(path, follow) {
    try {
      const stats = follow ? await stat(path) : await lstat(path);
      return { kind: kindOf(stats), mode: stats.mode & 0o777 };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw err;
    }
  },
  list: (dir) => readdir(dir),
  join: (dir, name) => join(dir, name),
};
