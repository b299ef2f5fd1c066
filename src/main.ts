#!/usr/bin/env -S node --max-semi-space-size=1 --v8-pool-size=1
import { existsSync, readFileSync } from 'node:fs';
import { SourceMap, type SourceMapPayload } from 'node:module';
import { dirname, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import type * as Cli from './cli/index.js';

/** The real process's streams and environment: the one place the command line reads `process.env`. */
const io: Cli.CliIo = {
  out: (text) => void process.stdout.write(text),
  err: (text) => void process.stderr.write(text),
  env: process.env,
  cwd: process.cwd(),
  stdoutIsTTY: process.stdout.isTTY === true,
  stdinIsTTY: process.stdin.isTTY === true,
};

/**
 * Stack traces of the bundle name the source files and lines: each frame in a file under `dir` is mapped through
 * that file's source map, read the first time a trace needs it. (Node's own `--enable-source-maps` reads and
 * keeps every map as each module loads: about 8 MB of an idle gateway; ADR 0044.) Other frames (Node's own,
 * node_modules) stay as V8 writes them.
 */
function mapStackTraces(dir: string): void {
  const maps = new Map<string, SourceMap | null>();
  const mapOf = (path: string): SourceMap | null => {
    let map = maps.get(path);
    if (map === undefined) {
      try {
        map = new SourceMap(JSON.parse(readFileSync(`${path}.map`, 'utf8')) as SourceMapPayload);
      } catch {
        map = null; // no map, or an unreadable one: the frame stays as it is
      }
      maps.set(path, map);
    }
    return map;
  };
  const mapFrame = (frame: NodeJS.CallSite): string => {
    // eslint-disable-next-line @typescript-eslint/no-base-to-string -- V8's CallSite writes the frame as usual
    const text = String(frame);
    const file = frame.getFileName();
    const line = frame.getLineNumber();
    const column = frame.getColumnNumber();
    if (!file || line === null || column === null) return text;
    const path = file.startsWith('file:') ? fileURLToPath(file) : file;
    if (!path.startsWith(dir + sep)) return text;
    const entry = mapOf(path)?.findEntry(line - 1, column - 1);
    if (!entry || !('originalSource' in entry) || !entry.originalSource) return text;
    const original = entry.originalSource;
    const source = original.startsWith('file:') ? fileURLToPath(original) : resolve(dirname(path), original);
    return text.replace(`${file}:${line}:${column}`, `${source}:${entry.originalLine + 1}:${entry.originalColumn + 1}`);
  };
  Error.prepareStackTrace = (error: Error, frames: NodeJS.CallSite[]): string => {
    let header: string;
    try {
      header = Error.prototype.toString.call(error);
    } catch {
      header = 'Error';
    }
    return [header, ...frames.map((frame) => `    at ${mapFrame(frame)}`)].join('\n');
  };
}

/**
 * The command line: from the bundle (`dist/bundle/`, built by scripts/build-if-needed.mjs; ADR 0044) when it
 * exists, else from the modules tsc compiled beside this file.
 */
async function loadCli(): Promise<typeof Cli> {
  const bundled = new URL('../bundle/cli.js', import.meta.url);
  if (!existsSync(bundled)) return import('./cli/index.js');
  mapStackTraces(dirname(fileURLToPath(bundled)));
  return (await import(bundled.href)) as typeof Cli;
}

/** Exits once what was written to stdout and stderr has been handed to the OS. */
function exitAfterFlush(code: number): void {
  process.stdout.write('', () => process.stderr.write('', () => process.exit(code)));
}

loadCli()
  .then(({ runCli }) => runCli(process.argv.slice(2), io))
  .then(
    (outcome) => {
      if (outcome !== 'serving') exitAfterFlush(outcome);
    },
    (err: unknown) => {
      process.stderr.write(`gatehouse: fatal: ${(err as Error).stack ?? String(err)}\n`);
      exitAfterFlush(1);
    },
  );
