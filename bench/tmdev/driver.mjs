// driver.mjs — the load of bench/tmdev: V virtual users (default 50), each
// looping: initialize, notifications/initialized, one tools/call (the three
// tools in turn: search_products, get_user_cart, checkout), then a DELETE of
// the session when the server gave one (a well-behaved client; stateless
// servers give none), then T ms of think time (default 50). Over HTTP/1.1
// keep-alive, one connection per user.
//   node driver.mjs URL [--vus V] [--think MS] [--warmup S] [--secs S] [--pid PID]
// Prints one line `TMDEV_JSON {...}` with, over the measured window (after the
// warm-up; what counts is when an answer arrives): tool calls answered per
// second, HTTP requests per second, p50/p99 of the tools/call round trip and of
// a whole iteration (ms), errors, and for
// the server (PID and every process under it): CPU seconds per 1,000 tool
// calls (utime + stime from /proc over the window), RSS at the end (sum of
// VmRSS) and the sum of each process's peak (VmHWM), in KiB.
import http from "node:http";
import fs from "node:fs";

const argv = process.argv.slice(2);
const url = new URL(argv[0]);
const opt = (name, dflt) => { const i = argv.indexOf(name); return i > 0 ? Number(argv[i + 1]) : dflt; };
const VUS = opt("--vus", 50), THINK = opt("--think", 50), WARMUP = opt("--warmup", 3), SECS = opt("--secs", 10);
const PID = opt("--pid", 0), USERS = opt("--users", 1000);
const WORDS = ["laptop", "phone", "chair", "lamp", "desk", "watch", "camera", "speaker", "red", "blue", "smart", "vintage"];
const PROTOCOL = "2025-06-18";

// {====== the server's processes
const TICK = 100; // USER_HZ on Linux
const children = () => {
  const kids = new Map();
  for (const d of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const st = fs.readFileSync(`/proc/${d}/stat`, "utf8");
      const ppid = Number(st.slice(st.lastIndexOf(")") + 2).split(" ")[1]);
      if (!kids.has(ppid)) kids.set(ppid, []);
      kids.get(ppid).push(Number(d));
    } catch { /* gone */ }
  }
  const all = [], todo = [PID];
  while (todo.length) { const p = todo.pop(); all.push(p); todo.push(...(kids.get(p) ?? [])); }
  return all;
};
const cpuTicks = (pids) => pids.reduce((sum, p) => {
  try {
    const f = fs.readFileSync(`/proc/${p}/stat`, "utf8").split(") ")[1].split(" ");
    return sum + Number(f[11]) + Number(f[12]); // utime, stime (fields 14, 15)
  } catch { return sum; }
}, 0);
const memKiB = (pids, key) => pids.reduce((sum, p) => {
  try { return sum + Number(fs.readFileSync(`/proc/${p}/status`, "utf8").match(new RegExp(`${key}:\\s+(\\d+)`))[1]); }
  catch { return sum; }
}, 0);
// }======

// an agent per user: one keep-alive connection each, used every iteration (a
// shared pool reuses the last freed socket first, leaving others idle past the
// server's keep-alive timeout, and a reuse racing its close is an error)
const agents = Array.from({ length: VUS }, () => new http.Agent({ keepAlive: true, maxSockets: 1 }));
const post = (agent, body, headers, method = "POST") => new Promise((resolve, reject) => {
  const data = body === null ? null : JSON.stringify(body);
  const req = http.request(url, {
    method, agent, timeout: 30000,
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream",
               ...(data ? { "content-length": Buffer.byteLength(data) } : {}), ...headers },
  }, (res) => {
    const chunks = [];
    res.on("data", (c) => chunks.push(c));
    res.on("end", () => resolve({ status: res.statusCode, headers: res.headers, text: Buffer.concat(chunks).toString() }));
    res.on("error", reject);
  });
  req.on("timeout", () => req.destroy(new Error("timeout")));
  req.on("error", reject);
  req.end(data);
});
// A JSON-RPC answer, whether sent as JSON or as one SSE event.
const message = (r) => {
  if ((r.headers["content-type"] ?? "").startsWith("text/event-stream")) {
    for (const line of r.text.split("\n")) if (line.startsWith("data:")) {
      const m = JSON.parse(line.slice(5));
      if (m.id !== undefined) return m;
    }
    return null;
  }
  return JSON.parse(r.text);
};

