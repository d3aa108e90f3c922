// scale.mjs — the scale curves of issue 7 (see bench/scale/README.md): luamcp
// and the TypeScript SDK side by side as the load grows, not at one point.
//
//   1. tools/list with 10, 1,000 and 10,000 tools: per-page round trip, pages,
//      the whole listing, start-up and RSS (generated apps, over stdio)
//   2. tools/call echo with 1 KB, 100 KB and 5 MB of text: latency, MB/s, peak RSS
//   3. 1, 100 and 1,000 live Streamable HTTP sessions: RSS per session, call latency
//   4. luamcp's RSS over 1,000,000 calls at 32 in flight: flat?
//
// The latency drivers are C (build/bench/scale/scale_client and stdio_load, built by
// run.sh); this file starts servers, runs the drivers, alternates the order of
// luamcp and the TS SDK every round, and turns the runs into medians, a table
// and bench/results/scale.json.
//
// Usage: node bench/scale/scale.mjs OUT.json   (run.sh passes the settings in
// the environment; see run.sh)
import { spawn, execFileSync } from "node:child_process";
import { mkdtempSync, mkdirSync, openSync, closeSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { cpus, loadavg, tmpdir } from "node:os";
import path from "node:path";

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), "../..");
const env = (name, dflt) => process.env[name] ?? dflt;
const nums = (s) => String(s).split(/[\s,]+/).filter(Boolean).map(Number);

const BIN = path.resolve(root, env("LUAMCP_BIN", "build/luamcp"));
const DRIVERS = path.resolve(root, env("SCALE_DRIVERS", "build/bench/scale"));
const ROUNDS = Number(env("SCALE_ROUNDS", 3));
const TOOLS = nums(env("SCALE_TOOLS", "10 1000 10000"));
const LIST_BUDGET_MS = Number(env("SCALE_LIST_BUDGET_MS", 1000));
const LIST_MAX = Number(env("SCALE_LIST_MAX", 3000));
const SIZES = nums(env("SCALE_SIZES", "1024 102400 5242880"));
const CALLS = nums(env("SCALE_CALLS", "2000 200 20"));
const SESSIONS = nums(env("SCALE_SESSIONS", "1 100 1000"));
const MORE = Number(env("SCALE_MORE_CALLS", 10));
const RSS_CALLS = Number(env("SCALE_RSS_CALLS", 1_000_000));
const RSS_EVERY = Number(env("SCALE_RSS_EVERY", 50_000));
const WITH_TS = env("SCALE_TS", "1") !== "0";
const outPath = path.resolve(process.argv[2] || path.join(root, "bench/results/scale.json"));
const NODE = process.execPath;
const TS_MANY = path.join(root, "bench/scale/ts_many_server.mjs");
const TS_ECHO = path.join(root, "bench/ts_echo_server.mjs");
const TS_HTTP = path.join(root, "bench/http/ts_http_server.mjs");
const ECHO_APP = path.join(root, "bench/apps/echo");
if (SIZES.length !== CALLS.length) throw new Error("SCALE_SIZES and SCALE_CALLS differ in length");

// {====== processes we start, and the temp dir: all cleaned up on any exit

const tmp = mkdtempSync(path.join(tmpdir(), "luamcp-scale-"));
const children = new Set();
let cleaned = false;
function cleanup() {
  if (cleaned) return;
  cleaned = true;
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
  rmSync(tmp, { recursive: true, force: true });
}
process.on("exit", cleanup);
for (const sig of ["SIGINT", "SIGTERM", "SIGHUP"])
  process.on(sig, () => {
    console.error(`bench/scale: ${sig}, stopping`);
    cleanup();
    process.exit(130);
  });

/** Runs a driver; resolves with its JSON line (or null) and its stderr. */
function runDriver(file, args, timeoutMs) {
  return new Promise((resolve) => {
    const child = spawn(file, args, { stdio: ["ignore", "pipe", "pipe"] });
    children.add(child);
    let out = "", err = "";
    child.stdout.setEncoding("utf8").on("data", (d) => (out += d));
    child.stderr.setEncoding("utf8").on("data", (d) => (err += d));
    const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      children.delete(child);
      let json = null;
      try {
        json = JSON.parse(out.trim().split("\n").pop());
      } catch {}
      if (!json || code !== 0)
        console.error(`bench/scale: ${path.basename(file)} ${args.slice(0, 3).join(" ")}… failed (${signal ?? `exit ${code}`}):\n${err.trim()}`);
      resolve({ json, err, ok: !!json && code === 0 });
    });
  });
}

