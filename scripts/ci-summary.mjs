// Reads the JSON result written by vitest's `json` reporter and prints the plain closing line that CI reads:
//
//   N passed, N failed            (", N skipped" appended when any test was skipped or todo)
//
// alone on the last line of output. Exits non-zero when the result file is missing or unreadable, when any
// test failed, when vitest itself reported failure (e.g. a test file that failed to load, or an unhandled
// error), or when no test passed at all.
//
// Usage: node scripts/ci-summary.mjs <vitest-json-file>
import { readFileSync } from 'node:fs';

const file = process.argv[2];
if (!file) {
  console.error('ci-summary: usage: node scripts/ci-summary.mjs <vitest-json-file>');
  process.exit(2);
}

let result;
try {
  result = JSON.parse(readFileSync(file, 'utf8'));
} catch (error) {
  const reason = error instanceof Error ? error.message : String(error);
  console.error(`ci-summary: no usable vitest JSON result at ${file} (did the test run start?): ${reason}`);
  process.exit(2);
}

/** A non-negative integer count from the result, or 0 when absent. */
function count(key) {
  const value = result?.[key];
  return Number.isInteger(value) && value > 0 ? value : 0;
}

const passed = count('numPassedTests');
const failed = count('numFailedTests');
const skipped = count('numPendingTests') + count('numTodoTests');
const failedSuites = count('numFailedTestSuites');

const problems = [];
if (failed > 0) problems.push(`${failed} test(s) failed`);
if (failedSuites > 0) problems.push(`${failedSuites} suite(s) failed`);
if (result?.success === false && problems.length === 0) problems.push('vitest reported the run as failed');
if (passed === 0) problems.push('no test passed');

if (problems.length > 0) console.log(`ci-summary: FAILED: ${problems.join('; ')}`);

let line = `${passed} passed, ${failed} failed`;
if (skipped > 0) line += `, ${skipped} skipped`;
console.log(line);

process.exitCode = problems.length > 0 ? 1 : 0;
