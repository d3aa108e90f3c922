// summarize.mjs — read the conformance suite's results (one
// server-<scenario>-<timestamp>/checks.json per scenario) and print one line
// per FAILURE and per WARNING check, then `N passed, N failed`.
//
//   node summarize.mjs RESULTS_DIR SUITE_LOG SUITE_EXIT SCENARIO...
//
// SCENARIO... are the scenarios that were meant to run: one without a
// checks.json counts as a failure. A suite log without the runner's own
// summary (`Total: ...` for a suite, `Passed: a/b ...` for one scenario) also
// counts as a failure: the runner crashed or was cut off by `timeout`; so
// does a server problem run.sh passes in LUAMCP_SERVER_PROBLEM.
// "failed" counts WARNING checks too (see run.sh). Exit 1 when failed > 0.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const [resultsDir, suiteLog, suiteExit, ...expected] = process.argv.slice(2);
const oneLine = (s) => String(s ?? '').replace(/\s+/g, ' ').trim();

// server-<scenario>-2025-11-30T03-40-12-123Z -> <scenario>
const dirPattern = /^server-(.+)-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z$/;

let passed = 0;
let failed = 0;
const seen = new Set();
const lines = [];

const dirs = existsSync(resultsDir) ? readdirSync(resultsDir).sort() : [];
for (const dir of dirs) {
  const m = dirPattern.exec(dir);
  const file = join(resultsDir, dir, 'checks.json');
  if (!m || !existsSync(file)) continue;
  const scenario = m[1];
  seen.add(scenario);
  let checks;
  try {
    checks = JSON.parse(readFileSync(file, 'utf8'));
    if (!Array.isArray(checks)) throw new Error('not an array of checks');
  } catch (e) {
    failed++;
    lines.push(`FAIL ${scenario} [checks.json]: unreadable: ${e.message}`);
    continue;
  }
  for (const c of checks) {
    const msg = oneLine(c.errorMessage || c.description || c.name);
    if (c.status === 'SUCCESS') passed++;
    else if (c.status === 'FAILURE') {
      failed++;
      lines.push(`FAIL ${scenario} [${c.id}]: ${msg}`);
    } else if (c.status === 'WARNING') {
      failed++;
      lines.push(`WARN ${scenario} [${c.id}]: ${msg}`);
    }
    // INFO and SKIPPED checks neither pass nor fail
  }
}

for (const scenario of expected) {
  if (!seen.has(scenario)) {
    failed++;
    lines.push(`FAIL ${scenario} [no-results]: no checks.json (the scenario did not run to the end)`);
  }
}

const log = existsSync(suiteLog) ? readFileSync(suiteLog, 'utf8').replace(/\x1b\[[0-9;]*m/g, '') : '';
if (!/^Total: \d+ passed, \d+ failed/m.test(log) && !/^Passed: \d+\/\d+, \d+ failed/m.test(log)) {
  failed++;
  const why = suiteExit === '124' ? 'timed out' : `exit code ${suiteExit}`;
  lines.push(`FAIL suite [no-summary]: the conformance runner printed no summary (${why})`);
}

// set by run.sh: the server crashed, hung on SIGTERM or exited non-zero
if (process.env.LUAMCP_SERVER_PROBLEM) {
  failed++;
  lines.push(`FAIL server [exit]: ${process.env.LUAMCP_SERVER_PROBLEM}`);
}

for (const l of lines) console.log(l);
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed > 0 ? 1 : 0);
