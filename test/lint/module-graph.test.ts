/**
 * The module graph of src/ (ADR 0036): no import cycle larger than three files except the declared
 * registries, and no arrow from an infrastructure folder up into a capability. ESLint's boundary rules
 * (ADR 0011) say which files a file may import; this says what the imports may add up to, which no
 * per-file rule can. Every import counts, type-only ones too: a type import still ties two files'
 * meaning together, and it is how the old 66-file circle was closed.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const SRC = fileURLToPath(new URL('../../src', import.meta.url));

/** Folders of src/ that every capability builds on; none of them may import a capability. */
const INFRASTRUCTURE = new Set(['http', 'security', 'store', 'events', 'logs', 'lib', 'config']);

/**
 * Registries whose members and index import each other by design (the index lists the members, each
 * member names the shared type the index declares). A cycle inside one of these folders is allowed.
 */
const REGISTRIES = ['store/migrations/', 'runtime/providers/'];

/** The largest import cycle (strongly connected component) allowed outside the registries. */
const MAX_CYCLE = 3;

type Graph = Map<string, string[]>;

/** Every non-test .ts file below `dir`, as paths relative to it. */
function sourceFiles(dir: string, base = dir): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...sourceFiles(path, base));
    else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts')) out.push(relative(base, path));
  }
  return out;
}

/** src/'s import graph: file → the files of src/ it imports (relative specifiers, `.js` → `.ts`). */
function srcGraph(): Graph {
  const files = sourceFiles(SRC);
  const known = new Set(files);
  const graph: Graph = new Map();
  for (const file of files) {
    const { importedFiles } = ts.preProcessFile(readFileSync(join(SRC, file), 'utf8'), true, false);
    const targets = new Set<string>();
    for (const { fileName } of importedFiles) {
      if (!fileName.startsWith('.')) continue;
      const target = relative(SRC, resolve(SRC, dirname(file), fileName.replace(/\.js$/, '.ts')));
      if (known.has(target)) targets.add(target);
    }
    graph.set(file, [...targets]);
  }
  return graph;
}

/** The strongly connected components of more than one file (Tarjan), each sorted. */
function cycles(graph: Graph): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (node: string): void => {
    index.set(node, next);
    low.set(node, next);
    next++;
    stack.push(node);
    onStack.add(node);
    for (const to of graph.get(node) ?? []) {
      if (!index.has(to)) {
        visit(to);
        low.set(node, Math.min(low.get(node)!, low.get(to)!));
      } else if (onStack.has(to)) {
        low.set(node, Math.min(low.get(node)!, index.get(to)!));
      }
    }
    if (low.get(node) === index.get(node)) {
      const component: string[] = [];
      let member: string;
      do {
        member = stack.pop()!;
        onStack.delete(member);
        component.push(member);
      } while (member !== node);
      if (component.length > 1) found.push(component.sort());
    }
  };
  for (const node of graph.keys()) if (!index.has(node)) visit(node);
  return found;
}

/** Cycles larger than MAX_CYCLE files that are not wholly inside one registry. */
function forbiddenCycles(graph: Graph): string[][] {
  return cycles(graph).filter(
    (component) =>
      component.length > MAX_CYCLE && !REGISTRIES.some((folder) => component.every((f) => f.startsWith(folder))),
  );
}

/** The top folder of a file of src/ (`(root)` for gateway.ts, main.ts…). */
function folderOf(file: string): string {
  const parts = file.split('/');
  return parts.length > 1 ? parts[0]! : '(root)';
}

/** Imports from an infrastructure folder into a capability (or the composition root), as `from -> to`. */
function upwardArrows(graph: Graph): string[] {
  const arrows: string[] = [];
  for (const [from, targets] of graph) {
    if (!INFRASTRUCTURE.has(folderOf(from))) continue;
    for (const to of targets) if (!INFRASTRUCTURE.has(folderOf(to))) arrows.push(`${from} -> ${to}`);
  }
  return arrows.sort();
}

describe('the module graph of src/', () => {
  const graph = srcGraph();

  it('is read from the real tree (the gateway imports the message path, the turns index its files)', () => {
    expect(graph.size).toBeGreaterThan(200);
    expect(graph.get('gateway.ts')).toContain('turns/index.ts');
    expect(graph.get('turns/index.ts')).toContain('turns/message-path.ts');
  });

  it(`has no import cycle larger than ${MAX_CYCLE} files outside the declared registries`, () => {
    expect(forbiddenCycles(graph)).toEqual([]);
  });

  it('has no import from an infrastructure folder up into a capability', () => {
    expect(upwardArrows(graph)).toEqual([]);
  });

  it('the checks find what they look for (a synthetic graph)', () => {
    const synthetic: Graph = new Map([
      ['a/one.ts', ['b/two.ts']],
      ['b/two.ts', ['c/three.ts']],
      ['c/three.ts', ['d/four.ts']],
      ['d/four.ts', ['a/one.ts']],
      ['store/migrations/index.ts', ['store/migrations/001.ts']],
      ['store/migrations/001.ts', ['store/migrations/002.ts']],
      ['store/migrations/002.ts', ['store/migrations/003.ts']],
      ['store/migrations/003.ts', ['store/migrations/index.ts']],
      ['http/route.ts', ['sessions/index.ts']],
      ['sessions/index.ts', []],
    ]);
    expect(forbiddenCycles(synthetic)).toEqual([['a/one.ts', 'b/two.ts', 'c/three.ts', 'd/four.ts']]);
    expect(upwardArrows(synthetic)).toEqual(['http/route.ts -> sessions/index.ts']);
  });
});
