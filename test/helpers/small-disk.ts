/**
 * A tiny tmpfs to fill up, for tests of what the gateway does when its disk
 * is full (ENOSPC). Mounting needs root (CAP_SYS_ADMIN); `mountSmallDisk`
 * answers null where it cannot, and such tests skip.
 */
import { execFileSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, rmSync, unlinkSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A mounted tmpfs of a few hundred KiB. */
export interface SmallDisk {
  /** The mount point. */
  dir: string;
  /** Writes a filler file until the disk refuses (ENOSPC). */
  fill(): void;
  /** Removes the filler: space returns. */
  free(): void;
  unmount(): void;
}

/** Mounts a `sizeKb` tmpfs on a fresh temp dir; null when this process may not mount. */
export function mountSmallDisk(sizeKb = 256): SmallDisk | null {
  if (process.getuid?.() !== 0) return null;
  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-disk-'));
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${sizeKb}k`, 'tmpfs', dir], { stdio: 'ignore' });
  } catch {
    rmSync(dir, { recursive: true, force: true });
    return null;
  }
  const filler = join(dir, 'filler');
  return {
    dir,
    fill() {
      const fd = openSync(filler, 'a');
      const chunk = Buffer.alloc(1024, 0x78);
      try {
        for (;;) writeSync(fd, chunk);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOSPC') throw err;
      } finally {
        closeSync(fd);
      }
      // Leave no partial page either: single bytes until refused.
      const fd2 = openSync(filler, 'a');
      try {
        for (;;) writeSync(fd2, 'x');
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOSPC') throw err;
      } finally {
        closeSync(fd2);
      }
    },
    free() {
      unlinkSync(filler);
    },
    unmount() {
      try {
        execFileSync('umount', ['-l', dir], { stdio: 'ignore' });
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}
