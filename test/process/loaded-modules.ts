/**
 * Which source files a `gatehouse` process loaded: it runs with `node --import test/process/module-log.mjs`,
 * which writes each module's URL as it loads, and the URLs are read back as source paths relative to the
 * repository (`src/gateway.ts`, `node_modules/fastify/fastify.js`). A file of the bundle (dist/bundle/, ADR 0044)
 * stands for every source its metafile (`meta.json`) says it holds; a file tsc compiled (`dist/src/a/b.js`) for
 * its source (`src/a/b.ts`).
 */
import { existsSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ROOT } from '../../bench/processes.js';

/** The `node` flag that makes a process record the modules it loads (with GATEHOUSE_MODULE_LOG set). */
export const MODULE_LOG_FLAGS: readonly string[] = ['--import', join(ROOT, 'test', 'process', 'module-log.mjs')];

interface Metafile {
  outputs: Record<string, { inputs: Record<string, unknown> }>;
}

/** The path from the repository (or from `node_modules/`, wherever that lies) of a source file. */
function sourcePath(path: string): string {
  const at = path.lastIndexOf('node_modules/');
  return at >= 0 ? path.slice(at) : path;
}

/** The sources behind the modules recorded in `logFile`. */
export function loadedSources(logFile: string): Set<string> {
  const metaFile = join(ROOT, 'dist', 'bundle', 'meta.json');
  const meta = existsSync(metaFile) ? (JSON.parse(readFileSync(metaFile, 'utf8')) as Metafile) : null;
  const sources = new Set<string>();
  const lines = existsSync(logFile) ? readFileSync(logFile, 'utf8').split('\n') : [];
  for (const url of lines) {
    if (!url.startsWith('file:')) continue;
    const path = relative(ROOT, fileURLToPath(url)).split('\\').join('/');
    const output = meta?.outputs[path];
    if (output) for (const input of Object.keys(output.inputs)) sources.add(sourcePath(input));
    else if (path.startsWith('dist/src/')) sources.add(path.slice('dist/'.length).replace(/\.js$/, '.ts'));
    else sources.add(sourcePath(path));
  }
  return sources;
}

/**
 * The server's modules: the composition root, the HTTP server, the store, the message path, and the packages
 * only they use. A client command has no use for any of them.
 */
export const SERVER_MODULES: readonly string[] = [
  'src/gateway.ts',
  'src/http/server.ts',
  'src/store/store.ts',
  'src/turns/index.ts',
  'node_modules/fastify/',
  'node_modules/kysely/',
  'node_modules/better-sqlite3/',
  'node_modules/pino/',
];

/** The server's modules among `sources`. */
export function serverModulesIn(sources: ReadonlySet<string>): string[] {
  return SERVER_MODULES.filter((server) => [...sources].some((source) => source.startsWith(server)));
}
