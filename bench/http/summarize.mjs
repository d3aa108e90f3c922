// Turns the raw runs of bench/http/run.sh (one JSON object per line: wrk
// loads, RSS readings, session curves, each tagged with server and round)
// into the comparison table on stdout and bench/results/http.json.
// Ratios are taken per round, between runs made side by side (seconds
// apart), because on a shared machine only those are comparable; the table
// shows the median and min–max over rounds of each number and each ratio.
//
// Usage: node bench/http/summarize.mjs RUNS.jsonl OUT.json
import { readFileSync, writeFileSync } from "node:fs";
import { cpus } from "node:os";
import { fmtRatio, fmtStats, printTable, stats } from "../stats.mjs";

const [runsPath, outPath] = process.argv.slice(2);
if (!runsPath || !outPath) {
  console.error("usage: node bench/http/summarize.mjs RUNS.jsonl OUT.json");
  process.exit(2);
}

const runs = readFileSync(runsPath, "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l));
const known = ["luamcp-sl", "luamcp-sf", "ts-sl", "ts-sf", "ts-express", "floor", "ts2",
  "luamcp-modern", "ts2-modern", "luamcp-mrtr", "luamcp-mrtr-rt", "ts2-mrtr", "ts2-mrtr-rt", "luamcp-auth",
  "ts2-auth", "luamcp-metrics", "luamcp-otlp", "luamcp-otlp1", "luamcp-mw"];
const servers = known.filter((s) => runs.some((r) => r.server === s));
const rounds = [...new Set(runs.map((r) => r.round))].sort((a, b) => a - b);
const sessionCounts = [
  ...new Set(runs.filter((r) => r.kind === "sessions").flatMap((r) => r.points.map((p) => p.sessions))),
]
  .filter((n) => n > 0)
  .sort((a, b) => a - b);

// {====== metrics: how to read one number of one server in one round
const load = (server, round, c) =>
  runs.find((r) => r.kind === "load" && r.status === "ok" && r.server === server && r.round === round && r.c === c);
const rss = (server, round) => runs.find((r) => r.kind === "rss" && r.server === server && r.round === round);
const curve = (server, round) => runs.find((r) => r.kind === "sessions" && r.server === server && r.round === round);
const rssAt = (server, round, n) => curve(server, round)?.points.find((p) => p.sessions === n)?.rss_kb;
const MiB = (kb) => (kb === undefined ? undefined : kb / 1024);

const metrics = [];
for (const c of [1, 16]) {
  metrics.push(
    { key: `c${c}_rps`, label: `c=${c} req/s`, get: (s, r) => load(s, r, c)?.rps, higherIsBetter: true },
    { key: `c${c}_p50_us`, label: `c=${c} p50 µs`, get: (s, r) => load(s, r, c)?.p50_us },
    { key: `c${c}_p99_us`, label: `c=${c} p99 µs`, get: (s, r) => load(s, r, c)?.p99_us },
  );
}
metrics.push(
  { key: "idle_rss_mib", label: "idle RSS MiB", get: (s, r) => MiB(rss(s, r)?.idle_rss_kb) },
  { key: "peak_rss_mib", label: "peak RSS MiB", get: (s, r) => MiB(rss(s, r)?.peak_rss_kb) },
);
for (const n of sessionCounts)
  metrics.push({ key: `rss_${n}_sessions_mib`, label: `RSS, ${n} session${n === 1 ? "" : "s"} MiB`, get: (s, r) => MiB(rssAt(s, r, n)) });
if (sessionCounts.length >= 2) {
  const [lo, hi] = [sessionCounts[0], sessionCounts.at(-1)];
  metrics.push({
    key: "kb_per_session",
    label: `kB/session (${lo}→${hi})`,
    get: (s, r) => {
      const a = rssAt(s, r, lo);
      const b = rssAt(s, r, hi);
      return a === undefined || b === undefined ? undefined : (b - a) / (hi - lo);
    },
  });
}
// }======

// {====== statistics (stats(): median, min, max, n over rounds, from ../stats.mjs)
const pairs = [
  { key: "luamcp/ts stateless", a: "luamcp-sl", b: "ts-sl" },
  { key: "luamcp/ts stateful", a: "luamcp-sf", b: "ts-sf" },
  { key: "luamcp/ts-express", a: "luamcp-sl", b: "ts-express" },
  { key: "luamcp/floor", a: "luamcp-sl", b: "floor" },
  // the ceiling of any civetweb server against the SDK: at c=1 the round
  // trip, not the server, sets the pace
  { key: "floor/ts stateless", a: "floor", b: "ts-sl" },
  // the TypeScript SDK v2 (createMcpHandler): 2025 era (stateless legacy
  // fallback) and 2026-07-28 (stateless, enveloped)
  { key: "luamcp/ts2 2025", a: "luamcp-sl", b: "ts2" },
  { key: "luamcp/ts2 modern", a: "luamcp-modern", b: "ts2-modern" },
  // what the 2026-07-28 era costs luamcp against its 2025 stateless leg
  { key: "modern/2025 luamcp", a: "luamcp-modern", b: "luamcp-sl" },
  // what a bearer JWT on every request costs (--auth-resource; issue 22: within 10 %)
  { key: "auth/none luamcp modern", a: "luamcp-auth", b: "luamcp-modern" },
  { key: "luamcp auth/ts2 modern", a: "luamcp-auth", b: "ts2-modern" },
  // the same token through the TypeScript SDK v2's requireBearerAuth (target: >= 10x at c=16)
  { key: "luamcp/ts2 auth", a: "luamcp-auth", b: "ts2-auth" },
  { key: "auth/none ts2 modern", a: "ts2-auth", b: "ts2-modern" },
  // what observability costs (issue 23: metrics <= 2 %, traces <= 10 % all sampled, <= 2 % at 1 %, middleware <= 3 %)
  { key: "metrics/none", a: "luamcp-metrics", b: "luamcp-modern" },
  { key: "otlp/none", a: "luamcp-otlp", b: "luamcp-modern" },
  { key: "otlp 1 %/none", a: "luamcp-otlp1", b: "luamcp-modern" },
  { key: "middleware/none", a: "luamcp-mw", b: "luamcp-modern" },
].filter((p) => servers.includes(p.a) && servers.includes(p.b));

const summary = {};
const ratios = {};
for (const m of metrics) {
  summary[m.key] = Object.fromEntries(servers.map((s) => [s, stats(rounds.map((r) => m.get(s, r)))]));
  for (const p of pairs) {
    const st = stats(
      rounds.map((r) => {
        const a = m.get(p.a, r);
        const b = m.get(p.b, r);
        return a !== undefined && b > 0 ? a / b : undefined;
      }),
    );
    if (st) (ratios[p.key] ??= {})[m.key] = { ...st, better: m.higherIsBetter ? "above 1" : "below 1" };
  }
}

// The MRTR round trip against a plain call, per server and round: cost is
// time per unit of work, so (2 requests / rt req/s) / (1 / plain req/s) =
// 2 × plain req/s / rt req/s (both runs alternate two requests through the
// same wrk hook, on the same server process).
const mrtr = {};
for (const [who, plain] of [["luamcp", "luamcp-mrtr"], ["ts2", "ts2-mrtr"]]) {
  if (!servers.includes(plain) || !servers.includes(`${plain}-rt`)) continue;
  for (const c of [1, 16]) {
    const st = stats(
      rounds.map((r) => {
        const a = load(plain, r, c)?.rps;
        const b = load(`${plain}-rt`, r, c)?.rps;
        return a !== undefined && b > 0 ? (2 * a) / b : undefined;
      }),
    );
    if (st) (mrtr[who] ??= {})[`c${c}_cost`] = { ...st, better: "below 2" };
  }
}

// The targets of issues 7 and 12 that this benchmark measures (on the medians).
const targets = [
  { pair: "luamcp/ts stateless", metric: "c1_rps", op: ">=", value: 10, text: "c=1 req/s ≥ 10× the TS SDK (stateless)" },
  { pair: "luamcp/ts stateless", metric: "c16_rps", op: ">=", value: 10, text: "c=16 req/s ≥ 10× the TS SDK (stateless)" },
  { pair: "luamcp/ts-express", metric: "c1_rps", op: ">=", value: 10, text: "c=1 req/s ≥ 10× the TS SDK in express (stateless)" },
  { pair: "luamcp/ts-express", metric: "c16_rps", op: ">=", value: 10, text: "c=16 req/s ≥ 10× the TS SDK in express (stateless)" },
  { pair: "luamcp/floor", metric: "c1_rps", op: ">=", value: 0.7, text: "c=1 req/s ≥ 70 % of the civetweb floor" },
  { pair: "luamcp/floor", metric: "c16_rps", op: ">=", value: 0.7, text: "c=16 req/s ≥ 70 % of the civetweb floor" },
  { pair: "luamcp/ts stateless", metric: "c1_p99_us", op: "<=", value: 0.2, text: "c=1 p99 ≤ 1/5 of the TS SDK's (stateless)" },
  { pair: "luamcp/ts stateless", metric: "c16_p99_us", op: "<=", value: 0.2, text: "c=16 p99 ≤ 1/5 of the TS SDK's (stateless)" },
  { pair: "luamcp/ts2 modern", metric: "c1_rps", op: ">=", value: 10, text: "c=1 req/s ≥ 10× the TS SDK v2 (2026-07-28)" },
  { pair: "luamcp/ts2 modern", metric: "c16_rps", op: ">=", value: 10, text: "c=16 req/s ≥ 10× the TS SDK v2 (2026-07-28)" },
  { pair: "luamcp/ts2 modern", metric: "c1_p99_us", op: "<=", value: 0.2, text: "c=1 p99 ≤ 1/5 of the TS SDK v2's (2026-07-28)" },
  { pair: "luamcp/ts2 modern", metric: "c16_p99_us", op: "<=", value: 0.2, text: "c=16 p99 ≤ 1/5 of the TS SDK v2's (2026-07-28)" },
  { mrtr: "luamcp", metric: "c1_cost", op: "<=", value: 2, text: "c=1 MRTR round trip ≤ 2× a plain call (luamcp)" },
  { mrtr: "luamcp", metric: "c16_cost", op: "<=", value: 2, text: "c=16 MRTR round trip ≤ 2× a plain call (luamcp)" },
].map((t) => {
  const st = t.mrtr ? mrtr[t.mrtr]?.[t.metric] : ratios[t.pair]?.[t.metric];
  const holds = st ? (t.op === ">=" ? st.median >= t.value : st.median <= t.value) : null;
  return { ...t, ratio: st ?? null, holds };
});
// }======

// {====== the table: one row per metric, the servers, then the ratios
const shown = (cells) => cells.slice(1).some((c) => c !== "—");
console.log("Each server: median (min–max) over rounds. sl = stateless, sf = stateful (one session),");
console.log("ts-express = ts-sl hosted in the SDK's createMcpExpressApp(), floor = bare civetweb, canned reply.");
printTable(
  ["metric", ...servers],
  metrics.map((m) => [m.label, ...servers.map((s) => fmtStats(summary[m.key][s]))]).filter(shown),
);
console.log();
console.log("Ratios: luamcp / the other, per round (same round), then median (min–max). luamcp is");
console.log("luamcp-sl, except luamcp-sf in 'luamcp/ts stateful'. req/s good above 1; the rest below 1.");
printTable(
  ["metric", ...pairs.map((p) => p.key)],
  metrics.map((m) => [m.label, ...pairs.map((p) => fmtStats(ratios[p.key]?.[m.key], fmtRatio))]).filter(shown),
);
if (Object.keys(mrtr).length) {
  console.log();
  console.log("MRTR round trip (ask: input_required, then the retry) / a plain echo call, cost per round");
  console.log("trip over cost per call (2 × plain req/s / round-trip req/s): median (min–max).");
  printTable(
    ["load", ...Object.keys(mrtr)],
    [1, 16].map((c) => [`c=${c}`, ...Object.keys(mrtr).map((w) => fmtStats(mrtr[w][`c${c}_cost`], fmtRatio))]),
  );
}
console.log();
for (const t of targets) {
  const verdict = t.holds === null ? "not measured" : t.holds ? "holds" : "MISSED";
  console.log(`target ${t.text}: ${t.ratio ? fmtStats(t.ratio, fmtRatio) : "—"}  ${verdict}`);
}
const loads = runs.filter((r) => r.kind === "load");
const failed = loads.filter((r) => r.status !== "ok").length;
console.log(
  `${loads.length - failed} wrk runs ok, ${failed} failed, ${rounds.length} round(s), ${cpus().length} cores`,
);
// }======

writeFileSync(
  outPath,
  JSON.stringify(
    {
      date: new Date().toISOString(),
      cores: cpus().length,
      node: process.version,
      servers,
      summary,
      ratios,
      mrtr,
      targets,
      runs,
    },
    null,
    2,
  ) + "\n",
);
process.exit(failed ? 1 : 0);
