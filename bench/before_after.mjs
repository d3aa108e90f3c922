// The table of bench/before_after.sh: for every compute-bound figure, each
// binary's median (min–max) over rounds and the per-round ratio after/before
// (same round, runs seconds apart). Writes the results file that
// bench/report.mjs reads for its "before/after" rows.
//
// Usage: node bench/before_after.mjs RUNS.jsonl OUT.json BEFORE_BIN AFTER_BIN
import { readFileSync, writeFileSync } from "node:fs";
import { cpus } from "node:os";
import { fmtRatio, fmtStats, printTable, stats } from "./stats.mjs";

const [runsPath, outPath, beforeBin, afterBin] = process.argv.slice(2);
if (!runsPath || !outPath) {
  console.error("usage: node bench/before_after.mjs RUNS.jsonl OUT.json BEFORE_BIN AFTER_BIN");
  process.exit(2);
}
const runs = readFileSync(runsPath, "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l));
const rounds = [...new Set(runs.map((r) => r.round))].sort((a, b) => a - b);

// One figure: how to read it from a binary's runs of one round.
const stdio = (w, field) => (bin, round) =>
  runs.find((r) => r.bench === "stdio" && r.bin === bin && r.round === round && r.w === w && r.status === "ok")?.[field];
const http = (server, c, field) => (bin, round) =>
  runs.find((r) => r.bench === "http" && r.kind === "load" && r.bin === bin && r.round === round &&
    r.server === server && r.c === c && r.status === "ok")?.[field];

const metrics = [
  { key: "stdio_w1_rps", label: "stdio W=1 req/s", get: stdio(1, "rps"), higherIsBetter: true },
  { key: "stdio_w32_rps", label: "stdio W=32 req/s", get: stdio(32, "rps"), higherIsBetter: true },
  { key: "stdio_w1_p99_us", label: "stdio W=1 p99 µs", get: stdio(1, "p99_us") },
  { key: "stdio_w32_p99_us", label: "stdio W=32 p99 µs", get: stdio(32, "p99_us") },
  { key: "stdio_w32_peak_rss_kb", label: "stdio W=32 peak RSS kB", get: stdio(32, "peak_rss_kb") },
];
for (const s of ["luamcp-sl", "luamcp-sf"])
  for (const c of [1, 16])
    metrics.push(
      { key: `${s}_c${c}_rps`, label: `HTTP ${s} c=${c} req/s`, get: http(s, c, "rps"), higherIsBetter: true },
      { key: `${s}_c${c}_p99_us`, label: `HTTP ${s} c=${c} p99 µs`, get: http(s, c, "p99_us") },
    );

const summary = {};
for (const m of metrics) {
  const per = (bin) => rounds.map((r) => m.get(bin, r));
  const ratios = rounds.map((r) => {
    const a = m.get("after", r);
    const b = m.get("before", r);
    return a !== undefined && b > 0 ? a / b : undefined;
  });
  summary[m.key] = {
    label: m.label,
    before: stats(per("before")),
    after: stats(per("after")),
    ratio: stats(ratios),
    better: m.higherIsBetter ? "above 1" : "below 1",
  };
}

console.log(`before: ${beforeBin}`);
console.log(`after:  ${afterBin}`);
printTable(
  ["metric", "before", "after", "after/before per round", "good if"],
  metrics.map((m) => {
    const s = summary[m.key];
    return [m.label, fmtStats(s.before), fmtStats(s.after), fmtStats(s.ratio, fmtRatio), s.better];
  }),
);
const bad = runs.filter((r) => r.status && r.status !== "ok").length;
console.log(`${rounds.length} round(s), ${bad} failed run(s), ${cpus().length} cores; the limit: req/s after/before ≥ 0.95`);

writeFileSync(
  outPath,
  JSON.stringify({ date: new Date().toISOString(), cores: cpus().length, before: beforeBin, after: afterBin, summary, runs }, null, 2) + "\n",
);
process.exit(bad ? 1 : 0);
