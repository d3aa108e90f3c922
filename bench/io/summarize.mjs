// Turns the raw runs of bench/io/run.sh (one JSON object per line: a stdio
// run of stdio_load or an HTTP run of wrk, each with the upstream's own
// counts, tagged with transport, server, calls in flight and round) into the
// tables on stdout and bench/results/io.json. Ratios luamcp / the TS SDK are
// taken per round, between runs made side by side; each figure is the
// median (min–max) over rounds.
//
// Usage: node bench/io/summarize.mjs RUNS.jsonl OUT.json [UPSTREAM_CHECK_JSON]
import { readFileSync, writeFileSync } from "node:fs";
import { cpus } from "node:os";
import { fmtNum, fmtRatio, fmtStats, printTable, stats } from "../stats.mjs";

const [runsPath, outPath, checkArg] = process.argv.slice(2);
if (!runsPath || !outPath) {
  console.error("usage: node bench/io/summarize.mjs RUNS.jsonl OUT.json [UPSTREAM_CHECK_JSON]");
  process.exit(2);
}
const runs = readFileSync(runsPath, "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l));
let upstreamCheck = null;
try {
  upstreamCheck = checkArg ? JSON.parse(checkArg) : null;
} catch {}
const ok = (r) => r.run_status === "ok" && (r.transport !== "stdio" || r.status === "ok");
const known = ["luamcp", "ts", "ts-handler"];
const servers = known.filter((s) => runs.some((r) => r.server === s));
const rounds = [...new Set(runs.map((r) => r.round))].sort((a, b) => a - b);
const delayMs = runs[0]?.delay_ms ?? 50;

// The load levels: stdio at each N, then HTTP at each c.
const levels = [];
for (const transport of ["stdio", "http"])
  for (const n of [...new Set(runs.filter((r) => r.transport === transport).map((r) => r.inflight))].sort((a, b) => a - b))
    levels.push({ key: `${transport}_${n}`, label: `${transport} N=${n}`, transport, n });

const run = (level, server, round) =>
  runs.find((r) => ok(r) && r.transport === level.transport && r.inflight === level.n && r.server === server && r.round === round);
const ms = (us) => (typeof us === "number" ? us / 1000 : undefined);
const metrics = [
  { key: "rps", label: "req/s", get: (r) => r?.rps, higherIsBetter: true },
  { key: "p50_ms", label: "p50 ms", get: (r) => ms(r?.p50_us) },
  { key: "p99_ms", label: "p99 ms", get: (r) => ms(r?.p99_us) },
  { key: "added_p99_ms", label: `added p99 ms (p99 − ${delayMs})`, get: (r) => (r?.p99_us === undefined ? undefined : r.p99_us / 1000 - delayMs) },
  { key: "peak_rss_mib", label: "peak RSS MiB", get: (r) => (r?.peak_rss_kb > 0 ? r.peak_rss_kb / 1024 : undefined) },
  { key: "upstream_p99_ms", label: "upstream's own p99 ms", get: (r) => ms(r?.upstream?.p99_us), info: true },
  { key: "upstream_conns", label: "connections to upstream", get: (r) => r?.upstream?.connections_opened, info: true },
];
const ratioMetrics = metrics.filter((m) => ["rps", "p99_ms", "peak_rss_mib"].includes(m.key));
const pairs = servers.filter((s) => s !== "luamcp" && servers.includes("luamcp")).map((o) => ({ key: `luamcp/${o}`, other: o }));

const summary = {}; // summary[level][metric][server]
const ratios = {}; // ratios[pair][level][metric]
for (const L of levels) {
  summary[L.key] = {};
  for (const m of metrics)
    summary[L.key][m.key] = Object.fromEntries(servers.map((s) => [s, stats(rounds.map((r) => m.get(run(L, s, r))))]));
  for (const p of pairs)
    for (const m of ratioMetrics) {
      const xs = rounds.map((r) => {
        const a = m.get(run(L, "luamcp", r));
        const b = m.get(run(L, p.other, r));
        return a !== undefined && b > 0 ? a / b : undefined;
      });
      const st = stats(xs);
      if (st) ((ratios[p.key] ??= {})[L.key] ??= {})[m.key] = { ...st, better: m.higherIsBetter ? "above 1" : "below 1" };
    }
}

// The targets of issue 11, against the TS SDK (`ts`).
const targets = [];
const judge = (metric, value, op, limit) => {
  const holds = value ? (op === ">=" ? value.median >= limit : value.median <= limit) : null;
  targets.push({ metric, value, target: `${op === ">=" ? "≥" : "≤"} ${limit}`, holds });
};
for (const L of levels) judge(`req/s luamcp/ts, ${L.label}`, ratios["luamcp/ts"]?.[L.key]?.rps ?? null, ">=", 1);
const big = levels.find((L) => L.transport === "stdio" && L.n === 1000);
if (big) judge("added p99 ms, luamcp, stdio N=1000", summary[big.key].added_p99_ms.luamcp ?? null, "<=", 2);
for (const L of levels) judge(`peak RSS luamcp/ts, ${L.label}`, ratios["luamcp/ts"]?.[L.key]?.peak_rss_mib ?? null, "<=", 0.2);

// {====== the tables
const fmt = (x) => (Math.abs(x) < 10 ? x.toFixed(2) : fmtNum(x));
console.log(`Each server: median (min–max) over ${rounds.length} round(s); the upstream answers after ${delayMs} ms.`);
printTable(
  ["load", "metric", ...servers],
  levels.flatMap((L) => metrics.map((m) => [L.label, m.label, ...servers.map((s) => fmtStats(summary[L.key][m.key][s], fmt))])),
);
if (pairs.length) {
  console.log();
  console.log("Ratios: luamcp / the other, per round (same round, same load), then median (min–max).");
  printTable(
    ["load", "metric", ...pairs.map((p) => `${p.key} per round`), "good if"],
    levels.flatMap((L) =>
      ratioMetrics.map((m) => [L.label, m.label, ...pairs.map((p) => fmtStats(ratios[p.key]?.[L.key]?.[m.key], fmtRatio)),
        m.higherIsBetter ? "above 1" : "below 1"]),
    ),
  );
}
console.log();
console.log("Targets (issue 11), on the median:");
printTable(
  ["metric", "measured", "target", "verdict"],
  targets.map((t) => [t.metric, fmtStats(t.value, fmt), t.target, t.holds === null ? "not measured" : t.holds ? "holds" : "MISSED"]),
);
if (upstreamCheck?.wrk)
  console.log(`upstream alone at ${upstreamCheck.connections} connections (wrk): ${fmtNum(upstreamCheck.wrk.rps)} req/s, ` +
    `p99 ${fmt(upstreamCheck.wrk.p99_us / 1000)} ms (its own: ${fmt((upstreamCheck.upstream?.p99_us ?? NaN) / 1000)} ms)`);
const failed = runs.filter((r) => !ok(r)).length;
console.log(`${runs.length - failed} runs ok, ${failed} failed, ${cpus().length} cores`);
// }======

writeFileSync(
  outPath,
  JSON.stringify(
    { date: new Date().toISOString(), cores: cpus().length, node: process.version, delay_ms: delayMs, servers,
      levels: levels.map((L) => L.key), upstream_check: upstreamCheck, summary, ratios, targets, runs },
    null,
    2,
  ) + "\n",
);
process.exit(failed ? 1 : 0);
