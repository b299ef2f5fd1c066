import { readFileSync } from 'node:fs';

let cached: string | null = null;

/** The package version (found from src/ and from dist/src/ alike); `0.0.0` when it cannot be read. */
export function packageVersion(): string {
  if (cached !== null) return cached;
  cached = '0.0.0';
  for (const up of ['../../package.json', '../../../package.json']) {
    try {
      const pkg = JSON.parse(readFileSync(new URL(up, import.meta.url), 'utf8')) as { name?: string; version?: string };
      if (pkg.name === 'gatehouse' && pkg.version) {
        cached = pkg.version;
        break;
      }
    } catch {
      /* try the next place */
    }
  }
  return cached;
}
