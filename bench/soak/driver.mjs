// driver.mjs — the soak (see README.md): one app folder served by two
// luamcp processes at once, one over stdio and one over Streamable HTTP,
// both sent a mix of requests (tools/call of several tools, one of which
// fails, resources/read, prompts/get, tools/list) while a script of the app
// is rewritten every second (each process reloads it). Checks:
//
//   - every request id is answered exactly once (none lost, none doubled),
//     and every answer has the shape its method promises (the failing
//     tool's is an isError result; any JSON-RPC error counts as bad);
//   - RSS and open fds of each server (sampled from /proc every second) are
//     flat: the median of the last quarter of the samples is at most the
//     first quarter's median x 1.2 plus a slack (RSS 2 MiB, fds 2);
//   - both servers exit 0 at the end (EOF on stdin, SIGTERM).
//
// Usage: node bench/soak/driver.mjs [OUT.json]   (options in the
// environment: SOAK_N total requests [1000000], SOAK_HTTP_SHARE the part
// sent over HTTP [0.3], SOAK_STDIO_W / SOAK_HTTP_W requests in flight
// [32 / 16], SOAK_RELOAD_MS between rewrites [1000], LUAMCP_BIN)
// Also imported by tests/integration/soak.test.mjs (soak()).
import { spawn } from 'node:child_process';
import { mkdtempSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const PROTOCOL = '2025-11-25';

// {====== the app

const SOAK_LUA = `local mcp = require "mcp"
mcp.tool { name = "echo", description = "Echoes.", input = { text = mcp.string {} },
  handler = function(args) return args.text end }
mcp.tool { name = "add", description = "Adds.", input = { a = mcp.number {}, b = mcp.number {} },
  output = { sum = mcp.number {} },
  handler = function(args) return { sum = args.a + args.b } end }
mcp.tool { name = "fail", description = "Fails.", handler = function() error("failed on purpose") end }
mcp.tool { name = "nap", description = "Waits a millisecond.",
  handler = function(_, ctx) ctx:sleep(0.001) return "rested" end }
mcp.resource { uri = "soak://status", name = "status", mime = "application/json",
  read = function() return { ok = true, n = (mcp.state.reads or 0) } end }
mcp.prompt { name = "greet", args = { who = mcp.string {} },
  get = function(args) return { mcp.user("Say hello to " .. args.who) } end }
`;

/** Count "reloaded" lines of a stream as they come (the kept stderr is only its tail). */
function lineCounter(re) {
  const c = { n: 0, carry: '' };
  c.feed = (d) => {
    const text = c.carry + d;
    const cut = text.lastIndexOf('\n');
    c.carry = cut < 0 ? text : text.slice(cut + 1);
    if (cut >= 0) c.n += (text.slice(0, cut).match(re) || []).length;
  };
  return c;
}

const revLua = (rev) => `local mcp = require "mcp"
mcp.tool { name = "rev", description = "Revision ${rev} of a script rewritten every second.",
  handler = function() return "revision ${rev}" end }
`;

function makeApp() {
  const dir = mkdtempSync(path.join(tmpdir(), 'luamcp-soak-'));
  mkdirSync(path.join(dir, 'scripts'));
  writeFileSync(path.join(dir, 'scripts', 'soak.lua'), SOAK_LUA);
  writeFileSync(path.join(dir, 'scripts', 'rev.lua'), revLua(0));
  return dir;
}

// }======

// {====== the mix: request i, and whether its answer has the right shape

function requestFor(i) {
  switch (i % 10) {
    case 0: case 1: case 2: return ['tools/call', { name: 'echo', arguments: { text: `t${i}` } }];
    case 3: return ['tools/call', { name: 'add', arguments: { a: i, b: 1 } }];
    case 4: return ['tools/call', { name: 'fail', arguments: {} }];
    case 5: return ['resources/read', { uri: 'soak://status' }];
    case 6: return ['prompts/get', { name: 'greet', arguments: { who: 'Ada' } }];
    case 7: return ['tools/list', {}];
    case 8: return ['tools/call', { name: 'rev', arguments: {} }];
    default: return ['tools/call', { name: 'nap', arguments: {} }];
  }
}

function goodAnswer(i, m) {
  const r = m.result;
  if (!r) return false;
  switch (i % 10) {
    case 0: case 1: case 2: return r.content?.[0]?.text === `t${i}` && !r.isError;
    case 3: return r.structuredContent?.sum === i + 1;
    case 4: return r.isError === true && /failed on purpose/.test(r.content?.[0]?.text ?? '');
    case 5: return Array.isArray(r.contents) && r.contents.length === 1;
    case 6: return Array.isArray(r.messages) && r.messages.length === 1;
    case 7: return Array.isArray(r.tools) && r.tools.some((t) => t.name === 'rev');
    case 8: return /^revision \d+$/.test(r.content?.[0]?.text ?? '');
    default: return r.content?.[0]?.text === 'rested';
  }
}

// }======

/** What each id got: answers counted, so lost (0) and doubled (> 1) show. */
class Ledger {
  constructor(name) {
    this.name = name;
    this.answers = new Map(); // id -> count
    this.sent = 0;
    this.bad = 0;
    this.unknown = 0;
    this.firstBad = null;
  }
  sentId(id) {
    this.sent++;
    this.answers.set(id, 0);
  }
  answered(id, i, m) {
    const n = this.answers.get(id);
    if (n === undefined) {
      this.unknown++;
      return;
    }
    this.answers.set(id, n + 1);
    if (n === 0 && !goodAnswer(i, m)) {
      this.bad++;
      this.firstBad ??= JSON.stringify(m).slice(0, 300);
    }
  }
  summary() {
    let lost = 0, doubled = 0;
    for (const n of this.answers.values()) {
      if (n === 0) lost++;
      else if (n > 1) doubled++;
    }
    return { sent: this.sent, lost, doubled: doubled + this.unknown, bad: this.bad, first_bad: this.firstBad };
  }
}

// {====== /proc

const rssKb = (pid) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? NaN);
const fdCount = (pid) => readdirSync(`/proc/${pid}/fd`).length;

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.floor((s.length - 1) / 2)] : NaN;
}

