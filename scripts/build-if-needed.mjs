// Builds dist/ with tsc (and the bundle, below) when any source file is newer than the last build, so
// `npm start` and `npm test` work on a fresh clone and stay fast on a built tree.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { cpSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const stamp = join(root, 'dist', '.build-stamp');

// One build at a time: test files run in parallel workers and each makes sure dist/ is current, so a second run
// waits for the first (and then finds little or nothing left to do) rather than writing the same files at once.
// The lock is a directory holding the builder's pid; a lock whose process is gone is taken over.
const lockDir = join(root, 'dist', '.build-lock');
const alive = (pid) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return err.code === 'EPERM';
  }
};
mkdirSync(join(root, 'dist'), { recursive: true });
for (const deadline = Date.now() + 15 * 60_000; ;) {
  try {
    mkdirSync(lockDir);
    writeFileSync(join(lockDir, 'pid'), String(process.pid));
    break;
  } catch (err) {
    if (err.code !== 'EEXIST') throw err;
    let holder = NaN;
    try {
      holder = Number(readFileSync(join(lockDir, 'pid'), 'utf8'));
    } catch {
      // Just made, its pid not yet written: wait for it like any holder.
    }
    if (Number.isInteger(holder) && holder > 0 && !alive(holder)) rmSync(lockDir, { recursive: true, force: true });
    else if (Date.now() > deadline) throw new Error(`gatehouse: ${lockDir} held for 15 minutes by pid ${holder}`);
    else await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
process.on('exit', () => rmSync(lockDir, { recursive: true, force: true }));

function newestMtime(dir) {
  let newest = 0;
  if (!existsSync(dir)) return newest;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) newest = Math.max(newest, newestMtime(path));
    else if (entry.name.endsWith('.ts')) newest = Math.max(newest, statSync(path).mtimeMs);
  }
  return newest;
}

const sources = Math.max(
  newestMtime(join(root, 'src')),
  newestMtime(join(root, 'bench')),
  statSync(join(root, 'tsconfig.json')).mtimeMs,
  statSync(join(root, 'tsconfig.build.json')).mtimeMs,
);
const built = existsSync(stamp) ? statSync(stamp).mtimeMs : 0;
if (sources > built) {
  process.stderr.write('gatehouse: building (tsc)…\n');
  const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
  execFileSync(process.execPath, [tsc, '-p', join(root, 'tsconfig.build.json')], {
    stdio: 'inherit',
    cwd: root,
  });
  writeFileSync(stamp, new Date().toISOString() + '\n');
}

// The bundle of the command line and the server (dist/bundle/, ADR 0044), which dist/src/main.js runs: esbuild
// straight from the sources, a second or two. Rebuilt when a source, the lockfile (the bundled packages) or the
// bundling script is newer than the last bundle, or when it is missing.
const bundleStamp = join(root, 'dist', '.bundle-stamp');
const bundleSources = Math.max(
  newestMtime(join(root, 'src')),
  statSync(join(root, 'package-lock.json')).mtimeMs,
  statSync(join(root, 'scripts', 'bundle.mjs')).mtimeMs,
);
const bundled =
  existsSync(bundleStamp) && existsSync(join(root, 'dist', 'bundle', 'cli.js')) ? statSync(bundleStamp).mtimeMs : 0;
if (bundleSources > bundled) {
  process.stderr.write('gatehouse: bundling (esbuild)…\n');
  const startedAt = new Date();
  const { bundle } = await import('./bundle.mjs');
  await bundle();
  // Stamped with the time bundling began: a source saved meanwhile is newer, and bundled next time.
  writeFileSync(bundleStamp, startedAt.toISOString() + '\n');
  utimesSync(bundleStamp, startedAt, startedAt);
}

// Static files served as they are (the API docs page: HTML, script, style sheet) sit beside the compiled
// code that serves them. Copied over on every run (a few small files), so never stale.
const pageSource = join(root, 'src', 'docs', 'page');
const pageTarget = join(root, 'dist', 'src', 'docs', 'page');
cpSync(pageSource, pageTarget, { recursive: true });

