// Turns the raw stdio_load runs of bench/run.sh (one JSON object per line,
// tagged with server and round) into the comparison tables on stdout and the
// results file. Ratios (luamcp over the TS SDK, over the C+Lua floor, over
// the C floor) are taken per round, between runs made side by side, because
// on a shared machine only those are comparable; the tables show the median
// and min–max of each.
//
// Usage: node bench/summarize.mjs RUNS.jsonl OUT.json
import { readFileSync, writeFileSync } from "node:fs";
import { cpus } from "node:os";
import { fmtRatio, fmtStats, printTable, stats } from "./stats.mjs";

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

const samples = (server, m) =>
  good.filter((r) => r.server === server && (m.w === undefined || r.w === m.w)).map((r) => r[m.field]);

// The ratios: luamcp over each of these, when both ran.
const pairs = [
  { key: "luamcp/ts", other: "ts" },
  { key: "luamcp/ts2", other: "ts2" },
  { key: "luamcp/floor-lua", other: "floor-lua" },
  { key: "luamcp/floor-c", other: "floor-c" },
  // issue 23: luamcp without the feature over luamcp with it (above 1: the feature costs)
  { key: "none/metrics", other: "luamcp-metrics" },
  { key: "none/otlp", other: "luamcp-otlp" },
  { key: "none/otlp 1 %", other: "luamcp-otlp1" },
  { key: "none/middleware", other: "luamcp-mw" },
].filter((p) => servers.includes("luamcp") && servers.includes(p.other));

// Pair luamcp's runs with the other's from the same round at the same width.
const pairedRatios = (m, other) => {
  const out = [];
  for (const a of good.filter((r) => r.server === "luamcp" && (m.w === undefined || r.w === m.w))) {
    const b = good.find((r) => r.server === other && r.round === a.round && r.w === a.w);
    if (b && b[m.field] > 0) out.push(a[m.field] / b[m.field]);
  }
  return out;
};

const summary = {};
const ratios = {}; // ratios[pair][metric]
for (const m of metrics) {
  summary[m.key] = Object.fromEntries(servers.map((s) => [s, stats(samples(s, m))]));
  for (const p of pairs) {
    const st = stats(pairedRatios(m, p.other));
    if (st) (ratios[p.key] ??= {})[m.key] = { ...st, better: m.higherIsBetter ? "above 1" : "below 1" };
  }
}

// {====== the table
console.log("Each server: median (min–max) over rounds. floor-lua = bare C + Lua + lua-cjson loop,");
console.log("floor-c = bare C, canned replies (bench/floor/).");
printTable(
  ["metric", ...servers],
  metrics.map((m) => [m.label, ...servers.map((s) => fmtStats(summary[m.key][s]))]),
);
if (pairs.length) {
  console.log();
  console.log("Ratios: luamcp / the other, per round (same round, same W), then median (min–max).");
  printTable(
    ["metric", ...pairs.map((p) => `${p.key} per round`), "good if"],
    metrics.map((m) => [
      m.label,
      ...pairs.map((p) => fmtStats(ratios[p.key]?.[m.key], fmtRatio)),
      m.higherIsBetter ? "above 1" : "below 1",
    ]),
  );
}
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