/** Flat: last quarter's median <= first quarter's x 1.2 + slack. */
function flatness(samples, slack) {
  const q = Math.max(1, Math.floor(samples.length / 4));
  const first = median(samples.slice(0, q));
  const last = median(samples.slice(-q));
  const limit = first * 1.2 + slack;
  return { first, last, limit, max: Math.max(...samples), flat: last <= limit, samples: samples.length };
}

// }======

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

function exitOf(child) {
  return new Promise((resolve) => child.once('close', (code, signal) => resolve({ code, signal })));
}

// {====== stdio: NDJSON with W in flight

function stdioServer(bin, dir) {
  const child = spawn(bin, ['serve', dir], { stdio: ['pipe', 'pipe', 'pipe'] });
  const exited = exitOf(child);
  const srv = { child, exited, stderr: '', listChanged: 0, onMessage: () => {}, reloads: lineCounter(/reloaded /g) };
  child.stderr.setEncoding('utf8').on('data', (d) => {
    srv.reloads.feed(d);
    srv.stderr += d;
    if (srv.stderr.length > 1 << 20) srv.stderr = srv.stderr.slice(-(1 << 19)); // the tail is enough
  });
  let pending = '';
  child.stdout.setEncoding('utf8').on('data', (d) => {
    pending += d;
    let nl;
    while ((nl = pending.indexOf('\n')) >= 0) {
      const line = pending.slice(0, nl);
      pending = pending.slice(nl + 1);
      const m = JSON.parse(line);
      if (m.method === 'notifications/tools/list_changed') srv.listChanged++;
      srv.onMessage(m);
    }
  });
  srv.send = (m) => child.stdin.write(JSON.stringify(m) + '\n');
  return srv;
}

async function driveStdio(srv, n, w, ledger) {
  await new Promise((resolve) => {
    srv.onMessage = (m) => m.id === 'init' && resolve();
    srv.send({ jsonrpc: '2.0', id: 'init', method: 'initialize', params: { protocolVersion: PROTOCOL, capabilities: {}, clientInfo: { name: 'soak', version: '0' } } });
  });
  srv.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
  let sent = 0, done = 0;
  await new Promise((resolve) => {
    const more = () => {
      while (sent < n && sent - done < w) {
        const i = sent++;
        const [method, params] = requestFor(i);
        ledger.sentId(i);
        srv.send({ jsonrpc: '2.0', id: i, method, params });
      }
    };
    srv.onMessage = (m) => {
      if (m.id === undefined || m.method) return; // notifications (list_changed, logs)
      ledger.answered(m.id, m.id, m);
      done++;
      if (done >= n) resolve();
      else more();
    };
    srv.child.once('close', resolve); // a dead server: the ledger shows what was lost
    more();
  });
}

