// Reads the JSON results written by vitest's `json` reporter (one per tier: the suite, the fault tier) and
// prints the plain closing line that CI reads, summed over every file:
//
//   N passed, N failed            (", N skipped" appended when any test was skipped or todo)
//
// alone on the last line of output. Exits non-zero when a result file is missing or unreadable, when any
// test failed, when vitest itself reported failure (e.g. a test file that failed to load, or an unhandled
// error), or when no test passed at all.
//
// Usage: node scripts/ci-summary.mjs <vitest-json-file>...
import { readFileSync } from 'node:fs';

const files = process.argv.slice(2);
if (files.length === 0) {
  console.error('ci-summary: usage: node scripts/ci-summary.mjs <vitest-json-file>...');
  process.exit(2);
}

/** A non-negative integer count from a result, or 0 when absent. */
function count(result, key) {
  const value = result?.[key];
  return Number.isInteger(value) && value > 0 ? value : 0;
}

let passed = 0;
let failed = 0;
let skipped = 0;
const problems = [];
for (const file of files) {
  let result;
  try {
    result = JSON.parse(readFileSync(file, 'utf8'));
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    console.error(`ci-summary: no usable vitest JSON result at ${file} (did the test run start?): ${reason}`);
    process.exit(2);
  }
  const filePassed = count(result, 'numPassedTests');
  const fileFailed = count(result, 'numFailedTests');
  const failedSuites = count(result, 'numFailedTestSuites');
  passed += filePassed;
  failed += fileFailed;
  skipped += count(result, 'numPendingTests') + count(result, 'numTodoTests');
  if (fileFailed > 0) problems.push(`${fileFailed} test(s) failed in ${file}`);
  if (failedSuites > 0) problems.push(`${failedSuites} suite(s) failed in ${file}`);
  if (result?.success === false && fileFailed === 0 && failedSuites === 0) {
    problems.push(`vitest reported the run of ${file} as failed`);
  }
  if (filePassed === 0) problems.push(`no test passed in ${file}`);
}

if (problems.length > 0) console.log(`ci-summary: FAILED: ${problems.join('; ')}`);

let line = `${passed} passed, ${failed} failed`;
if (skipped > 0) line += `, ${skipped} skipped`;
console.log(line);

process.exitCode = problems.length > 0 ? 1 : 0;