// The OpenAPI documents and the typed client's schema (client/schema.d.ts, ADR 0016), written from the built
// routes whenever the build is newer than the schema (or the schema is missing): a second or two, after tsc.
const clientSchema = join(root, 'client', 'schema.d.ts');
if (!existsSync(clientSchema) || statSync(clientSchema).mtimeMs < statSync(stamp).mtimeMs) {
  process.stderr.write('gatehouse: writing the OpenAPI documents and client/schema.d.ts…\n');
  execFileSync(process.execPath, [join(root, 'scripts', 'write-openapi.mjs')], { stdio: 'inherit', cwd: root });
}

// The dashboard (web/, ADR 0020): `vite build` into dist/web/ whenever anything under web/ or client/ (the typed
// client and its schema, just written above) is newer than the last dashboard build. Then the bundle sizes:
// every JS chunk raw and gzipped, and the first screen (the shell and the default page with everything they
// import statically), which must stay within its budget.
const webStamp = join(root, 'dist', '.web-stamp');
const FIRST_SCREEN_BUDGET_GZIP = 250 * 1024;

function newestFileMtime(dir) {
  let newest = 0;
  if (!existsSync(dir)) return newest;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) newest = Math.max(newest, newestFileMtime(path));
    else newest = Math.max(newest, statSync(path).mtimeMs);
  }
  return newest;
}

const webSources = Math.max(newestFileMtime(join(root, 'web')), newestFileMtime(join(root, 'client')));
const webBuilt =
  existsSync(webStamp) && existsSync(join(root, 'dist', 'web', 'index.html')) ? statSync(webStamp).mtimeMs : 0;
if (existsSync(join(root, 'web', 'vite.config.ts')) && webSources > webBuilt) {
  process.stderr.write('gatehouse: building the dashboard (vite)…\n');
  const { build } = await import('vite');
  await build({ configFile: join(root, 'web', 'vite.config.ts'), logLevel: 'warn' });
  reportBundle(join(root, 'dist', 'web'));
  writeFileSync(webStamp, new Date().toISOString() + '\n');
}

/** Prints each JS chunk (raw and gzipped) and the first screen's total; throws when it is over budget. */
function reportBundle(outDir) {
  const manifest = JSON.parse(readFileSync(join(outDir, '.vite', 'manifest.json'), 'utf8'));
  const gzipSize = (file) => gzipSync(readFileSync(join(outDir, file)), { level: 9 }).length;
  const kb = (bytes) => `${(bytes / 1024).toFixed(1)} KB`;
  const rows = Object.values(manifest)
    .filter((chunk) => chunk.file.endsWith('.js'))
    .map((chunk) => ({ file: chunk.file, raw: statSync(join(outDir, chunk.file)).size, gzip: gzipSize(chunk.file) }))
    .sort((a, b) => b.gzip - a.gzip);
  // The first screen: the entry and the default (first) page, each with its static imports.
  const entryKey = Object.keys(manifest).find((key) => manifest[key].isEntry);
  const firstPageKey = Object.keys(manifest).find((key) => key.startsWith('src/pages/overview.'));
  const firstScreen = new Set();
  const visit = (key) => {
    const chunk = manifest[key];
    if (!chunk || firstScreen.has(chunk.file)) return;
    firstScreen.add(chunk.file);
    for (const imported of chunk.imports ?? []) visit(imported);
  };
  visit(entryKey);
  if (firstPageKey) visit(firstPageKey);
  const firstGzip = [...firstScreen]
    .filter((file) => file.endsWith('.js'))
    .reduce((sum, file) => sum + gzipSize(file), 0);
  process.stderr.write('gatehouse: dashboard bundle (dist/web/):\n');
  for (const row of rows) {
    const mark = firstScreen.has(row.file) ? ' (first screen)' : '';
    process.stderr.write(
      `  ${row.file.padEnd(44)} ${kb(row.raw).padStart(10)} raw ${kb(row.gzip).padStart(10)} gzip${mark}\n`,
    );
  }
  process.stderr.write(`  first screen: ${kb(firstGzip)} gzipped JS (budget ${kb(FIRST_SCREEN_BUDGET_GZIP)})\n`);
  if (firstGzip > FIRST_SCREEN_BUDGET_GZIP) {
    throw new Error(
      `the dashboard's first screen is ${kb(firstGzip)} gzipped JS, over its ${kb(FIRST_SCREEN_BUDGET_GZIP)} budget`,
    );
  }
}
