// The one table of `make bench`: reads whichever results the benchmarks
// wrote (bench/results/{stdio,http,reload,scale,io,before_after,soak}.json),
// prints every target of issues 7 and 11 with the measured value (median and min–max over rounds), the
// target and whether it holds, then writes bench/results/latest.json. It
// measures nothing itself; a missing file only drops its rows.
//
// A target is judged on the median of per-round ratios (runs made side by
// side) or, for absolute figures (ms, MiB), on the median over rounds. A `~`
// after the verdict says the min–max spread crosses the target: some rounds
// went the other way, so more rounds are needed to be sure.
//
// Usage: node bench/report.mjs [RESULTS_DIR]   (default bench/results)
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { cpus } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const dir = path.resolve(process.argv[2] ?? path.join(root, "bench/results"));
const rel = (p) => path.relative(process.cwd(), p) || p;

// {====== sources
const sourceNames = ["stdio", "http", "reload", "scale", "io", "before_after", "soak"];
const sources = {};
const data = {};
for (const name of sourceNames) {
  const file = path.join(dir, `${name}.json`);
  if (!existsSync(file)) {
    sources[name] = null;
    continue;
  }
  try {
    data[name] = JSON.parse(readFileSync(file, "utf8"));
    sources[name] = { path: rel(file), date: data[name].date ?? data[name].when ?? null };
  } catch (e) {
    console.error(`report: cannot read ${rel(file)}: ${e.message}`);
    sources[name] = { path: rel(file), date: null, error: e.message };
  }
}
// }======

// {====== rows
const rows = [];
const MiB = (kb) => kb / 1024;
const scale = (st, f) => (st ? { median: f(st.median), min: f(st.min), max: f(st.max), n: st.n } : null);

// One target row. value: {median, min, max, n} or null (not measured);
// op/limit: the target (null for an info row).
const add = (area, metric, value, unit, op, limit, detail, source) => {
  if (value) value = { median: value.median, min: value.min, max: value.max, n: value.n };
  let holds = null;
  let straddles = false;
  if (op && value) {
    const ok = (x) => (op === ">=" ? x >= limit : x <= limit);
    holds = ok(value.median);
    straddles = ok(value.min) !== ok(value.max);
  }
  const target = op ? `${op === ">=" ? "≥" : "≤"} ${limit}${unit === "×" ? "×" : ` ${unit}`}` : null;
  rows.push({ area, metric, value, unit, target, op: op ?? null, limit: limit ?? null, holds, straddles, detail, source });
};

// The rows of one per-round ratio at each load level of a benchmark: with
// levels [["W=1", "w1"], ["W=32", "w32"]], "req/s W=1, luamcp/ts" from
// ratio(pair, "w1_rps"), then the same at W=32. limit and detail: one for
// every level, or an array of one per level.
const ratioRows = (ratio, levels, src) => (area, what, who, pair, field, op, limit, detail) => {
  const at = (x, i) => (Array.isArray(x) ? x[i] : x);
  levels.forEach(([label, key], i) =>
    add(area, `${what} ${label}, ${who}`, ratio(pair, `${key}_${field}`), "×", op, at(limit, i), at(detail, i), src));
};

