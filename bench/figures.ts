import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

/**
 * The bench's figures: every number judged against a target, printed as
 * "met" / "NOT MET" and written as JSON (`--json <file>`), so one run can be
 * compared with the next. A figure without a target is reported only.
 */

/** How a figure compares with its target: at most (`<=`), below (`<`) or at least (`>=`) the target value. */
export type TargetOp = '<=' | '<' | '>=';

/** One measured figure. */
export interface Figure {
  /** Stable id across runs, e.g. `turn.echo.c1.p50_ms`. */
  id: string;
  /** The store it was measured on (`sqlite`, `postgres`), or `none` (the baseline, search). */
  backend: string;
  /** What it is, in words. */
  label: string;
  value: number;
  unit: string;
  target?: { op: TargetOp; value: number };
  /** Whether the target is met; null without a target or without a value. */
  met: boolean | null;
}

const figures: Figure[] = [];

/** Records one figure (and judges it when it has a target); returns it. */
export function record(figure: Omit<Figure, 'met'>): Figure {
  const met = figure.target === undefined || !Number.isFinite(figure.value) ? null : meets(figure.value, figure.target);
  const full: Figure = { ...figure, met };
  figures.push(full);
  return full;
}

/** Records a figure of `backend` from its parts (a target only when one is given). */
export function recordFigure(
  backend: string,
  id: string,
  label: string,
  value: number,
  unit: string,
  target?: { op: TargetOp; value: number },
): Figure {
  return record({ id, backend, label, value, unit, ...(target ? { target } : {}) });
}

function meets(value: number, target: { op: TargetOp; value: number }): boolean {
  switch (target.op) {
    case '<=':
      return value <= target.value;
    case '<':
      return value < target.value;
    case '>=':
      return value >= target.value;
  }
}

/** Every figure recorded so far, in order. */
export function allFigures(): readonly Figure[] {
  return figures;
}

const fmt = (value: number, digits: number): string => (Number.isFinite(value) ? value.toFixed(digits) : '—');

function digitsFor(unit: string): number {
  return unit === 'req/s' || unit === 'turns/s' ? 0 : unit === 'ratio' ? 2 : 2;
}

/** The verdict lines: every figure with a target, grouped by backend. */
export function printVerdicts(log: (line?: string) => void): void {
  const judged = figures.filter((f) => f.target !== undefined);
  if (judged.length === 0) return;
  const width = Math.max(...judged.map((f) => f.label.length));
  for (const backend of [...new Set(judged.map((f) => f.backend))]) {
    log(`targets — ${backend}:`);
    for (const f of judged.filter((x) => x.backend === backend)) {
      const digits = digitsFor(f.unit);
      const unit = f.unit === 'ratio' ? '×' : ` ${f.unit}`;
      const verdict = f.met === null ? 'not measured' : f.met ? 'met' : 'NOT MET';
      log(
        `  ${f.label.padEnd(width)}  ${fmt(f.value, digits).padStart(8)}${unit.padEnd(8)} ` +
          `target ${f.target!.op} ${f.target!.value}${unit.trim() === '×' ? '×' : unit}  → ${verdict}`,
      );
    }
  }
  const missed = judged.filter((f) => f.met === false).length;
  log(`${judged.length - missed} of ${judged.length} targets met${missed > 0 ? `, ${missed} not met` : ''}.`);
}

/** What `--json` writes. */
export interface BenchReport {
  version: 1;
  started_at: string;
  finished_at: string;
  machine: { cpus: number; node: string; load_average: number[] };
  settings: Record<string, unknown>;
  figures: Figure[];
}

/** The report of this run so far. */
export function report(startedAt: Date, settings: Record<string, unknown>): BenchReport {
  return {
    version: 1,
    started_at: startedAt.toISOString(),
    finished_at: new Date().toISOString(),
    machine: { cpus: availableParallelism(), node: process.version, load_average: loadavg() },
    settings,
    figures: [...figures],
  };
}

/**
 * The file named by `--json <file>` (or `--json=<file>`) on the command line;
 * `--json` alone names `bench-results.json`. A relative path is taken from the
 * directory `npm run` was started in (INIT_CWD), else the working directory.
 */
export function jsonTarget(argv: readonly string[]): string | undefined {
  const from = (file: string): string => resolve(process.env.INIT_CWD ?? process.cwd(), file);
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg.startsWith('--json=')) return from(arg.slice('--json='.length) || 'bench-results.json');
    if (arg === '--json') {
      const next = argv[i + 1];
      return from(next !== undefined && !next.startsWith('--') ? next : 'bench-results.json');
    }
  }
  return undefined;
}

/**
 * `npm run bench -- --json <file>` hands the flag to the last command of the
 * script (the search bench). Run from that script, the main bench therefore
 * leaves its report here, keyed by the shell that runs both, for the search
 * bench to merge into the file it writes (and remove).
 */
export function handoffPath(): string {
  return join(tmpdir(), `gatehouse-bench-${process.ppid}.json`);
}

/** Writes `value` as JSON to `file`. */
export function writeJson(file: string, value: unknown): void {
  writeFileSync(file, `${JSON.stringify(value, null, 2)}\n`);
}

/** The main bench's report left for this shell's later commands, if any (read once, then removed). */
export function takeHandoff(): BenchReport | undefined {
  const path = handoffPath();
  try {
    const parsed = JSON.parse(readFileSync(path, 'utf8')) as BenchReport;
    return parsed.version === 1 ? parsed : undefined;
  } catch {
    return undefined;
  } finally {
    rmSync(path, { force: true });
  }
}