function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

/** Starts a long-lived server (HTTP); its stderr goes to a log in the temp dir. */
function startServer(cmd, args, log) {
  const fd = openSync(log, "a");
  const child = spawn(cmd, args, { stdio: ["ignore", "ignore", fd] });
  closeSync(fd);
  children.add(child);
  child.exited = new Promise((resolve) => child.once("exit", resolve));
  return child;
}

async function stopServer(child) {
  if (child.exitCode === null && child.signalCode === null) {
    child.kill("SIGTERM");
    const t = setTimeout(() => child.kill("SIGKILL"), 5000);
    await child.exited;
    clearTimeout(t);
  }
  children.delete(child);
}

// }======

// {====== statistics

const median = (xs) => {
  const v = xs.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  if (!v.length) return null;
  const m = v.length >> 1;
  return v.length % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
};
const spread = (xs) => {
  const v = xs.filter((x) => Number.isFinite(x));
  return v.length ? [Math.min(...v), Math.max(...v)] : [null, null];
};
/** { med, min, max, n } of a metric over rounds. */
const stat = (xs) => {
  const [min, max] = spread(xs);
  return { med: median(xs), min, max, n: xs.filter((x) => Number.isFinite(x)).length };
};
/** Three significant figures or so: 1234, 123, 12.3, 1.23, 0.123. */
const fmt = (x) => {
  if (x === null || x === undefined || !Number.isFinite(x)) return "–";
  const a = Math.abs(x);
  return x.toFixed(a >= 100 || a === 0 ? 0 : a >= 10 ? 1 : a >= 1 ? 2 : 3);
};
const fmtS = (s) => `${fmt(s.med)} [${fmt(s.min)}–${fmt(s.max)}]`;
const kN = (n) => (n >= 1e6 ? `${n / 1e6}M` : n >= 1000 ? `${n / 1000}k` : String(n));
const bytesName = (b) => (b >= 1 << 20 ? `${b / (1 << 20)} MB` : b >= 1024 ? `${b / 1024} KB` : `${b} B`);

// }======

// {====== the servers of each curve

function makeManyApp(n) {
  const dir = path.join(tmp, `tools-${n}`);
  mkdirSync(path.join(dir, "scripts"), { recursive: true });
  writeFileSync(path.join(dir, "app.lua"), `return { name = "scale-${n}", version = "1.0.0" }\n`);
  writeFileSync(
    path.join(dir, "scripts", "many.lua"),
    `local mcp = require "mcp"
for i = 1, ${n} do
  mcp.tool {
    name = string.format("tool_%05d", i),
    description = "Tool number " .. i .. ": echoes the given text back.",
    input = { text = mcp.string { description = "Text to echo" } },
    handler = function(args) return args.text end,
  }
end
`,
  );
  return dir;
}

const impls = WITH_TS ? ["luamcp", "ts"] : ["luamcp"];
const order = (round) => (round % 2 ? impls : [...impls].reverse());

const runs = { list: [], call: [], sessions: [], rss: [] };
let failed = 0;
const SCALE = path.join(DRIVERS, "scale_client");

async function curveList(round) {
  for (const n of TOOLS) {
    const dir = makeManyApp(n);
    for (const impl of order(round)) {
      const cmd = impl === "luamcp" ? [BIN, "serve", "--no-watch", dir] : [NODE, TS_MANY, String(n)];
      const r = await runDriver(SCALE, ["list", "--expect", String(n), "--lists", String(LIST_MAX),
        "--budget-ms", String(LIST_BUDGET_MS), "-s", "60", "--label", `${impl}/${n}`, "--", ...cmd], 90_000);
      if (!r.ok) failed++;
      process.stderr.write(`round ${round}/${ROUNDS}  ${r.err.trim().split("\n").pop()}\n`);
      runs.list.push({ round, impl, tools: n, ...r.json });
    }
  }
}