if (data.stdio) {
  const d = data.stdio;
  const src = sources.stdio.path;
  // Before bench/run.sh knew the floors, ratios held luamcp/ts directly.
  const r = d.ratios?.["luamcp/ts"] ? d.ratios : { "luamcp/ts": d.ratios ?? {} };
  const ratio = (pair, key) => r[pair]?.[key] ?? null;
  const sum = (key, server, f = (x) => x) => scale(d.summary?.[key]?.[server], f);
  const addRatios = ratioRows(ratio, [["W=1", "w1"], ["W=32", "w32"]], src);
  addRatios("stdio", "req/s", "luamcp/ts", "luamcp/ts", "rps", ">=", [3.5, 10], ["echo tool, 1 in flight", "echo tool, 32 in flight"]);
  addRatios("stdio", "p99", "luamcp/ts", "luamcp/ts", "p99_us", "<=", 0.25, "p99 ≤ 1/4 of the TS SDK's");
  if (ratio("luamcp/ts2", "w1_rps"))
    addRatios("stdio", "req/s", "luamcp/ts2", "luamcp/ts2", "rps", null, null, "the TS SDK v2's serveStdio, 2025 initialize");
  addRatios("floor", "req/s", "luamcp/floor-lua", "luamcp/floor-lua", "rps", ">=", 0.7, "bare C + Lua + lua-cjson NDJSON loop");
  if (ratio("luamcp/floor-c", "w1_rps"))
    addRatios("floor", "req/s", "luamcp/floor-c", "luamcp/floor-c", "rps", null, null, "bare C, canned replies");
  const gifts = d.summary?.startup_ms?.gifts;
  add(
    "start-up",
    `start-up to initialize reply, ${gifts ? "gift app" : "echo app"}`,
    gifts ? scale(gifts, (x) => x) : sum("startup_ms", "luamcp"),
    "ms",
    "<=",
    15,
    gifts
      ? "luamcp serve . (the gift app)"
      : "luamcp serve bench/apps/echo: the gift app was not run (BENCH_SERVERS=\"... gifts\")",
    src,
  );
  for (const [server, app] of [["luamcp", "echo app"], ["gifts", "gift app"]]) {
    if (server === "gifts" && !gifts) continue;
    add("memory", `idle RSS, stdio, ${app}`, sum("idle_rss_kb", server, MiB), "MiB", "<=", 4, "VmRSS 200 ms after initialized", src);
    add("memory", `peak RSS, stdio W=1, ${app}`, sum("w1_peak_rss_kb", server, MiB), "MiB", "<=", 16, "VmHWM after the W=1 run", src);
    add("memory", `peak RSS, stdio W=32, ${app}`, sum("w32_peak_rss_kb", server, MiB), "MiB", "<=", 16, "VmHWM after the W=32 run", src);
  }
}

if (data.http) {
  const d = data.http;
  const src = sources.http.path;
  const ratio = (pair, key) => d.ratios?.[pair]?.[key] ?? null;
  const sum = (key, server) => scale(d.summary?.[key]?.[server], (x) => x);
  const addRatios = ratioRows(ratio, [["c=1", "c1"], ["c=16", "c16"]], src);
  addRatios("http", "req/s", "luamcp-sl/ts-sl", "luamcp/ts stateless", "rps", ">=", 10, "stateless, keep-alive, wrk");
  addRatios("http", "req/s", "luamcp-sl/floor", "luamcp/floor", "rps", ">=", 0.7, "bare civetweb, canned reply");
  if (ratio("floor/ts stateless", "c1_rps"))
    addRatios("http", "req/s", "floor/ts-sl", "floor/ts stateless", "rps", null, null,
      "the ceiling: a canned civetweb reply against the TS SDK");
  addRatios("http", "p99", "luamcp-sl/ts-sl", "luamcp/ts stateless", "p99_us", "<=", 0.2, "p99 ≤ 1/5 of the TS SDK's");
  // Issue 12: the TypeScript SDK v2 (createMcpHandler) and the 2026-07-28 era.
  addRatios("http", "req/s", "luamcp-modern/ts2-modern", "luamcp/ts2 modern", "rps", ">=", 10,
    "2026-07-28: enveloped tools/call, no session, the three headers");
  addRatios("http", "p99", "luamcp-modern/ts2-modern", "luamcp/ts2 modern", "p99_us", "<=", 0.2, "p99 ≤ 1/5 of the SDK v2's");
  if (ratio("luamcp/ts2 2025", "c1_rps"))
    addRatios("http", "req/s", "luamcp-sl/ts2", "luamcp/ts2 2025", "rps", null, null, "2025 era, the SDK v2's stateless legacy leg (SSE)");
  if (ratio("modern/2025 luamcp", "c1_rps"))
    addRatios("http", "req/s", "luamcp-modern/luamcp-sl", "modern/2025 luamcp", "rps", null, null, "what the 2026-07-28 era costs luamcp");
  for (const [who, op] of [["luamcp", "<="], ["ts2", null]])
    for (const [label, key] of [["c=1", "c1"], ["c=16", "c16"]])
      if (d.mrtr?.[who]?.[`${key}_cost`])
        add("http", `MRTR round trip / plain call ${label}, ${who}`, d.mrtr[who][`${key}_cost`], "×", op, op ? 2 : null,
          "ask (input_required, retry with requestState + inputResponses) vs echo, 2026-07-28", src);
  for (const s of ["luamcp-sl", "luamcp-sf"]) {
    if (!d.summary?.idle_rss_mib?.[s]) continue;
    add("memory", `idle RSS, HTTP ${s}`, sum("idle_rss_mib", s), "MiB", "<=", 4, "VmRSS 200 ms after the first call", src);
    add("memory", `peak RSS, HTTP ${s}`, sum("peak_rss_mib", s), "MiB", "<=", 16, "VmHWM after c=1 and c=16", src);
  }
  const kb = d.summary?.kb_per_session;
  if (kb?.["luamcp-sf"]) {
    const ts = kb["ts-sf"] ? `; ts-sf ${kb["ts-sf"].median.toFixed(1)} kB/session` : "";
    add("memory", "memory per HTTP session, luamcp-sf", sum("kb_per_session", "luamcp-sf"), "kB", null, null, `1 → 1,000 sessions${ts}`, src);
  }
}