const argsFor = (tool, vu, n) => {
  const user = `u${1 + ((vu * 7919 + n * 31) % USERS)}`;
  if (tool === "search_products") return { query: WORDS[(vu + n) % WORDS.length], limit: 10 };
  if (tool === "get_user_cart") return { user_id: user };
  const items = [];
  for (let i = 0; i <= (vu + n) % 3; i++) items.push({ product_id: 1 + ((vu * 104729 + n * 7 + i * 3331) % 100000), quantity: 1 + i });
  return { user_id: user, items };
};
const TOOLS = ["search_products", "get_user_cart", "checkout"];

const t0 = performance.now();
const measureFrom = t0 + WARMUP * 1000, measureTo = measureFrom + SECS * 1000;
let calls = 0, httpReqs = 0, errors = 0, firstError = null;
const callLat = [], iterLat = [];
const fail = (what) => { errors++; firstError ??= what; };
// what counts is when an answer arrived: inside the window or not
const answered = () => { const t = performance.now(); if (t >= measureFrom && t <= measureTo) httpReqs++; };

async function vu(id) {
  for (let n = 0; ; n++) {
    const start = performance.now();
    if (start >= measureTo) return;
    const tool = TOOLS[(id + n) % 3];
    try {
      const init = await post(agents[id], { jsonrpc: "2.0", id: 1, method: "initialize",
        params: { protocolVersion: PROTOCOL, capabilities: {}, clientInfo: { name: "tmdev-driver", version: "1" } } }, {});
      answered();
      const im = init.status === 200 ? message(init) : null;
      if (!im?.result) throw new Error(`initialize: ${init.status} ${init.text.slice(0, 200)}`);
      const sid = init.headers["mcp-session-id"];
      const h = { "mcp-protocol-version": im.result.protocolVersion, ...(sid ? { "mcp-session-id": sid } : {}) };
      const ack = await post(agents[id], { jsonrpc: "2.0", method: "notifications/initialized" }, h);
      answered();
      if (ack.status !== 202 && ack.status !== 200) throw new Error(`initialized: ${ack.status} ${ack.text.slice(0, 200)}`);
      const c0 = performance.now();
      const call = await post(agents[id], { jsonrpc: "2.0", id: 2, method: "tools/call",
        params: { name: tool, arguments: argsFor(tool, id, n) } }, h);
      const c1 = performance.now();
      answered();
      const cm = call.status === 200 ? message(call) : null;
      if (!cm?.result || cm.result.isError) throw new Error(`${call.status} ${call.text.slice(0, 300)}`);
      if (sid) { await post(agents[id], null, h, "DELETE"); answered(); }
      if (c1 >= measureFrom && c1 <= measureTo) { calls++; callLat.push(c1 - c0); iterLat.push(c1 - start); }
    } catch (e) { fail(`${tool}: ${e.message}`); }
    if (THINK > 0) await new Promise((r) => setTimeout(r, THINK));
  }
}

let cpu0 = 0;
setTimeout(() => { cpu0 = cpuTicks(children()); }, Math.max(0, measureFrom - performance.now()));
const endSample = new Promise((resolve) => setTimeout(() => {
  const pids = children();
  resolve({ cpu1: cpuTicks(pids), rss: memKiB(pids, "VmRSS"), hwm: memKiB(pids, "VmHWM"), procs: pids.length });
}, measureTo - performance.now()));

const users = [];
for (let i = 0; i < VUS; i++) users.push(vu(i));
await Promise.all(users);
const s = await endSample;
const q = (xs, p) => { if (!xs.length) return null; const a = [...xs].sort((x, y) => x - y); return a[Math.min(a.length - 1, Math.floor(p * a.length))]; };
const cpuS = (s.cpu1 - cpu0) / TICK;
console.log("TMDEV_JSON " + JSON.stringify({
  vus: VUS, think_ms: THINK, secs: SECS, calls, errors, first_error: firstError,
  calls_per_s: calls / SECS, http_per_s: httpReqs / SECS,
  p50_ms: q(callLat, 0.5), p99_ms: q(callLat, 0.99), iter_p50_ms: q(iterLat, 0.5), iter_p99_ms: q(iterLat, 0.99),
  cpu_s: cpuS, cpu_s_per_1k: calls ? cpuS / calls * 1000 : null, rss_kib: s.rss, hwm_kib: s.hwm, procs: s.procs,
}));
for (const a of agents) a.destroy();