// }======

// {====== HTTP: one session, W requests in flight over keep-alive connections

async function httpServer(bin, dir) {
  const port = await freePort();
  const child = spawn(bin, ['serve', '--http', `127.0.0.1:${port}`, dir], { stdio: ['ignore', 'ignore', 'pipe'] });
  const exited = exitOf(child);
  const srv = { child, exited, port, stderr: '', reloads: lineCounter(/reloaded /g) };
  await new Promise((resolve, reject) => {
    child.stderr.setEncoding('utf8').on('data', (d) => {
      srv.reloads.feed(d);
      srv.stderr += d;
    if (srv.stderr.length > 1 << 20) srv.stderr = srv.stderr.slice(-(1 << 19));
      if (srv.stderr.includes('listening on')) resolve();
    });
    exited.then(() => reject(new Error(`the HTTP server exited before listening:\n${srv.stderr}`)));
  });
  return srv;
}

function postJson(agent, port, headers, body, limitMs = 30_000) {
  return new Promise((resolve, reject) => {
    const data = Buffer.from(JSON.stringify(body));
    const req = http.request({ host: '127.0.0.1', port, method: 'POST', path: '/mcp', agent,
      headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream',
        'MCP-Protocol-Version': PROTOCOL, 'Content-Length': data.length, ...headers } }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let messages = [];
        if (/event-stream/.test(res.headers['content-type'] || '')) {
          for (const line of text.split('\n')) if (line.startsWith('data:') && line.length > 6) messages.push(JSON.parse(line.slice(5)));
        } else if (text) {
          messages = [JSON.parse(text)];
        }
        resolve({ status: res.statusCode, headers: res.headers, messages });
      });
      res.on('error', reject);
    });
    req.setTimeout(limitMs, () => req.destroy(new Error('no answer in time')));
    req.on('error', reject);
    req.end(data);
  });
}

async function driveHttp(srv, n, w, ledger, idBase) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: w });
  const init = await postJson(agent, srv.port, {}, { jsonrpc: '2.0', id: 'init', method: 'initialize',
    params: { protocolVersion: PROTOCOL, capabilities: {}, clientInfo: { name: 'soak', version: '0' } } });
  const session = init.headers['mcp-session-id'];
  if (!session) throw new Error(`initialize over HTTP failed: ${init.status}`);
  const headers = { 'Mcp-Session-Id': session };
  await postJson(agent, srv.port, headers, { jsonrpc: '2.0', method: 'notifications/initialized' });
  let next = 0;
  const worker = async () => {
    while (next < n) {
      const i = next++;
      const id = idBase + i;
      const [method, params] = requestFor(i);
      ledger.sentId(id);
      try {
        const r = await postJson(agent, srv.port, headers, { jsonrpc: '2.0', id, method, params });
        for (const m of r.messages) if (m.id !== undefined && !m.method) ledger.answered(m.id, i, m);
      } catch {
        // no answer: the ledger counts it lost
      }
    }
  };
  await Promise.all(Array.from({ length: w }, worker));
  agent.destroy();
}

// }======

