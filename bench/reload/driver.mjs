// driver.mjs — the hot-reload benchmark (see README.md). Three measurements,
// each on its own `luamcp serve` over stdio (raw NDJSON, no SDK), on apps
// generated in a temp dir:
//
//   latency  an app of SCRIPTS scripts (one tool each); SAMPLES times: save one
//            script (a new description, so the tool list changes), and time
//            from just before the save to the arrival of the
//            notifications/tools/list_changed line. Saves alternate between a
//            temp file renamed over the script and an in-place write.
//   big      an app of BIG tools (one script each); BIG_RUNS times SIGHUP, and
//            the server's own "reloaded DIR in X ms" figure plus SIGHUP-to-log
//            wall time; then BIG_SAVES saves timed to list_changed, as above.
//   rss      the SCRIPTS app under --no-watch; RSS_RELOADS reloads, each one a
//            save of a script (the tool list changes) and SIGHUP, with a
//            tools/call parked in ctx:sleep across it (so old states are kept
//            alive by calls, then freed); VmRSS every RSS_EVERY reloads.
//
// Usage: node bench/reload/driver.mjs OUT.json     (run.sh passes the options
// in the environment; see run.sh)
import { spawn } from 'node:child_process';
import { mkdtempSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';

const env = (name, dflt) => (process.env[name] ? Number(process.env[name]) : dflt);
const BIN = path.resolve(process.env.LUAMCP_BIN || 'build/luamcp');
const SCRIPTS = env('RELOAD_SCRIPTS', 100);
const SAMPLES = env('RELOAD_SAMPLES', 200);
const BIG = env('RELOAD_BIG_TOOLS', 1000);
const BIG_RUNS = env('RELOAD_BIG_RUNS', 30);
const BIG_SAVES = env('RELOAD_BIG_SAVES', 30);
const RSS_RELOADS = env('RELOAD_RSS_RELOADS', 1000);
const RSS_EVERY = env('RELOAD_RSS_EVERY', 100);
const TIMEOUT = env('RELOAD_WAIT_MS', 10_000); // one reload, at most
const outPath = process.argv[2];

// {====== apps

function script(i, rev) {
  const name = `tool_${String(i).padStart(4, '0')}`;
  return `local mcp = require "mcp"
mcp.tool {
  name = "${name}",
  description = "Tool ${i}, revision ${rev}: looks things up and answers.",
  input = { query = mcp.string { description = "what to look up" },
            limit = mcp.integer { min = 1, max = 100, default = 10 },
            sleep = mcp.number { min = 0, optional = true } },
  annotations = { readOnlyHint = true },
  handler = function(args, ctx)
    if args.sleep then ctx:sleep(args.sleep) end
    return { tool = "${name}", query = args.query, limit = args.limit }
  end,
}
`;
}

function makeApp(n) {
  const dir = mkdtempSync(path.join(tmpdir(), 'luamcp-reload-bench-'));
  mkdirSync(path.join(dir, 'scripts'));
  writeFileSync(path.join(dir, 'app.lua'), `return { name = "reload-bench", version = "1.0.0" }\n`);
  for (let i = 0; i < n; i++) writeFileSync(scriptPath(dir, i), script(i, 0));
  return dir;
}

const scriptPath = (dir, i) => path.join(dir, 'scripts', `t${String(i).padStart(4, '0')}.lua`);

let tmpSeq = 0;
function save(file, text, how) {
  if (how === 'inplace') {
    writeFileSync(file, text);
  } else {
    const tmp = path.join(path.dirname(file), `.${path.basename(file)}.${tmpSeq++}.tmp`);
    writeFileSync(tmp, text);
    renameSync(tmp, file);
  }
}

// }======

// {====== the server

class Server {
  constructor(dir, args = []) {
    this.child = spawn(BIN, ['serve', '--log-level', 'info', ...args, dir], { stdio: ['pipe', 'pipe', 'pipe'] });
    this.waiters = [];
    this.lines = []; // stdout lines not yet taken
    this.errLines = [];
    this.exited = new Promise((resolve) => this.child.once('close', (code, signal) => resolve({ code, signal })));
    this.child.stdin.on('error', () => {});
    let out = '';
    this.child.stdout.setEncoding('utf8').on('data', (d) => {
      out += d;
      let nl;
      while ((nl = out.indexOf('\n')) >= 0) {
        this.lines.push({ t: performance.now(), line: out.slice(0, nl) });
        out = out.slice(nl + 1);
      }
      this.wake();
    });
    let err = '';
    this.child.stderr.setEncoding('utf8').on('data', (d) => {
      err += d;
      let nl;
      while ((nl = err.indexOf('\n')) >= 0) {
        this.errLines.push({ t: performance.now(), line: err.slice(0, nl) });
        err = err.slice(nl + 1);
      }
      this.wake();
    });
  }

  wake() {
    for (const w of [...this.waiters]) w();
  }

  /** Resolve with the result of check() once it is not undefined (checked on every line). */
  until(check, what) {
    const found = check();
    if (found !== undefined) return Promise.resolve(found);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((x) => x !== w);
        reject(new Error(`timed out waiting for ${what}; stderr tail:\n${this.errLines.slice(-10).map((l) => l.line).join('\n')}`));
      }, TIMEOUT);
      const w = () => {
        const v = check();
        if (v === undefined) return;
        clearTimeout(timer);
        this.waiters = this.waiters.filter((x) => x !== w);
        resolve(v);
      };
      this.waiters.push(w);
    });
  }

  /** The first stdout line (with its arrival time) matching pred, removed from the queue. */
  take(pred, what) {
    return this.until(() => {
      const i = this.lines.findIndex((l) => pred(l.line));
      if (i < 0) return undefined;
      return this.lines.splice(i, 1)[0];
    }, what);
  }

  /** The first stderr line after index `from` matching re. */
  errAfter(from, re, what) {
    return this.until(() => {
      for (let i = from; i < this.errLines.length; i++) if (re.test(this.errLines[i].line)) return { ...this.errLines[i], index: i };
      return undefined;
    }, what);
  }

  send(msg) {
    this.child.stdin.write(`${JSON.stringify(msg)}\n`);
  }

  async initialize() {
    this.send({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'reload-bench', version: '0' } } });
    await this.take((l) => l.startsWith('{"jsonrpc":"2.0","id":0,'), 'the initialize reply');
    this.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
  }

  rss() {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${this.child.pid}/status`, 'utf8'));
    return m ? Number(m[1]) : NaN;
  }

  async close() {
    this.child.stdin.end();
    const timer = setTimeout(() => this.child.kill('SIGKILL'), TIMEOUT);
    const r = await this.exited;
    clearTimeout(timer);
    if (r.code !== 0) throw new Error(`the server exited with ${r.code ?? r.signal}; stderr tail:\n${this.errLines.slice(-10).map((l) => l.line).join('\n')}`);
  }
}

const isListChanged = (l) => l.includes('"method":"notifications/tools/list_changed"');
const RELOADED = /reloaded .* in ([0-9.]+) ms/;

// }======

// {====== statistics

function pct(xs, p) {
  const s = [...xs].sort((a, b) => a - b);
  if (!s.length) return NaN;
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))];
}
const summary = (xs) => ({ n: xs.length, p50: pct(xs, 50), p99: pct(xs, 99), min: Math.min(...xs), max: Math.max(...xs) });
const round = (x, d = 1) => Math.round(x * 10 ** d) / 10 ** d;
const fmt = (s) => `${round(s.p50)} / ${round(s.p99)} (min ${round(s.min)}, max ${round(s.max)}, n=${s.n})`;

// }======

/** Save script i of dir (a new revision) and time until list_changed arrives; ms. */
async function timedSave(srv, dir, i, rev, how) {
  const errFrom = srv.errLines.length;
  srv.lines = []; // nothing stale can be taken for this save's notification
  const t0 = performance.now();
  save(scriptPath(dir, i), script(i, rev), how);
  const { t } = await srv.take(isListChanged, `list_changed after saving script ${i}`);
  // the reload is logged before its notifications are flushed: it is over
  await srv.errAfter(errFrom, RELOADED, 'the reload log line');
  return t - t0;
}

const pause = (msv) => new Promise((resolve) => setTimeout(resolve, msv));

async function latency() {
  const dir = makeApp(SCRIPTS);
  const srv = new Server(dir);
  try {
    await srv.initialize();
    const all = [];
    const byHow = { rename: [], inplace: [] };
    for (let k = 0; k < SAMPLES; k++) {
      const how = k % 2 ? 'inplace' : 'rename';
      const ms = await timedSave(srv, dir, (k * 37) % SCRIPTS, k + 1, how);
      all.push(ms);
      byHow[how].push(ms);
      await pause(5); // a separate save, not part of the previous burst
    }
    await srv.close();
    return { scripts: SCRIPTS, samples: SAMPLES, ms: summary(all), rename_ms: summary(byHow.rename), inplace_ms: summary(byHow.inplace) };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function big() {
  const dir = makeApp(BIG);
  const t0 = performance.now();
  const srv = new Server(dir);
  try {
    await srv.initialize();
    const startMs = performance.now() - t0;
    const server = [];
    const wall = [];
    for (let k = 0; k < BIG_RUNS; k++) {
      const from = srv.errLines.length;
      const t = performance.now();
      srv.child.kill('SIGHUP');
      const line = await srv.errAfter(from, RELOADED, 'the reload after SIGHUP');
      wall.push(line.t - t);
      server.push(Number(RELOADED.exec(line.line)[1]));
    }
    const saves = [];
    for (let k = 0; k < BIG_SAVES; k++) {
      saves.push(await timedSave(srv, dir, (k * 97) % BIG, k + 1, k % 2 ? 'inplace' : 'rename'));
      await pause(5);
    }
    const rssKb = srv.rss();
    await srv.close();
    return { tools: BIG, start_to_initialize_ms: round(startMs), reload_ms: summary(server), sighup_to_reloaded_ms: summary(wall), save_to_list_changed_ms: summary(saves), rss_kb: rssKb };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function rss() {
  const dir = makeApp(SCRIPTS);
  const srv = new Server(dir, ['--no-watch']);
  try {
    await srv.initialize();
    const samples = [{ reloads: 0, rss_kb: srv.rss() }];
    let answers = 0;
    let id = 1;
    const t0 = performance.now();
    for (let k = 1; k <= RSS_RELOADS; k++) {
      // a call parked across the reload keeps the old state alive until it ends
      const callId = id++;
      srv.send({ jsonrpc: '2.0', id: callId, method: 'tools/call', params: { name: `tool_${String(k % SCRIPTS).padStart(4, '0')}`, arguments: { query: 'x', sleep: 0.002 } } });
      save(scriptPath(dir, k % SCRIPTS), script(k % SCRIPTS, k), k % 2 ? 'inplace' : 'rename');
      const from = srv.errLines.length;
      srv.child.kill('SIGHUP');
      await srv.errAfter(from, RELOADED, `reload ${k}`);
      await srv.take((l) => l.startsWith(`{"jsonrpc":"2.0","id":${callId},`), `the answer to call ${callId}`);
      answers++;
      srv.lines = srv.lines.filter((l) => !isListChanged(l.line)); // drop the notifications
      if (k % RSS_EVERY === 0) samples.push({ reloads: k, rss_kb: srv.rss() });
    }
    const secs = (performance.now() - t0) / 1000;
    await srv.close();
    // flat: from the first sample after warm-up to the last
    const base = samples.find((s) => s.reloads >= RSS_EVERY) ?? samples[0];
    const last = samples[samples.length - 1];
    const growth = last.rss_kb - base.rss_kb;
    const limit = Math.max(2048, base.rss_kb * 0.05);
    return { scripts: SCRIPTS, reloads: RSS_RELOADS, answers, seconds: round(secs), samples, growth_kb_after_warmup: growth, flat_limit_kb: Math.round(limit), flat: growth <= limit };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const results = { when: new Date().toISOString(), bin: BIN, cpus: cpus().length, cpu: cpus()[0]?.model, node: process.version };
console.log(`reload benchmark: ${BIN} (${results.cpus} CPUs, node ${process.version})`);
results.latency = await latency();
console.log(`(a) save → list_changed, ${SCRIPTS} scripts: p50/p99 ${fmt(results.latency.ms)} ms`);
results.big = await big();
console.log(`(b) ${BIG} tools: reload p50/p99 ${fmt(results.big.reload_ms)} ms`);
results.rss = await rss();
console.log(`(c) ${RSS_RELOADS} reloads: RSS ${results.rss.samples.map((s) => s.rss_kb).join(' ')} kB`);

const L = results.latency;
const B = results.big;
const R = results.rss;
const rows = [
  ['measure', 'p50', 'p99', 'max', 'n', 'target'],
  [`save → list_changed (${SCRIPTS} scripts), ms`, round(L.ms.p50), round(L.ms.p99), round(L.ms.max), L.ms.n, 'p99 < 100'],
  ['  of which: rename over the file', round(L.rename_ms.p50), round(L.rename_ms.p99), round(L.rename_ms.max), L.rename_ms.n, ''],
  ['  of which: in-place write', round(L.inplace_ms.p50), round(L.inplace_ms.p99), round(L.inplace_ms.max), L.inplace_ms.n, ''],
  [`reload of ${BIG} tools (server's own figure), ms`, round(B.reload_ms.p50), round(B.reload_ms.p99), round(B.reload_ms.max), B.reload_ms.n, ''],
  [`SIGHUP → "reloaded" (${BIG} tools), ms`, round(B.sighup_to_reloaded_ms.p50), round(B.sighup_to_reloaded_ms.p99), round(B.sighup_to_reloaded_ms.max), B.sighup_to_reloaded_ms.n, ''],
  [`save → list_changed (${BIG} tools), ms`, round(B.save_to_list_changed_ms.p50), round(B.save_to_list_changed_ms.p99), round(B.save_to_list_changed_ms.max), B.save_to_list_changed_ms.n, ''],
];
const widths = rows[0].map((_, c) => Math.max(...rows.map((r) => String(r[c]).length)));
console.log('');
for (const [i, r] of rows.entries()) {
  console.log(r.map((v, c) => (c === 0 ? String(v).padEnd(widths[c]) : String(v).padStart(widths[c]))).join('  '));
  if (i === 0) console.log(widths.map((w) => '-'.repeat(w)).join('  '));
}
console.log('');
console.log(`RSS (kB) by reloads (${SCRIPTS}-script app, --no-watch, save + SIGHUP each, a call in flight across each):`);
console.log(`  ${R.samples.map((s) => `${s.reloads}: ${s.rss_kb}`).join('  ')}`);
console.log(`  growth after warm-up (${RSS_EVERY} → ${R.reloads}): ${R.growth_kb_after_warmup} kB (limit ${R.flat_limit_kb} kB): ${R.flat ? 'flat' : 'GROWING'}; ${R.answers} calls answered; ${R.seconds} s`);
console.log(`start of a ${BIG}-tool app (spawn → initialize reply): ${B.start_to_initialize_ms} ms; its RSS ${B.rss_kb} kB`);

results.targets = { latency_p99_under_100ms: L.ms.p99 < 100, rss_flat: R.flat };
if (outPath) {
  mkdirSync(path.dirname(outPath), { recursive: true });
  writeFileSync(outPath, `${JSON.stringify(results, null, 2)}\n`);
  console.log(`wrote ${outPath}`);
}
process.exitCode = results.targets.latency_p99_under_100ms && results.targets.rss_flat ? 0 : 1;