async function curveCall(round) {
  for (const impl of order(round)) {
    const cmd = impl === "luamcp" ? [BIN, "serve", ECHO_APP] : [NODE, TS_ECHO];
    const r = await runDriver(SCALE, ["call", "--sizes", SIZES.join(","), "--calls", CALLS.join(","),
      "-s", "90", "--label", impl, "--", ...cmd], 120_000);
    if (!r.ok) failed++;
    for (const l of r.err.trim().split("\n").filter((l) => l.startsWith(`${impl}:`)))
      process.stderr.write(`round ${round}/${ROUNDS}  ${l}\n`);
    runs.call.push({ round, impl, ...r.json });
  }
}

async function curveSessions(round) {
  const max = Math.max(...SESSIONS);
  for (const impl of order(round)) {
    let r = null;
    for (let attempt = 0; attempt < 2 && !r?.ok; attempt++) { // a port taken in between: once more
      const port = await freePort();
      const server = impl === "luamcp"
        ? startServer(BIN, ["serve", "--http", `127.0.0.1:${port}`, "--max-sessions", String(2 * max + 100),
            "--max-sessions-per-peer", "0", "--init-rate", "0", ECHO_APP] /* all from 127.0.0.1 */, path.join(tmp, "http.log"))
        : startServer(NODE, [TS_HTTP, "--stateful", String(port)], path.join(tmp, "http.log"));
      r = await runDriver(SCALE, ["sessions", "--port", String(port), "--pid", String(server.pid),
        "--counts", SESSIONS.join(","), "--more", String(MORE), "-s", "90", "--label", impl], 120_000);
      await stopServer(server);
    }
    if (!r.ok) {
      failed++;
      console.error(readFileSync(path.join(tmp, "http.log"), "utf8").split("\n").slice(-10).join("\n"));
    }
    for (const l of r.err.trim().split("\n").filter((l) => l.startsWith(`${impl}:`)))
      process.stderr.write(`round ${round}/${ROUNDS}  ${l}\n`);
    runs.sessions.push({ round, impl, ...r.json });
  }
}

async function curveRss(round) {
  const r = await runDriver(path.join(DRIVERS, "stdio_load"), ["-n", String(RSS_CALLS), "-w", "32",
    "--rss-every", String(RSS_EVERY), "--json", "-q", "-s", "120", "--label", "luamcp", "--", BIN, "serve", ECHO_APP], 150_000);
  if (!r.ok) failed++;
  const s = r.json?.rss_samples ?? [];
  process.stderr.write(`round ${round}/${ROUNDS}  luamcp: ${RSS_CALLS} calls at 32 in flight, ${fmt(r.json?.rps / 1000)}k req/s, ` +
    `VmRSS ${s.filter((x) => [0, 100e3, 250e3, 500e3, 1e6].includes(x.answers)).map((x) => `${kN(x.answers)}:${x.rss_kb}`).join(" ")} kB\n`);
  runs.rss.push({ round, ...r.json });
}

// }======

// {====== rows

const rows = [];
function row(curve, metric, value, unit, target, holds, detail) {
  rows.push({ curve, metric, value: value === null ? null : Number(value.toFixed(value < 10 ? 3 : 1)), unit, target, holds, detail });
}
const pick = (list, pred, f) => list.filter(pred).map(f);
const byRound = (list, pred, f) => {
  const m = new Map();
  for (const r of list.filter(pred)) m.set(r.round, f(r));
  return m;
};
/** Per-round ratios a/b over rounds where both ran. */
const ratios = (a, b) => stat([...a.keys()].filter((k) => b.has(k)).map((k) => a.get(k) / b.get(k)));