if (data.reload) {
  const d = data.reload;
  const src = sources.reload.path;
  // The reload driver gives p50/p99/min/max over its samples, not rounds:
  // the p50 stands in the median column, the p99 is in the detail.
  const pct = (s) => (s ? { median: s.p50, min: s.min, max: s.max, n: s.n } : null);
  const L = d.latency;
  const B = d.big;
  const R = d.rss;
  if (L) {
    const own = d.targets ? `; its own target p99 < 100 ms ${d.targets.latency_p99_under_100ms ? "holds" : "MISSED"}` : "";
    add("reload", `save → list_changed, ${L.scripts} scripts (p50)`, pct(L.ms), "ms", null, null, `p99 ${L.ms.p99.toFixed(1)} ms${own}`, src);
  }
  if (B) {
    add("reload", `reload of ${B.tools} tools, server's figure (p50)`, pct(B.reload_ms), "ms", null, null, `p99 ${B.reload_ms.p99.toFixed(1)} ms`, src);
    add("reload", `save → list_changed, ${B.tools} tools (p50)`, pct(B.save_to_list_changed_ms), "ms", null, null, `p99 ${B.save_to_list_changed_ms.p99.toFixed(1)} ms`, src);
    const one = (x) => ({ median: x, min: x, max: x, n: 1 });
    add("reload", `cold start of the ${B.tools}-tool app`, one(B.start_to_initialize_ms), "ms", null, null, `spawn → initialize reply; RSS ${(B.rss_kb / 1024).toFixed(1)} MiB`, src);
  }
  if (R) {
    const g = R.growth_kb_after_warmup;
    add("reload", `RSS growth over ${R.reloads} reloads`, { median: g, min: g, max: g, n: 1 }, "kB", null, null, `${R.flat ? "flat" : "GROWING"} (limit ${R.flat_limit_kb} kB)`, src);
  }
}

if (data.soak) {
  const d = data.soak;
  const src = sources.soak.path;
  const one = (x) => ({ median: x, min: x, max: x, n: 1 });
  for (const [name, s] of Object.entries(d.servers ?? {})) {
    add("soak", `${name}: replies lost + doubled of ${s.sent}`, one(s.lost + s.doubled), "", "<=", 0, `${s.reloads} reloads, ${s.bad} bad answers; ${d.n} requests in ${d.seconds.toFixed(0)} s over both`, src);
    add("soak", `${name}: RSS, last quarter's median`, one(s.rss_kb.last), "kB", "<=", Math.round(s.rss_kb.limit), `first quarter ${s.rss_kb.first} kB, max ${s.rss_kb.max} kB`, src);
    add("soak", `${name}: open fds, last quarter's median`, one(s.fds.last), "", "<=", Math.round(s.fds.limit), `first quarter ${s.fds.first}, max ${s.fds.max}`, src);
  }
}

if (data.scale) {
  const src = sources.scale.path;
  for (const r of data.scale.rows ?? []) {
    const v = typeof r.value === "number" ? { median: r.value, min: r.value, max: r.value, n: 1 } : null;
    rows.push({
      area: "scale",
      metric: String(r.metric),
      value: v,
      unit: r.unit ?? "",
      target: r.target ?? null,
      op: null,
      limit: null,
      holds: typeof r.holds === "boolean" ? r.holds : null,
      straddles: false,
      detail: r.detail ?? "",
      source: src,
    });
  }
}
// }======

