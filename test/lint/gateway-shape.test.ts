/**
 * The composition root stays a root (ADR 0036): `src/gateway.ts` under 250 lines, and no closure in it longer
 * than one call. Wiring that needs more belongs in the capability that owns it (a module factory, a helper of
 * its index), where it can be read and tested with the rest of that capability.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const GATEWAY = fileURLToPath(new URL('../../src/gateway.ts', import.meta.url));
const MAX_LINES = 250;

/** The calls inside `node` (nested calls count each), not looking into closures nested in it. */
function callsIn(node: ts.Node): number {
  let calls = 0;
  const visit = (child: ts.Node): void => {
    if (ts.isArrowFunction(child) || ts.isFunctionExpression(child)) return;
    if (ts.isCallExpression(child) || ts.isNewExpression(child)) calls++;
    ts.forEachChild(child, visit);
  };
  visit(node);
  return calls;
}

/** Every closure (arrow function, function expression) of `source` with more than one call, as `line: text`. */
function longClosures(source: string): string[] {
  const file = ts.createSourceFile('gateway.ts', source, ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const visit = (node: ts.Node): void => {
    if ((ts.isArrowFunction(node) || ts.isFunctionExpression(node)) && callsIn(node.body) > 1) {
      const { line } = file.getLineAndCharacterOfPosition(node.getStart());
      found.push(`${line + 1}: ${node.getText().split('\n')[0]}`);
    }
    ts.forEachChild(node, visit);
  };
  visit(file);
  return found;
}

describe('src/gateway.ts, the composition root', () => {
  const source = readFileSync(GATEWAY, 'utf8');

  it(`has fewer than ${MAX_LINES} lines`, () => {
    expect(source.split('\n').length).toBeLessThan(MAX_LINES);
  });

  it('has no closure longer than one call', () => {
    expect(longClosures(source)).toEqual([]);
  });

  it('the closure check finds a long one (a synthetic source)', () => {
    const sample = [
      'const a = () => one();',
      'const b = (x) => { first(x); second(x); };',
      'const c = () => outer(inner());',
      'const d = () => list.map((x) => f(g(x)));',
    ].join('\n');
    expect(longClosures(sample)).toEqual([
      '2: (x) => { first(x); second(x); }',
      '3: () => outer(inner())',
      '4: (x) => f(g(x))',
    ]);
  });
});