function listRows() {
  const ok = (r) => r.status === "ok";
  const perTool = {};
  for (const n of TOOLS) {
    const L = (impl) => runs.list.filter((r) => r.impl === impl && r.tools === n && ok(r));
    const lm = L("luamcp"), ts = L("ts");
    const p50 = stat(lm.map((r) => r.page.p50_us)), p99 = stat(lm.map((r) => r.page.p99_us));
    const mx = stat(lm.map((r) => r.page.max_us));
    const over = lm.reduce((a, r) => a + r.pages_over_1ms, 0), pages = lm.reduce((a, r) => a + r.page.n, 0);
    const nPages = lm[0]?.pages_per_list;
    row("tools/list", `page round trip p99, ${kN(n)} tools (luamcp)`, p99.med, "µs", "< 1000 µs",
      p99.med === null ? null : p99.med < 1000,
      `p99 ${fmt(p99.min)}–${fmt(p99.max)}; p50 ${fmtS(p50)}; max ${fmtS(mx)}; ${over} of ${pages} pages over 1 ms; ` +
      `${nPages} page(s) per listing, ≤ ${fmt((lm[0]?.page_bytes_max ?? 0) / 1024)} KiB each`);
    const lmList = stat(lm.map((r) => r.list.p50_us / 1000)), tsList = stat(ts.map((r) => r.list.p50_us / 1000));
    perTool[n] = { luamcp: lmList.med === null ? null : (lmList.med * 1000) / n, ts: tsList.med === null ? null : (tsList.med * 1000) / n };
    const rat = ratios(byRound(lm, () => true, (r) => r.list.p50_us), byRound(ts, () => true, (r) => r.list.p50_us));
    row("tools/list", `whole listing, ${kN(n)} tools (luamcp)`, lmList.med, "ms", null, null,
      `${fmtS(lmList)} ms; ${nPages} pages; ${fmt(perTool[n].luamcp)} µs/tool; ` +
      (ts.length ? `luamcp/ts per round ${fmtS(rat)}` : "TS SDK not run"));
    if (ts.length) {
      const tp99 = stat(ts.map((r) => r.page.p99_us / 1000));
      row("tools/list", `whole listing, ${kN(n)} tools (TS SDK)`, tsList.med, "ms", null, null,
        `${fmtS(tsList)} ms; one page (the SDK does not paginate), p99 ${fmtS(tp99)} ms; ${fmt(perTool[n].ts)} µs/tool`);
    }
  }
  const [small, big] = [TOOLS.filter((n) => n >= 1000)[0], Math.max(...TOOLS)];
  if (small && big > small) {
    const g = (impl) => (perTool[big][impl] && perTool[small][impl] ? perTool[big][impl] / perTool[small][impl] : null);
    row("tools/list", `µs per tool listed, ${kN(big)} ÷ ${kN(small)} (luamcp)`, g("luamcp"), "×", "≤ 1.2 (linear)",
      g("luamcp") === null ? null : g("luamcp") <= 1.2,
      `${fmt(perTool[small].luamcp)} µs/tool at ${kN(small)}, ${fmt(perTool[big].luamcp)} at ${kN(big)}` +
      (WITH_TS ? `; TS SDK ${fmt(perTool[small].ts)} → ${fmt(perTool[big].ts)} (${fmt(g("ts"))}×)` : ""));
  }
  for (const impl of impls) {
    const L = runs.list.filter((r) => r.impl === impl && r.tools === big && ok(r));
    const name = impl === "ts" ? "TS SDK" : "luamcp";
    const st = stat(L.map((r) => r.startup_ms)), rss = stat(L.map((r) => r.rss_init_kb / 1024));
    const small10 = stat(runs.list.filter((r) => r.impl === impl && r.tools === Math.min(...TOOLS) && ok(r)).map((r) => r.startup_ms));
    row("tools/list", `start-up to initialize reply, ${kN(big)} tools (${name})`, st.med, "ms", null, null,
      `${fmtS(st)} ms; with ${Math.min(...TOOLS)} tools ${fmtS(small10)} ms`);
    const hwm = stat(L.map((r) => r.hwm_kb / 1024));
    row("tools/list", `RSS after start-up, ${kN(big)} tools (${name})`, rss.med, "MiB", null, null,
      `${fmtS(rss)} MiB; peak after the listings ${fmtS(hwm)} MiB`);
  }
}

