// Turns the raw stdio_load runs of bench/run.sh (one JSON object per line,
// tagged with server and round) into the comparison table on stdout and the
// results file. Ratios are taken per round, between runs made side by side,
// because on a shared machine only those are comparable; the table shows the
// median and min–max of each.
//
// Usage: node bench/summarize.mjs RUNS.jsonl OUT.json
import { readFileSync, writeFileSync } from "node:fs";
import { cpus } from "node:os";

const [runsPath, outPath] = process.argv.slice(2);
if (!runsPath || !outPath) {
  console.error("usage: node bench/summarize.mjs RUNS.jsonl OUT.json");
  process.exit(2);
}

const runs = readFileSync(runsPath, "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l));
const good = runs.filter((r) => r.status === "ok");
const servers = [...new Set(runs.map((r) => r.server))];
const widths = [...new Set(runs.map((r) => r.w))].sort((a, b) => a - b);

// Each metric: where to read it, which widths it is reported for, and
// whether a ratio above 1 is good for luamcp.
const metrics = [
  ...widths.flatMap((w) => [
    { key: `w${w}_rps`, label: `W=${w} req/s`, field: "rps", w, higherIsBetter: true },
    { key: `w${w}_p50_us`, label: `W=${w} p50 µs`, field: "p50_us", w },
    { key: `w${w}_p99_us`, label: `W=${w} p99 µs`, field: "p99_us", w },
    { key: `w${w}_peak_rss_kb`, label: `W=${w} peak RSS kB`, field: "peak_rss_kb", w },
  ]),
  { key: "idle_rss_kb", label: "idle RSS kB", field: "idle_rss_kb" },
  { key: "startup_ms", label: "start-up ms", field: "startup_ms" },
];

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
const stats = (xs) => (xs.length ? { median: median(xs), min: Math.min(...xs), max: Math.max(...xs), n: xs.length } : null);

const samples = (server, m) =>
  good.filter((r) => r.server === server && (m.w === undefined || r.w === m.w)).map((r) => r[m.field]);

// Pair luamcp and TS runs made in the same round at the same width.
const pairedRatios = (m) => {
  const out = [];
  for (const a of good.filter((r) => r.server === "luamcp" && (m.w === undefined || r.w === m.w))) {
    const b = good.find((r) => r.server === "ts" && r.round === a.round && r.w === a.w);
    if (b && b[m.field] > 0) out.push(a[m.field] / b[m.field]);
  }
  return out;
};

const summary = {};
const ratios = {};
for (const m of metrics) {
  summary[m.key] = Object.fromEntries(servers.map((s) => [s, stats(samples(s, m))]));
  const st = stats(pairedRatios(m));
  if (st) ratios[m.key] = { ...st, better: m.higherIsBetter ? "above 1" : "below 1" };
}

// {====== the table
const fmtNum = (x) => (x >= 100 ? Math.round(x).toString() : x >= 10 ? x.toFixed(1) : x.toFixed(2));
const fmtStats = (st, f = fmtNum) => (st ? `${f(st.median)} (${f(st.min)}–${f(st.max)})` : "—");
const header = ["metric", ...servers.map((s) => `${s} median (min–max)`)];
const hasRatio = Object.keys(ratios).length > 0;
if (hasRatio) header.push("luamcp/ts per round", "good if");
const rows = metrics.map((m) => {
  const row = [m.label, ...servers.map((s) => fmtStats(summary[m.key][s]))];
  if (hasRatio) row.push(fmtStats(ratios[m.key], (x) => x.toFixed(2)), ratios[m.key]?.better ?? "");
  return row;
});
const colWidth = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
const line = (cells) => cells.map((c, i) => c.padEnd(colWidth[i])).join("  ").trimEnd();
console.log(line(header));
console.log(line(colWidth.map((w) => "-".repeat(w))));
for (const r of rows) console.log(line(r));
const failed = runs.length - good.length;
const roundCount = new Set(runs.map((r) => r.round)).size;
console.log(`${good.length} runs ok, ${failed} failed, ${roundCount} round(s), ${cpus().length} cores`);
// }======

writeFileSync(
  outPath,
  JSON.stringify(
    { date: new Date().toISOString(), cores: cpus().length, node: process.version, servers, summary, ratios, runs },
    null,
    2,
  ) + "\n",
);
process.exit(failed ? 1 : 0);