if (data.io) {
  // Issue 11: the fetch tool (one GET to a 50 ms upstream per call), N calls in flight.
  const d = data.io;
  const src = sources.io.path;
  const levels = d.levels ?? [];
  const label = (key) => key.replace("_", " N=");
  const ratio = (key, m) => d.ratios?.["luamcp/ts"]?.[key]?.[m] ?? null;
  for (const key of levels)
    add("io", `req/s luamcp/ts, ${label(key)}`, ratio(key, "rps"), "×", ">=", 1,
      `fetch tool, ${key.split("_")[1]} in flight, ${d.delay_ms} ms upstream`, src);
  if (levels.includes("stdio_1000")) {
    const up = d.summary?.stdio_1000?.upstream_p99_ms?.luamcp;
    add("io", "added p99 over the upstream's delay, luamcp, stdio N=1000", d.summary?.stdio_1000?.added_p99_ms?.luamcp ?? null,
      "ms", "<=", 2, `p99 − ${d.delay_ms} ms${up ? `; the upstream's own p99 ${up.median.toFixed(1)} ms` : ""}`, src);
  }
  for (const key of levels)
    add("io", `peak RSS luamcp/ts, ${label(key)}`, ratio(key, "peak_rss_mib"), "×", "<=", 0.2, "VmHWM after the run", src);
}

if (data.before_after) {
  // Issue 11: the compute-bound figures must not regress by more than 5 %.
  const d = data.before_after;
  const src = sources.before_after.path;
  for (const [key, what] of [
    ["stdio_w1_rps", "stdio W=1"],
    ["stdio_w32_rps", "stdio W=32"],
    ["luamcp-sl_c1_rps", "HTTP luamcp-sl c=1"],
    ["luamcp-sl_c16_rps", "HTTP luamcp-sl c=16"],
    ["luamcp-sf_c1_rps", "HTTP luamcp-sf c=1"],
    ["luamcp-sf_c16_rps", "HTTP luamcp-sf c=16"],
  ]) {
    const m = d.summary?.[key];
    if (!m) continue;
    add("regress", `req/s after/before, ${what}`, m.ratio, "×", ">=", 0.95,
      `before ${m.before ? Math.round(m.before.median) : "—"} req/s: ${d.before ?? "?"}`, src);
  }
}

if (!Object.keys(data).length) {
  console.error(`report: no results in ${rel(dir)}; run the benchmarks first (make bench)`);
  process.exit(1);
}

// {====== the table
const fmtNum = (x) => {
  const a = Math.abs(x);
  return a >= 100 ? Math.round(x).toString() : a >= 10 ? x.toFixed(1) : a >= 0.1 ? x.toFixed(2) : x.toFixed(3);
};
const fmtValue = (r) => {
  if (!r.value) return "—";
  const u = r.unit === "×" ? "×" : r.unit ? ` ${r.unit}` : "";
  const { median, min, max, n } = r.value;
  const spread = n > 1 ? ` (${fmtNum(min)}–${fmtNum(max)})` : "";
  return `${fmtNum(median)}${u}${spread}`;
};
const verdict = (r) => {
  if (r.holds === null) return r.target && !r.value ? "not measured" : r.target ? "—" : "info";
  return (r.holds ? "holds" : "MISSED") + (r.straddles ? " ~" : "");
};

const table = [["area", "metric", "measured: median (min–max)", "target", "verdict", "notes"]];
for (const r of rows) table.push([r.area, r.metric, fmtValue(r), r.target ?? "", verdict(r), r.detail ?? ""]);
const widths = table[0].map((_, i) => Math.max(...table.map((row) => row[i].length)));
const line = (cells) => cells.map((c, i) => c.padEnd(widths[i])).join("  ").trimEnd();

console.log(`issue 7 and 11 targets (${cpus().length} cores, node ${process.version}); ratios are luamcp / the other, per round`);
for (const name of sourceNames) {
  const s = sources[name];
  if (!s) console.log(`  ${name}: no ${rel(path.join(dir, `${name}.json`))}, its rows are left out`);
  else console.log(`  ${name}: ${s.path}${s.date ? ` (${s.date})` : ""}${s.error ? ` unreadable: ${s.error}` : ""}`);
}
console.log();
console.log(line(table[0]));
console.log(line(widths.map((w) => "-".repeat(w))));
for (const row of table.slice(1)) console.log(line(row));
const judged = rows.filter((r) => r.holds !== null);
const held = judged.filter((r) => r.holds).length;
const notMeasured = rows.filter((r) => r.target && r.holds === null).length;
console.log();
console.log(
  `${held} of ${judged.length} targets hold, ${judged.length - held} missed` +
    (notMeasured ? `, ${notMeasured} not measured` : "") +
    "; ~ = the spread crosses the target (not every round agrees)",
);
// }======

const out = path.join(dir, "latest.json");
writeFileSync(
  out,
  JSON.stringify({ date: new Date().toISOString(), cores: cpus().length, node: process.version, sources, rows }, null, 2) +
    "\n",
);
console.log(`wrote ${rel(out)}`);