function callRows() {
  const ok = (r) => r.status === "ok";
  SIZES.forEach((size, i) => {
    const lat = (impl, k) => byRound(runs.call, (r) => r.impl === impl && ok(r), (r) => r.sizes[i].call[k]);
    const lm50 = lat("luamcp", "p50_us"), lm99 = lat("luamcp", "p99_us"), ts50 = lat("ts", "p50_us"), ts99 = lat("ts", "p99_us");
    const unit = size >= 1 << 20 ? "ms" : "µs", div = unit === "ms" ? 1000 : 1;
    const mbps = (m) => stat([...m.values()].map((us) => size / us));
    for (const [impl, p50, p99] of [["luamcp", lm50, lm99], ["ts", ts50, ts99]]) {
      if (!p50.size) continue;
      const s50 = stat([...p50.values()].map((x) => x / div)), s99 = stat([...p99.values()].map((x) => x / div));
      row("tools/call", `echo ${bytesName(size)} p50 (${impl === "ts" ? "TS SDK" : "luamcp"})`, s50.med, unit, null, null,
        `${fmtS(s50)}; p99 ${fmtS(s99)} ${unit}; ${fmtS(mbps(p50))} MB/s (text bytes ÷ p50 round trip)`);
    }
    if (ts50.size && lm50.size) {
      const r50 = ratios(lm50, ts50), r99 = ratios(lm99, ts99);
      row("tools/call", `echo ${bytesName(size)} p50, luamcp/ts`, r50.med, "×", null, null,
        `per round ${fmtS(r50)}; p99 luamcp/ts ${fmtS(r99)} (below 1: luamcp faster)`);
    }
  });
  for (const impl of impls) {
    const h = stat(runs.call.filter((r) => r.impl === impl && ok(r)).map((r) => r.sizes[SIZES.length - 1].hwm_kb / 1024));
    const idle = stat(runs.call.filter((r) => r.impl === impl && ok(r)).map((r) => r.rss_init_kb / 1024));
    row("tools/call", `peak RSS (VmHWM) after the ${bytesName(SIZES[SIZES.length - 1])} calls (${impl === "ts" ? "TS SDK" : "luamcp"})`,
      h.med, "MiB", null, null, `${fmtS(h)} MiB; idle ${fmtS(idle)} MiB`);
  }
}

function sessionRows() {
  const ok = (r) => r.status === "ok";
  const [lo, hi] = [Math.min(...SESSIONS), Math.max(...SESSIONS)];
  const pt = (r, n) => r.points.find((p) => p.sessions === n);
  for (const n of SESSIONS)
    for (const impl of impls) {
      const R = runs.sessions.filter((r) => r.impl === impl && ok(r));
      const p50 = stat(R.map((r) => pt(r, n).call.p50_us)), p99 = stat(R.map((r) => pt(r, n).call.p99_us));
      const rss = stat(R.map((r) => pt(r, n).rss_opened_kb / 1024));
      row("sessions", `call p50 with ${kN(n)} session${n === 1 ? "" : "s"} open (${impl === "ts" ? "TS SDK" : "luamcp"})`, p50.med, "µs", null, null,
        `${fmtS(p50)}; p99 ${fmtS(p99)} µs (one call in each session, one after another); RSS ${fmtS(rss)} MiB`);
    }
  for (const impl of impls) {
    const R = runs.sessions.filter((r) => r.impl === impl && ok(r));
    const name = impl === "ts" ? "TS SDK" : "luamcp";
    const per = stat(R.map((r) => (pt(r, hi).rss_opened_kb - pt(r, lo).rss_opened_kb) / (hi - lo)));
    const zero = stat(R.map((r) => r.rss0_kb / 1024));
    row("sessions", `memory per session, ${kN(lo)}→${kN(hi)} sessions (${name})`, per.med, "kB", null, null,
      `${fmtS(per)} kB (RSS after initialize + 1 call each); RSS with no session ${fmtS(zero)} MiB, ` +
      `at ${SESSIONS.map((n) => `${kN(n)}: ${fmt(median(R.map((r) => pt(r, n).rss_opened_kb / 1024)))}`).join(", ")} MiB`);
    if (MORE > 0) {
      const used = stat(R.map((r) => (pt(r, hi).more_calls_rss_kb.at(-1) - pt(r, lo).rss_opened_kb) / (hi - lo)));
      const curve = median(R.map((r) => pt(r, hi).more_calls_rss_kb[0])) / 1024;
      row("sessions", `memory per session after ${MORE + 2} calls each (${name})`, used.med, "kB", null, null,
        `${fmtS(used)} kB; RSS at ${kN(hi)} sessions after each further round of calls: ` +
        `${fmt(curve)} … ${fmt(median(R.map((r) => pt(r, hi).more_calls_rss_kb.at(-1))) / 1024)} MiB`);
    }
  }
}

