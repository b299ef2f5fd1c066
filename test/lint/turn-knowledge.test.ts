/**
 * What a turn is stays in `src/turns/` (ADR 0036): how a turn ended or paused, which store path runs it and
 * the SQL on its table are answered there once. Everywhere else asks `turns/` (its status predicates, the
 * door's ready steps, `turns.queries.ts`) instead of comparing literals or branching on the store driver.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const SRC = join(ROOT, 'src');

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts') ? [path] : [];
  });
}

const files = sourceFiles(SRC).map((path) => ({ path: relative(ROOT, path), text: readFileSync(path, 'utf8') }));

/** `path:line: text` of every line of the files outside `allowed` that matches `pattern`. */
function offenders(pattern: RegExp, allowed: (path: string) => boolean): string[] {
  return files
    .filter((file) => !allowed(file.path))
    .flatMap((file) =>
      file.text.split('\n').flatMap((line, i) => (pattern.test(line) ? [`${file.path}:${i + 1}: ${line.trim()}`] : [])),
    );
}

const inTurnsOrRuntime = (path: string) => path.startsWith('src/turns/') || path.startsWith('src/runtime/');

describe('turn knowledge lives in src/turns/', () => {
  it('no turn-status literal is compared outside src/turns/ and src/runtime/', () => {
    const literal = /(===|!==)\s*'(accepted|waiting_approval|waiting_clarification|incomplete|interrupted)'/;
    const turnStatus = /\bturn\w*\.status\s*(===|!==)/;
    const caseLiteral = /case '(waiting_approval|waiting_clarification|incomplete|interrupted)'/;
    const doneEvent = /\btype\s*(===|!==)\s*'done'/;
    const pattern = new RegExp([literal, turnStatus, caseLiteral, doneEvent].map((r) => r.source).join('|'));
    expect(offenders(pattern, inTurnsOrRuntime)).toEqual([]);
  });

  it('only the store and the turn-path files branch on the store driver', () => {
    const allowed = (path: string) => path.startsWith('src/store/') || /^src\/turns\/turn-path[.\w]*\.ts$/.test(path);
    expect(offenders(/\bstore\.driver\s*(===|!==)/, allowed)).toEqual([]);
  });

  it('no SQL on the turns table outside src/turns/ (and the migrations that create it)', () => {
    const sqlOnTurns =
      /(selectFrom|updateTable|insertInto|deleteFrom|innerJoin|leftJoin)\(\s*'turns\b|\b(FROM|JOIN|UPDATE|INTO)\s+turns\b/;
    const allowed = (path: string) => path.startsWith('src/turns/') || path.startsWith('src/store/migrations');
    expect(offenders(sqlOnTurns, allowed)).toEqual([]);
  });

  it('the rules can fail: each pattern finds what it forbids inside src/turns/', () => {
    const everywhere = () => false;
    expect(offenders(/\bstore\.driver\s*(===|!==)/, everywhere).length).toBeGreaterThan(0);
    expect(offenders(/(selectFrom|updateTable)\(\s*'turns\b/, everywhere).length).toBeGreaterThan(0);
    expect(offenders(/(===|!==)\s*'(waiting_approval|interrupted)'/, everywhere).length).toBeGreaterThan(0);
  });
});
