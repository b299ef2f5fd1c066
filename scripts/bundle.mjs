// Bundles the command line and the server (src/cli/index.ts and everything it imports) with esbuild into one
// folder of ES modules (ADR 0044): the entry `cli.js` and chunks split at every dynamic import, so a command
// loads only what it uses and the server loads a few files instead of a thousand. `dist/src/main.js` (the
// `gatehouse` command) runs the bundle when it exists. Native and optional packages stay in node_modules.
//
//   node scripts/bundle.mjs [outdir]      (default dist/bundle)
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

/**
 * Packages left out of the bundle and loaded from node_modules: a native addon (better-sqlite3), packages the
 * gateway loads only when configured (behind an `await import()` or a `require` at first use: the model SDKs,
 * PostgreSQL, the buses, the chat platforms, MCP, OpenTelemetry, A2A), and the command line's WebSocket client.
 * Kept out, they cost nothing until used, exactly as before bundling. So do the parts of Fastify the gateway
 * never calls.
 */
export const EXTERNAL = [
  'better-sqlite3',
  'pg',
  'pg-native',
  'ioredis',
  '@nats-io/*',
  'openai',
  'openai/*',
  '@anthropic-ai/*',
  'grammy',
  '@slack/*',
  '@modelcontextprotocol/*',
  '@opentelemetry/*',
  '@a2a-js/*',
  // Fastify's schema compilers (Ajv, fast-json-stringify): never used, src/http/protocol.ts names its own.
  '@fastify/ajv-compiler',
  '@fastify/fast-json-stringify-compiler',
  // Fastify's `inject`, for tests: the gateway never calls it.
  'light-my-request',
];

/**
 * Where tsc puts the compiled copy of a source file, relative to the bundle folder, which sits beside dist/src/
 * (`src/a/b.ts` → `../src/a/b.js`).
 */
function compiledPath(file) {
  return `../${relative(root, file).replace(/\.ts$/, '.js').split(sep).join('/')}`;
}

/**
 * `import.meta.url` in our own sources names the module's file: the docs page is read from beside docs.routes,
 * the dashboard and the package version are found by walking up from it. In the bundle every module shares its
 * chunk's URL, so each use is replaced by the URL of the file's compiled copy under dist/, where tsc wrote it
 * and the build copied what sits beside it. (Chunks are written flat into the bundle folder.)
 */
function moduleUrlPlugin() {
  const srcDir = join(root, 'src') + sep;
  return {
    name: 'gatehouse-module-url',
    setup(build) {
      build.onLoad({ filter: /\.ts$/ }, (args) => {
        if (!args.path.startsWith(srcDir)) return undefined;
        const text = readFileSync(args.path, 'utf8');
        if (!text.includes('import.meta.url')) return undefined;
        const url = `new URL(${JSON.stringify(compiledPath(args.path))}, import.meta.url).href`;
        return { contents: text.replaceAll('import.meta.url', url), loader: 'ts' };
      });
    },
  };
}

/**
 * prom-client's CPU counters `require('@opentelemetry/api')` when loaded, for the trace of an exemplar, which
 * only a metric with exemplars enabled asks for (ours never do). Loading it costs every start about 20 ms and
 * 44 files; here it is required on first use instead. The package still comes from node_modules (it is
 * external), so a tracing SDK that is configured shares it as before.
 */
function lazyOtelForPromClient() {
  return {
    name: 'gatehouse-lazy-otel-for-prom-client',
    setup(build) {
      build.onResolve({ filter: /^@opentelemetry\/api$/ }, (args) => {
        if (!args.importer.includes(`${sep}node_modules${sep}prom-client${sep}`)) return undefined;
        return { path: 'prom-client-otel', namespace: 'gatehouse-lazy' };
      });
      build.onLoad({ filter: /.*/, namespace: 'gatehouse-lazy' }, () => ({
        contents:
          "let api; const load = () => (api ??= require('@opentelemetry/api'));\n" +
          'module.exports = { get trace() { return load().trace; }, get context() { return load().context; } };\n',
        loader: 'js',
        resolveDir: root,
      }));
    },
  };
}

/**
 * The code with every character outside ASCII written as a `\u` escape. esbuild escapes them in strings but
 * not in regular expression literals, and V8 keeps a module's source in memory for as long as the module lives:
 * one such character makes it two bytes a character instead of one (1.8 MB more for the server's chunk). An
 * escape means the same in a string, a regular expression (with or without the `u` flag) and a comment; only
 * the columns after it on its line no longer match the source map.
 */
function asciiOnly(code) {
  // eslint-disable-next-line no-control-regex
  return code.replace(/[^\x00-\x7f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/**
 * Builds the bundle into `outdir`. Chunks of earlier builds are removed once they are an hour old: a process
 * still running from an earlier build may yet load one of its lazy chunks. Returns esbuild's metafile, also
 * written as `meta.json` (which source files each output holds).
 */
export async function bundle(outdir = join(root, 'dist', 'bundle')) {
  const { build } = await import('esbuild');
  outdir = resolve(outdir);
  mkdirSync(outdir, { recursive: true });
  const result = await build({
    absWorkingDir: root,
    entryPoints: { cli: join(root, 'src', 'cli', 'index.ts') },
    outdir,
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    packages: 'bundle',
    external: EXTERNAL,
    sourcemap: 'linked',
    sourcesContent: false,
    minifyWhitespace: true,
    minifySyntax: true,
    // Not keepNames: it wraps every function made at run time in a `__name` call, which cost a third more CPU per
    // turn (bench (d): 3.0 against 2.3 ms). Error classes set their `name` themselves.
    keepNames: false,
    legalComments: 'none',
    metafile: true,
    write: false,
    logLevel: 'warning',
    chunkNames: '[name]-[hash]',
    // CommonJS packages inside an ES module bundle still call `require` for Node's built-ins.
    banner: {
      js: "import { createRequire as __gatehouseRequire } from 'node:module';const require = __gatehouseRequire(import.meta.url);",
    },
    plugins: [moduleUrlPlugin(), lazyOtelForPromClient()],
  });
  for (const file of result.outputFiles) {
    writeFileSync(file.path, file.path.endsWith('.js') ? asciiOnly(file.text) : file.contents);
  }
  writeFileSync(join(outdir, 'meta.json'), JSON.stringify(result.metafile));
  const current = new Set(Object.keys(result.metafile.outputs).map((file) => resolve(root, file)));
  const hourAgo = Date.now() - 60 * 60 * 1000;
  for (const name of readdirSync(outdir)) {
    const path = join(outdir, name);
    if (name === 'meta.json' || current.has(path)) continue;
    if (statSync(path).mtimeMs < hourAgo) rmSync(path, { force: true });
  }
  return result.metafile;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const outdir = process.argv[2] ?? join(root, 'dist', 'bundle');
  const meta = await bundle(outdir);
  const outputs = Object.entries(meta.outputs).filter(([file]) => file.endsWith('.js'));
  const total = outputs.reduce((sum, [, out]) => sum + out.bytes, 0);
  process.stderr.write(
    `gatehouse: bundled ${Object.keys(meta.inputs).length} modules into ${outputs.length} files ` +
      `(${(total / 1024).toFixed(0)} KB) in ${relative(root, outdir) || '.'}${existsSync(outdir) ? '' : ' (missing)'}\n`,
  );
}