function rssRows() {
  const R = runs.rss.filter((r) => r.status === "ok");
  const at = (r, n) => r.rss_samples.find((s) => s.answers === n)?.rss_kb;
  const from = Math.min(100_000, RSS_CALLS), to = RSS_CALLS;
  const growth = stat(R.map((r) => ((at(r, to) - at(r, from)) / at(r, from)) * 100));
  const marks = [0, 100e3, 250e3, 500e3, 1e6].filter((n) => n <= RSS_CALLS && n % RSS_EVERY === 0);
  const rps = stat(R.map((r) => r.rps / 1000));
  row("rss", `RSS growth from ${kN(from)} to ${kN(to)} calls (luamcp)`, growth.med, "%", "< 5 %",
    growth.med === null ? null : growth.med < 5,
    `per run ${fmtS(growth)} %; VmRSS ${marks.map((n) => `${kN(n)}: ${fmt(median(R.map((r) => at(r, n))))}`).join(", ")} kB; ` +
    `peak ${fmt(median(R.map((r) => r.peak_rss_kb)))} kB; ${fmtS(rps)}k req/s, stdio, 32 in flight`);
}

// }======

function printTable() {
  const head = ["metric", "value", "unit", "target", "holds", "detail"];
  const cells = rows.map((r) => [r.metric, r.value === null ? "–" : String(r.value), r.unit, r.target ?? "", r.holds === null ? "" : r.holds ? "holds" : "MISSED", r.detail]);
  const w = head.slice(0, 5).map((h, i) => Math.max(h.length, ...cells.map((c) => c[i].length)));
  const line = (c) => c.slice(0, 5).map((x, i) => (i === 1 ? x.padStart(w[i]) : x.padEnd(w[i]))).join("  ") + "  " + c[5];
  console.log(`\nScale curves (${ROUNDS} rounds; medians, [min–max] over rounds; luamcp and the TS SDK ${WITH_TS ? "alternate" : "(TS not run)"})`);
  let curve = null;
  console.log(line(head));
  rows.forEach((r, i) => {
    if (r.curve !== curve) console.log(`— ${(curve = r.curve)}`);
    console.log(line(cells[i]));
  });
}

async function main() {
  const t0 = Date.now();
  const load0 = loadavg()[0];
  for (let round = 1; round <= ROUNDS; round++) {
    await curveList(round);
    await curveCall(round);
    await curveSessions(round);
    await curveRss(round);
  }
  listRows();
  callRows();
  sessionRows();
  rssRows();
  printTable();
  let version = "";
  try {
    version = execFileSync(BIN, ["--version"], { encoding: "utf8" }).trim();
  } catch {}
  const tsPkg = JSON.parse(readFileSync(path.join(root, "tests/node_modules/@modelcontextprotocol/sdk/package.json"), "utf8"));
  const result = {
    date: new Date().toISOString(),
    rows: rows.map(({ curve, ...r }) => r),
    machine: { cpus: cpus().length, cpu: cpus()[0]?.model, loadavg_start: load0, loadavg_end: loadavg()[0], node: process.version },
    luamcp: { bin: BIN, version }, ts_sdk: tsPkg.version,
    settings: { rounds: ROUNDS, tools: TOOLS, list_budget_ms: LIST_BUDGET_MS, sizes: SIZES, calls: CALLS, sessions: SESSIONS,
      more_calls: MORE, rss_calls: RSS_CALLS, rss_every: RSS_EVERY, with_ts: WITH_TS },
    seconds: (Date.now() - t0) / 1000,
    failed_runs: failed,
    runs,
  };
  writeFileSync(outPath, JSON.stringify(result, null, 1) + "\n");
  console.log(`\n${failed ? `${failed} run(s) FAILED; ` : ""}${result.seconds.toFixed(0)} s; wrote ${path.relative(process.cwd(), outPath)}`);
  cleanup();
  process.exit(failed ? 1 : 0);
}

main().catch((e) => {
  console.error(e);
  cleanup();
  process.exit(1);
});
