// summarize.mjs — read the conformance suite's results (one
// server-<scenario>-<timestamp>/checks.json per scenario) and print one line
// per FAILURE and per WARNING check, then `N passed, N failed`.
//
//   node summarize.mjs RESULTS_DIR SUITE_LOG SUITE_EXIT SCENARIO...
//   LUAMCP_REQUIREMENTS_FILE=requirements/REV.yaml node summarize.mjs --kinds
//
// SCENARIO... are the scenarios that were meant to run: one without a
// checks.json counts as a failure. A suite log without the runner's own
// summary (`Total: ...` for a suite, `Passed: a/b ...` for one scenario) also
// counts as a failure: the runner crashed or was cut off by `timeout`; so
// does a server problem run.sh passes in LUAMCP_SERVER_PROBLEM.
// "failed" counts WARNING checks too (see run.sh). Exit 1 when failed > 0.
//
// With LUAMCP_REQUIREMENTS_FILE (run.sh --requirements REV: the suite's frozen
// requirements/REV.yaml) each scenario has a kind: "scored" (the set's
// `server` list) or the reason it is run but never scored (`not_scored`:
// extension, pending, added-after-release). The FAIL/WARN/SKIP lines then name
// the kind, a table gives every scenario's checks, and one verdict line per
// kind comes before the closing line, which counts every kind: the suite's own
// exit code counts scored scenarios only, this one does not.
// `--kinds` prints the set's server scenarios as "<name> <kind>" lines.
// LUAMCP_CONFORMANCE_REPORT=FILE also writes that table as Markdown.
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

const oneLine = (s) => String(s ?? '').replace(/\s+/g, ' ').trim();
const reqFile = process.env.LUAMCP_REQUIREMENTS_FILE || '';
const label = process.env.LUAMCP_CONFORMANCE_LABEL || 'conformance';

// {====== the requirement set: scenario -> kind, in the set's order
function readKinds(file) {
  // yaml is a dependency of the suite itself: resolve it from there
  const require = createRequire(join(dirname(file), '..', 'package.json'));
  const YAML = require('yaml');
  const doc = YAML.parse(readFileSync(file, 'utf8'));
  const kinds = new Map();
  for (const s of doc.server ?? []) kinds.set(s, 'scored');
  for (const e of doc.not_scored ?? []) {
    if (e.leg === 'server') kinds.set(e.scenario, e.reason || 'not-scored');
  }
  // run.sh's scenarios the frozen set predates: "<name> <kind>" lines
  for (const l of (process.env.LUAMCP_EXTRA_KINDS || '').split('\n')) {
    const [s, k] = l.trim().split(/\s+/);
    if (s && !kinds.has(s)) kinds.set(s, k || 'extension');
  }
  return kinds;
}
const kinds = reqFile ? readKinds(reqFile) : null;
// scored first, then the reasons in a fixed order
const KIND_ORDER = ['scored', 'extension', 'pending', 'added-after-release'];
const kindRank = (k) => (KIND_ORDER.includes(k) ? KIND_ORDER.indexOf(k) : KIND_ORDER.length);

if (process.argv[2] === '--kinds') {
  if (!kinds) {
    console.error('summarize.mjs --kinds: set LUAMCP_REQUIREMENTS_FILE');
    process.exit(2);
  }
  for (const [s, k] of kinds) console.log(`${s} ${k}`);
  process.exit(0);
}
// }======

const [resultsDir, suiteLog, suiteExit, ...expected] = process.argv.slice(2);
const kindOf = (scenario) => (kinds ? kinds.get(scenario) || 'unlisted' : null);

// server-<scenario>-2025-11-30T03-40-12-123Z -> <scenario>
const dirPattern = /^server-(.+)-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z$/;

// per scenario: counts and the lines of its non-passing checks
const stats = new Map();
const stat = (scenario) => {
  if (!stats.has(scenario)) {
    stats.set(scenario, { passed: 0, failed: 0, warned: 0, skipped: 0, lines: [], first: null, ran: false });
  }
  return stats.get(scenario);
};
const extra = []; // failures that belong to no scenario (runner, server)
const tag = (scenario) => (kinds ? `${kindOf(scenario)} ${scenario}` : scenario);

const dirs = existsSync(resultsDir) ? readdirSync(resultsDir).sort() : [];
for (const dir of dirs) {
  const m = dirPattern.exec(dir);
  const file = join(resultsDir, dir, 'checks.json');
  if (!m || !existsSync(file)) continue;
  const scenario = m[1];
  const st = stat(scenario);
  st.ran = true;
  let checks;
  try {
    checks = JSON.parse(readFileSync(file, 'utf8'));
    if (!Array.isArray(checks)) throw new Error('not an array of checks');
  } catch (e) {
    st.failed++;
    st.first ??= { id: 'checks.json', msg: `unreadable: ${e.message}` };
    st.lines.push(`FAIL ${tag(scenario)} [checks.json]: unreadable: ${e.message}`);
    continue;
  }
  for (const c of checks) {
    const msg = oneLine(c.errorMessage || c.description || c.name);
    if (c.status === 'SUCCESS') st.passed++;
    else if (c.status === 'FAILURE' || c.status === 'WARNING') {
      if (c.status === 'FAILURE') st.failed++;
      else st.warned++;
      st.first ??= { id: c.id, msg, status: c.status };
      st.lines.push(`${c.status === 'FAILURE' ? 'FAIL' : 'WARN'} ${tag(scenario)} [${c.id}]: ${msg}`);
    } else if (c.status === 'SKIPPED' && kinds) {
      st.skipped++;
      st.lines.push(`SKIP ${tag(scenario)} [${c.id}]: ${msg}`);
    }
    // INFO checks neither pass nor fail; SKIPPED ones are shown (requirement
    // sets) but count neither way
  }
}