/** The whole soak; returns the figures (and ok: every check passed). */
export async function soak({
  bin = process.env.LUAMCP_BIN || 'build/luamcp',
  n = Number(process.env.SOAK_N || 1_000_000),
  httpShare = Number(process.env.SOAK_HTTP_SHARE || 0.3),
  stdioW = Number(process.env.SOAK_STDIO_W || 32),
  httpW = Number(process.env.SOAK_HTTP_W || 16),
  reloadMs = Number(process.env.SOAK_RELOAD_MS || 1000),
  log = (s) => process.stderr.write(s + '\n'),
} = {}) {
  bin = path.resolve(bin);
  const dir = makeApp();
  const nHttp = Math.round(n * httpShare), nStdio = n - nHttp;
  const stdio = stdioServer(bin, dir);
  const web = await httpServer(bin, dir);
  const ledgers = { stdio: new Ledger('stdio'), http: new Ledger('http') };
  const samples = { stdio: { rss: [], fds: [] }, http: { rss: [], fds: [] } };
  const sample = () => {
    for (const [name, s] of [['stdio', stdio], ['http', web]]) {
      try {
        samples[name].rss.push(rssKb(s.child.pid));
        samples[name].fds.push(fdCount(s.child.pid));
      } catch {
        // gone: the exit status tells
      }
    }
  };
  let rev = 0;
  const rewrite = () => { // a temp file renamed over the script: each reload sees a whole file
    rev++;
    const tmp = path.join(dir, 'scripts', '.rev.tmp');
    writeFileSync(tmp, revLua(rev));
    renameSync(tmp, path.join(dir, 'scripts', 'rev.lua'));
  };
  const t0 = Date.now();
  const sampler = setInterval(sample, 1000);
  const reloader = setInterval(rewrite, reloadMs);
  const progress = setInterval(() => {
    const s = ledgers.stdio.sent, h = ledgers.http.sent;
    log(`soak: ${((Date.now() - t0) / 1000).toFixed(0)} s: stdio ${s}/${nStdio}, http ${h}/${nHttp}, ${rev} rewrites`);
  }, 10_000);
  try {
    const timed = (name, p) => p.then(() => { ledgers[name].seconds = (Date.now() - t0) / 1000; });
    await Promise.all([timed('stdio', driveStdio(stdio, nStdio, stdioW, ledgers.stdio)),
      timed('http', driveHttp(web, nHttp, httpW, ledgers.http, 1e9))]);
  } finally {
    clearInterval(sampler), clearInterval(reloader), clearInterval(progress);
  }
  sample();
  const seconds = (Date.now() - t0) / 1000;
  stdio.child.stdin.end();
  web.child.kill('SIGTERM');
  const [stdioExit, httpExit] = await Promise.all([stdio.exited, web.exited]);
  rmSync(dir, { recursive: true, force: true });
  const result = { n, seconds, rate: Math.round(n / seconds), rewrites: rev, servers: {} };
  let ok = true;
  for (const [name, s, exit] of [['stdio', stdio, stdioExit], ['http', web, httpExit]]) {
    const l = ledgers[name].summary();
    const rss = flatness(samples[name].rss, 2048);
    const fds = flatness(samples[name].fds, 2);
    const reloaded = s.reloads.n >= rev / 2; // saves a second apart: each should reload
    const fine = l.lost === 0 && l.doubled === 0 && l.bad === 0 && rss.flat && fds.flat && exit.code === 0 && reloaded;
    if (!fine) ok = false;
    result.servers[name] = { ...l, seconds: ledgers[name].seconds, reloads: s.reloads.n, rss_kb: rss, fds, exit, ok: fine,
      ...(fine ? {} : { stderr_tail: s.stderr.slice(-2000) }) };
  }
  result.servers.stdio.list_changed = stdio.listChanged;
  result.ok = ok;
  return result;
}

export function report(r) {
  const lines = [`soak: ${r.n} requests in ${r.seconds.toFixed(1)} s (${r.rate}/s), ${r.rewrites} rewrites of scripts/rev.lua`];
  for (const [name, s] of Object.entries(r.servers)) {
    lines.push(`  ${name.padEnd(5)} sent ${s.sent} in ${s.seconds?.toFixed(1)} s, lost ${s.lost}, doubled ${s.doubled}, bad ${s.bad}; ${s.reloads} reloads; exit ${s.exit.code ?? s.exit.signal}` +
      `; RSS ${s.rss_kb.first} -> ${s.rss_kb.last} kB (max ${s.rss_kb.max}, limit ${s.rss_kb.limit.toFixed(0)})` +
      `; fds ${s.fds.first} -> ${s.fds.last} (max ${s.fds.max}); ${s.ok ? 'ok' : 'FAILED'}`);
    if (s.first_bad) lines.push(`    first bad answer: ${s.first_bad}`);
    if (s.stderr_tail) lines.push(`    stderr tail:\n${s.stderr_tail}`);
  }
  lines.push(r.ok ? 'soak: ok (no reply lost or doubled, RSS and fds flat)' : 'soak: FAILED');
  return lines.join('\n');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const r = await soak();
  console.log(report(r));
  if (process.argv[2]) writeFileSync(process.argv[2], JSON.stringify(r, null, 2) + '\n');
  process.exit(r.ok ? 0 : 1);
}
