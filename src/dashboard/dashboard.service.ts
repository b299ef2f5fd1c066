import { existsSync } from 'node:fs';
import { open, realpath, type FileHandle } from 'node:fs/promises';
import { dirname, extname, join, resolve, sep } from 'node:path';
import type { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import type { Logger } from '../lib/logger.js';

/**
 * The dashboard's built files (`dist/web/`: `index.html` + `assets/`, written by the Vite build) and the
 * rules for serving them (DECISIONS §14, ADR 0021): only regular files below the root, found by a path whose
 * every segment is checked before it is joined, opened once and streamed from that handle with a fixed end.
 */

/**
 * The dashboard's Content-Security-Policy: DECISIONS §14's policy plus `base-uri` and `form-action` closed,
 * as the docs page has it (ADR 0018). No inline script or style runs.
 */
export const DASHBOARD_CSP =
  "default-src 'self'; script-src 'self'; connect-src 'self'; img-src 'self' data:; style-src 'self'; " +
  "frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

/**
 * The command that builds the dashboard (`scripts/build-if-needed.mjs`, which `npm ci` and `npm start` also
 * run), named by the page a gateway without a build answers and by its log line.
 */
export const DASHBOARD_BUILD_COMMAND = 'npm run prepare';

/** The largest file served (bytes): the first screen's budget is 250 KB gzipped, so this is generous. */
export const MAX_DASHBOARD_FILE_BYTES = 16 * 1024 * 1024;

/** Content types by extension; anything else is `application/octet-stream` (sent with `nosniff`). */
const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.gif': 'image/gif',
  '.webp': 'image/webp',
  '.ico': 'image/x-icon',
  '.woff': 'font/woff',
  '.woff2': 'font/woff2',
  '.txt': 'text/plain; charset=utf-8',
  '.wasm': 'application/wasm',
};

/** A content-hashed name as Vite writes it (`index-B2x_9fQa.js`): the name never changes while the bytes do not. */
const HASHED_NAME = /-[A-Za-z0-9_-]{8,}\.[A-Za-z0-9]+$/;

/** One file ready to be sent: its headers and a stream reading exactly `size` bytes from the opened handle. */
export interface DashboardFile {
  size: number;
  contentType: string;
  /** `public, max-age=31536000, immutable` for hashed assets, `no-cache` for everything else. */
  cacheControl: string;
  /** Reads the file from the handle opened by the lookup; closes it at the end or on error. */
  stream(): Readable;
  /** Closes the handle without reading (a HEAD request, an aborted answer). */
  close(): Promise<void>;
}

/** What a lookup found: a file, nothing (404), or no build at all (503). */
export type DashboardLookup = { kind: 'file'; file: DashboardFile } | { kind: 'not_found' } | { kind: 'unbuilt' };

/** The dashboard's files under one root, with the log line for a missing build written once. */
export interface DashboardFiles {
  /** The root (`dist/web/`). */
  readonly root: string;
  /** `index.html`, or `unbuilt` when the root has none. */
  index(): Promise<DashboardLookup>;
  /** A file below `assets/`, by the raw (still percent-encoded) rest of the URL path after `/assets/`. */
  asset(rawRest: string): Promise<DashboardLookup>;
}

/**
 * The default root: `dist/web/` of the package this module belongs to, found as the nearest ancestor folder
 * holding a `package.json` (the same from `src/dashboard/` under tests and from `dist/src/dashboard/` when
 * built). Falls back to `dist/web` under the current directory.
 */
export function defaultDashboardRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (existsSync(join(dir, 'package.json'))) return join(dir, 'dist', 'web');
    const parent = dirname(dir);
    if (parent === dir) return resolve('dist', 'web');
    dir = parent;
  }
}

/**
 * Decodes and checks each segment of a raw URL path below `assets/`; null when any is refused: empty, `.`,
 * `..` (typed or percent-encoded, once or twice), a hidden name, a separator or NUL inside a segment, or a
 * malformed escape. What passes can only name something below the root.
 */
export function safeSegments(rawRest: string): string[] | null {
  if (rawRest === '' || rawRest.length > 1024) return null;
  const segments: string[] = [];
  for (const raw of rawRest.split('/')) {
    let segment: string;
    try {
      segment = decodeURIComponent(raw);
    } catch {
      return null;
    }
    if (segment === '' || segment.startsWith('.') || /[/\\\0%]/.test(segment)) return null;
    segments.push(segment);
  }
  return segments;
}