for (const scenario of expected) {
  const st = stat(scenario);
  if (!st.ran) {
    st.failed++;
    st.first = { id: 'no-results', msg: 'no checks.json (the scenario did not run to the end)' };
    st.lines.push(`FAIL ${tag(scenario)} [no-results]: no checks.json (the scenario did not run to the end)`);
  }
}

const log = existsSync(suiteLog) ? readFileSync(suiteLog, 'utf8').replace(/\x1b\[[0-9;]*m/g, '') : '';
if (!/^Total: \d+ passed, \d+ failed/m.test(log) && !/^Passed: \d+\/\d+, \d+ failed/m.test(log)) {
  const why = suiteExit === '124' ? 'timed out' : `exit code ${suiteExit}`;
  extra.push(`FAIL suite [no-summary]: the conformance runner printed no summary (${why})`);
}

// set by run.sh: the server crashed, hung on SIGTERM or exited non-zero
if (process.env.LUAMCP_SERVER_PROBLEM) {
  extra.push(`FAIL server [exit]: ${process.env.LUAMCP_SERVER_PROBLEM}`);
}

// scenarios in the set's order (or the order they ran in), grouped by kind
const order = kinds ? [...kinds.keys()].filter((s) => stats.has(s)) : [];
for (const s of stats.keys()) if (!order.includes(s)) order.push(s);
if (kinds) order.sort((a, b) => kindRank(kindOf(a)) - kindRank(kindOf(b)));

let passed = 0;
let failed = extra.length;
// LUAMCP_CONFORMANCE_GATE=scored: the exit status counts the scored
// scenarios (and failures of the run itself) only; the rest is reported
const scoredOnly = process.env.LUAMCP_CONFORMANCE_GATE === 'scored' && kinds;
let gated = extra.length;
for (const s of order) {
  const st = stats.get(s);
  passed += st.passed;
  failed += st.failed + st.warned;
  if (!scoredOnly || kindOf(s) === 'scored') gated += st.failed + st.warned;
  for (const l of st.lines) console.log(l);
}
for (const l of extra) console.log(l);

const verdict = (st) =>
  st.failed + st.warned > 0 ? 'FAILING' : st.passed === 0 && st.skipped > 0 ? 'skipped' : 'ok';

if (kinds) {
  const w = Math.max(...order.map((s) => s.length), 8);
  console.log(`${label}, by scenario (checks passed/failed/warnings/skipped):`);
  for (const s of order) {
    const st = stats.get(s);
    const counts = `${st.passed}/${st.failed}/${st.warned}/${st.skipped}`;
    const first = st.first ? `  first: [${st.first.id}] ${st.first.msg.slice(0, 140)}` : '';
    console.log(`  ${verdict(st).padEnd(8)} ${kindOf(s).padEnd(19)} ${s.padEnd(w)} ${counts.padStart(9)}${first}`);
  }
  const byKind = new Map();
  for (const s of order) {
    const k = kindOf(s);
    if (!byKind.has(k)) byKind.set(k, { n: 0, failing: 0, skippedOnly: 0, passed: 0, failed: 0, warned: 0, skipped: 0 });
    const t = byKind.get(k);
    const st = stats.get(s);
    t.n++;
    if (verdict(st) === 'FAILING') t.failing++;
    if (verdict(st) === 'skipped') t.skippedOnly++;
    t.passed += st.passed;
    t.failed += st.failed;
    t.warned += st.warned;
    t.skipped += st.skipped;
  }
  for (const [k, t] of byKind) {
    const what = k === 'scored' ? 'scored' : `not scored (${k})`;
    const skippedOnly = t.skippedOnly ? `, ${t.skippedOnly} skipped by the suite` : '';
    console.log(
      `${label}: ${what}: ${t.n} scenarios, ${t.failing} failing${skippedOnly}; ` +
        `checks ${t.passed} passed, ${t.failed} failed, ${t.warned} warnings, ${t.skipped} skipped`
    );
  }
  if (extra.length) console.log(`${label}: ${extra.length} failure(s) of the run itself (above)`);
}

if (process.env.LUAMCP_CONFORMANCE_REPORT) {
  const esc = (s) => String(s).replace(/\|/g, '\\|');
  const rows = [
    '| scenario | kind | verdict | passed | failed | warnings | skipped | first failing check |',
    '|---|---|---|---:|---:|---:|---:|---|',
  ];
  for (const s of order) {
    const st = stats.get(s);
    const first = st.first ? `\`${st.first.id}\`: ${esc(st.first.msg.slice(0, 300))}` : '';
    rows.push(
      `| ${s} | ${kindOf(s) ?? ''} | ${verdict(st)} | ${st.passed} | ${st.failed} | ${st.warned} | ${st.skipped} | ${first} |`
    );
  }
  for (const l of extra) rows.push(`| (run) | | FAILING | | 1 | | | ${esc(l)} |`);
  writeFileSync(process.env.LUAMCP_CONFORMANCE_REPORT, rows.join('\n') + '\n');
}

console.log(`${passed} passed, ${failed} failed`);
if (scoredOnly) console.log(`gate (LUAMCP_CONFORMANCE_GATE=scored): ${gated} failed in the scored scenarios or the run`);
process.exit(gated > 0 ? 1 : 0);
