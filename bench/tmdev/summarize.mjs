// summarize.mjs — the tables of bench/tmdev/run.sh from its runs (one JSON
// line each), and bench/results/tmdev.json.
//   node bench/tmdev/summarize.mjs RUNS.jsonl OUT.json VUS THINK_MS
// Each figure is the median over rounds (min–max). The ratios luamcp/ts are
// taken per round (the two runs seconds apart), then their median. The
// transitive estimate multiplies the req/s ratio by the published node
// figure: it assumes our ts server stands where the published node one
// does, which nothing here measures — hence "transitive".
import fs from "node:fs";
import os from "node:os";
import { stats, fmtStats, fmtNum, fmtRatio, printTable } from "../stats.mjs";

const [runsFile, outFile, vus, think] = process.argv.slice(2);
const runs = fs.readFileSync(runsFile, "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l));
const PUBLISHED = { rust: 4845, go: 3616, bun: 876, node: 423, python: 259 }; // req/s, TM Dev Lab v2, 2 vCPU per server

const servers = [...new Set(runs.map((r) => r.server))];
const of = (s) => runs.filter((r) => r.server === s);
const field = (s, f, scale = 1) => stats(of(s).map((r) => (r[f] == null ? NaN : r[f] * scale)));
const summary = {};
for (const s of servers) {
  summary[s] = {
    calls_per_s: field(s, "calls_per_s"), http_per_s: field(s, "http_per_s"),
    p50_ms: field(s, "p50_ms"), p99_ms: field(s, "p99_ms"), iter_p50_ms: field(s, "iter_p50_ms"),
    rss_mib: field(s, "rss_kib", 1 / 1024), peak_rss_mib: field(s, "hwm_kib", 1 / 1024),
    cpu_s_per_1k: field(s, "cpu_s_per_1k"), errors: of(s).reduce((n, r) => n + r.errors, 0),
    procs: of(s)[0]?.procs,
  };
}

console.log(`\nbench/tmdev: ${vus} users, ${think} ms think time; median (min–max) over rounds`);
printTable(["server", "tool calls/s", "HTTP req/s", "p50 ms", "p99 ms", "RSS MiB", "peak RSS MiB", "CPU s / 1k calls", "errors"],
  servers.map((s) => {
    const x = summary[s];
    return [s, fmtStats(x.calls_per_s), fmtStats(x.http_per_s), fmtStats(x.p50_ms), fmtStats(x.p99_ms),
      fmtStats(x.rss_mib), fmtStats(x.peak_rss_mib), fmtStats(x.cpu_s_per_1k), String(x.errors)];
  }));

// per-round ratios of every luamcp variant against ts
const ratios = {};
const perRound = (s, f) => stats(of(s).map((r) => {
  const t = runs.find((x) => x.server === "ts" && x.round === r.round);
  return t && r[f] != null && t[f] ? r[f] / t[f] : NaN;
}));
if (servers.includes("ts")) {
  const rows = [];
  for (const s of servers.filter((x) => x !== "ts")) {
    const q = perRound(s, "calls_per_s");
    const est = q && { median: q.median * PUBLISHED.node, min: q.min * PUBLISHED.node, max: q.max * PUBLISHED.node, n: q.n };
    ratios[s] = {
      calls_per_s: q, p50_ms: perRound(s, "p50_ms"), p99_ms: perRound(s, "p99_ms"),
      cpu_s_per_1k: perRound(s, "cpu_s_per_1k"), rss_kib: perRound(s, "rss_kib"),
      transitive_req_s: est,
      transitive_vs_rust: est && { median: est.median / PUBLISHED.rust, min: est.min / PUBLISHED.rust, max: est.max / PUBLISHED.rust },
      transitive_vs_go: est && { median: est.median / PUBLISHED.go, min: est.min / PUBLISHED.go, max: est.max / PUBLISHED.go },
    };
    const x = ratios[s];
    rows.push([`${s}/ts`, fmtStats(x.calls_per_s, fmtRatio), fmtStats(x.p50_ms, fmtRatio), fmtStats(x.p99_ms, fmtRatio),
      fmtStats(x.rss_kib, fmtRatio), fmtStats(x.cpu_s_per_1k, fmtRatio), fmtStats(est),
      fmtStats(x.transitive_vs_rust, fmtRatio), fmtStats(x.transitive_vs_go, fmtRatio)]);
  }
  console.log("\nper-round ratios (req/s above 1: luamcp faster; the others below 1: luamcp lower)");
  printTable(["ratio", "req/s", "p50", "p99", "RSS", "CPU/call",
    `transitive req/s (× node ${PUBLISHED.node})`, `÷ rust ${PUBLISHED.rust}`, `÷ go ${PUBLISHED.go}`], rows);
  console.log("transitive: our ratio times the published node figure, as if our ts server stood where the");
  console.log("published node server does; a placement estimate, not a measurement.");
}
if (Number(think) > 0) {
  const ceiling = Number(vus) * 1000 / Number(think);
  console.log(`ceiling: ${vus} users × 1 call per (${think} ms + an iteration) is < ${fmtNum(ceiling)} calls/s whatever the server;`);
  console.log("a server near it is held by the think time, and the ratios then understate the gap (see bench/README.md).");
}

const loads = runs.map((r) => `${r.load_before}`);
fs.writeFileSync(outFile, JSON.stringify({
  date: new Date().toISOString(), cores: os.cpus().length, node: process.version, vus: Number(vus), think_ms: Number(think),
  published: PUBLISHED, load_first: loads[0], load_last: runs.at(-1)?.load_after, summary, ratios, runs,
}, null, 1) + "\n");
console.log(`wrote ${outFile}`);