/** Opens `path` if it is a regular file no larger than the cap whose real path stays below `realRoot`. */
async function openInside(path: string, realRoot: string): Promise<FileHandle | null> {
  let real: string;
  try {
    real = await realpath(path);
  } catch {
    return null;
  }
  if (!real.startsWith(realRoot + sep)) return null; // a symbolic link pointing out of the build
  let handle: FileHandle;
  try {
    handle = await open(real, 'r');
  } catch {
    return null;
  }
  const stat = await handle.stat().catch(() => null);
  if (!stat?.isFile() || stat.size > MAX_DASHBOARD_FILE_BYTES) {
    await handle.close();
    return null;
  }
  return handle;
}

/** Wraps an opened handle as a `DashboardFile` (size fixed at open time: a file growing later is cut there). */
async function fileOf(handle: FileHandle, name: string, immutable: boolean): Promise<DashboardFile> {
  const { size } = await handle.stat();
  let closed = false;
  return {
    size,
    contentType: CONTENT_TYPES[extname(name).toLowerCase()] ?? 'application/octet-stream',
    cacheControl: immutable ? 'public, max-age=31536000, immutable' : 'no-cache',
    stream() {
      closed = true;
      return handle.createReadStream({ start: 0, end: Math.max(0, size - 1), autoClose: true, emitClose: true });
    },
    async close() {
      if (closed) return;
      closed = true;
      await handle.close();
    },
  };
}

/**
 * The dashboard's files under `root` (default `defaultDashboardRoot()`). A root without `index.html` is an
 * unbuilt dashboard: logged once as a warning naming the build command, answered 503 by the routes.
 */
export function createDashboardFiles(options: { root?: string; logger: Logger }): DashboardFiles {
  const root = resolve(options.root ?? defaultDashboardRoot());
  let warned = false;
  const unbuilt = (): DashboardLookup => {
    if (!warned) {
      warned = true;
      options.logger.warn(
        { source: 'dashboard', root },
        `the dashboard is not built (no ${join(root, 'index.html')}): run ${DASHBOARD_BUILD_COMMAND}`,
      );
    }
    return { kind: 'unbuilt' };
  };
  const realRoot = async (): Promise<string | null> => realpath(root).catch(() => null);

  return {
    root,
    async index() {
      const real = await realRoot();
      const handle = real ? await openInside(join(root, 'index.html'), real) : null;
      if (!handle) return unbuilt();
      warned = false; // a later removal of the build is worth a line again
      return { kind: 'file', file: await fileOf(handle, 'index.html', false) };
    },
    async asset(rawRest) {
      const segments = safeSegments(rawRest);
      if (!segments) return { kind: 'not_found' };
      const real = await realRoot();
      if (!real) return { kind: 'not_found' };
      const path = resolve(root, 'assets', ...segments);
      if (!path.startsWith(join(root, 'assets') + sep)) return { kind: 'not_found' };
      const handle = await openInside(path, real);
      if (!handle) return { kind: 'not_found' };
      const name = segments[segments.length - 1]!;
      return { kind: 'file', file: await fileOf(handle, name, HASHED_NAME.test(name)) };
    },
  };
}

/** The page a gateway without a dashboard build answers at `/` (503), naming the command that builds it. */
export function unbuiltPage(): string {
  return `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Gatehouse: dashboard not built</title></head>
<body>
<main>
<h1>The dashboard is not built</h1>
<p>This gateway is running, but the dashboard's files (<code>dist/web/index.html</code>) are missing.
Build them with <code>${DASHBOARD_BUILD_COMMAND}</code> (<code>npm start</code> builds them too) and reload
this page.</p>
<p>The API answers as usual.</p>
</main>
</body>
</html>
`;
}

/** The route patterns the dashboard is served at, as the HTTP server reports them to metrics. */
export const DASHBOARD_ROUTE_PATTERNS: readonly string[] = ['/', '/assets/*'];

/** True for a dashboard route pattern: such requests are counted apart from the API's (ADR 0021). */
export function isDashboardRoute(routePattern: string): boolean {
  return DASHBOARD_ROUTE_PATTERNS.includes(routePattern);
}
