// hostile.mjs — what idle and hostile HTTP peers do to `luamcp serve --http`
// (issue 15): each scenario starts the server, attacks it from loopback
// addresses other than the victim's (127.0.1.x: every 127/8 address is
// local on Linux, and each is its own peer for the per-peer limits), then
// measures a well-behaved client from 127.0.0.1.
//
//   node bench/http/hostile.mjs [--bin PATH] SCENARIO [server args...]
//
// Scenarios:
//   streams N        N idle GET streams, then a new client's initialize (time)
//   slowloris N      N peers sending headers at 1 byte/s: the new client's
//                    initialize, and how long the server keeps such a peer
//   initflood N      N initialize from one peer as fast as it can (64 at a
//                    time), then a new client's initialize from another peer
//   noreader S       a client that never reads the SSE answer of a tool that
//                    logs fast: the server's RSS every second for S seconds
//   p99 G L C MS     C callers (each its own session) of a tool that waits
//                    MS ms, for 5 s, while G idle GET streams and L
//                    slowloris peers are connected: p50/p99/max latency, errors
// Prints one JSON line.
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as delay } from 'node:timers/promises';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
let argv = process.argv.slice(2);
let bin = path.join(ROOT, 'build', 'luamcp');
if (argv[0] === '--bin') [, bin, ...argv] = argv;
const [scenario, ...rest] = argv;
const nums = [];
while (rest.length && /^\d+(\.\d+)?$/.test(rest[0])) nums.push(Number(rest.shift()));
const serverArgs = rest;

const app = mkdtempSync(path.join(tmpdir(), 'luamcp-hostile-'));
mkdirSync(path.join(app, 'scripts'));
writeFileSync(
  path.join(app, 'scripts', 'tools.lua'),
  `local mcp = require "mcp"
mcp.tool { name = "echo", input = { text = mcp.string {} }, handler = function(a) return a.text end }
mcp.tool { name = "wait", input = { ms = mcp.number {} },
  handler = function(a, ctx) ctx:sleep(a.ms / 1000) return "waited" end }
mcp.tool { name = "flood", input = { seconds = mcp.number {} },
  handler = function(a, ctx)
    local line, t0 = ("x"):rep(1000), os.clock()
    while os.clock() - t0 < a.seconds do ctx:info(line) end
    return "flooded"
  end }
`,
);

const VERSION = '2025-11-25';
let port;
let child;
let nextAddr = 0;
const attackerAddr = () => `127.0.1.${(nextAddr++ % 250) + 1}`;

async function startServer() {
  const s = net.createServer();
  await new Promise((r) => s.listen(0, '127.0.0.1', r));
  port = s.address().port;
  await new Promise((r) => s.close(r));
  child = spawn(bin, ['serve', '--http', `127.0.0.1:${port}`, '--log-level', 'error', ...serverArgs, app], {
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  for (let i = 0; i < 100; i++) {
    const ok = await new Promise((r) => {
      const c = net.connect(port, '127.0.0.1', () => (c.destroy(), r(true)));
      c.on('error', () => r(false));
    });
    if (ok) return;
    await delay(50);
  }
  throw new Error('the server did not start');
}

/** One POST on its own connection: {status, headers, body, ms}. */
function post(msg, { session, localAddress, limit = 10_000, agent = false } = {}) {
  const data = JSON.stringify(msg);
  const headers = {
    'Content-Type': 'application/json',
    Accept: 'application/json, text/event-stream',
    'Content-Length': Buffer.byteLength(data),
  };
  if (session) headers['Mcp-Session-Id'] = session;
  const t0 = performance.now();
  return new Promise((resolve) => {
    const req = http.request({ host: '127.0.0.1', port, method: 'POST', path: '/mcp', headers, agent, localAddress });
    const timer = setTimeout(() => {
      req.destroy();
      resolve({ status: 'timeout', ms: performance.now() - t0 });
    }, limit);
    req.on('response', (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (d) => (body += d));
      res.on('end', () => {
        clearTimeout(timer);
        resolve({ status: res.statusCode, headers: res.headers, body, ms: performance.now() - t0 });
      });
      res.on('error', () => {});
    });
    req.on('error', (e) => {
      clearTimeout(timer);
      resolve({ status: `error ${e.code}`, ms: performance.now() - t0 });
    });
    req.end(data);
  });
}

const initMsg = (id = 1) => ({
  jsonrpc: '2.0',
  id,
  method: 'initialize',
  params: { protocolVersion: VERSION, capabilities: {}, clientInfo: { name: 'hostile', version: '0' } },
});

async function session(opts = {}) {
  const r = await post(initMsg(), opts);
  if (r.status !== 200) return { r };
  const id = r.headers['mcp-session-id'];
  await post({ jsonrpc: '2.0', method: 'notifications/initialized' }, { ...opts, session: id });
  return { id, r };
}

/** An idle GET stream on its own connection (data read and dropped); resolves with its status. */
function openStream(id, localAddress) {
  return new Promise((resolve) => {
    const c = net.connect({ port, host: '127.0.0.1', localAddress }, () =>
      c.write(`GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAccept: text/event-stream\r\nMcp-Session-Id: ${id}\r\n\r\n`),
    );
    let head = '';
    c.on('data', (d) => {
      if (head !== null) {
        head += d.toString('latin1');
        const m = /^HTTP\/1\.1 (\d+)/.exec(head);
        if (m) {
          resolve({ status: Number(m[1]), sock: c });
          head = null;
        }
      }
    });
    c.on('error', () => resolve({ status: 'error', sock: c }));
    setTimeout(() => resolve({ status: 'timeout', sock: c }), 10_000);
  });
}

/** A peer that sends its request head at 1 byte/s, reconnecting when dropped; lifetimes (ms) pushed to `lives`. */
function slowloris(lives, stop) {
  const head = `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/json\r\nX-Pad: ${'a'.repeat(200)}\r\n`;
  const localAddress = attackerAddr();
  const once = () => {
    if (stop.done) return;
    const t0 = performance.now();
    const c = net.connect({ port, host: '127.0.0.1', localAddress });
    let i = 0;
    const tick = setInterval(() => {
      if (stop.done) return c.destroy();
      c.write(head[i++ % head.length]);
    }, 1000);
    c.on('connect', () => c.write(head[i++]));
    c.on('data', () => {});
    c.on('error', () => {});
    c.on('close', () => {
      clearInterval(tick);
      if (!stop.done) lives.push(performance.now() - t0);
      setTimeout(once, 10);
    });
    stop.socks.add(c);
  };
  once();
}

function rss() {
  const m = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'));
  return Math.round(Number(m[1]) / 1024);
}

const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? Math.round(s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] * 10) / 10 : null;
};

async function openStreams(n) {
  const streams = [];
  const statuses = {};
  for (let i = 0; i < n; i += 50) {
    const batch = await Promise.all(
      Array.from({ length: Math.min(50, n - i) }, async () => {
        const addr = attackerAddr();
        const s = await session({ localAddress: addr });
        if (!s.id) return { status: `init ${s.r.status}` };
        return openStream(s.id, addr);
      }),
    );
    for (const b of batch) {
      statuses[b.status] = (statuses[b.status] || 0) + 1;
      if (b.sock) streams.push(b.sock);
    }
  }
  return { streams, statuses };
}

async function main() {
  await startServer();
  const out = { scenario, nums, serverArgs, bin: path.basename(path.dirname(bin)) + '/' + path.basename(bin) };
  const stop = { done: false, socks: new Set() };
  try {
    if (scenario === 'streams') {
      const { statuses } = await openStreams(nums[0]);
      out.getStatuses = statuses;
      const s = await session();
      out.newClientInit = { status: s.r.status, ms: Math.round(s.r.ms) };
    } else if (scenario === 'slowloris') {
      const lives = [];
      for (let i = 0; i < nums[0]; i++) slowloris(lives, stop);
      await delay(1500);
      const s = await session({ limit: 10_000 });
      out.newClientInit = { status: s.r.status, ms: Math.round(s.r.ms) };
      const t0 = performance.now();
      while (lives.length < nums[0] && performance.now() - t0 < 40_000) await delay(200);
      out.slowlorisHeldMs = { n: lives.length, p50: pct(lives, 50), max: pct(lives, 100) };
    } else if (scenario === 'initflood') {
      const statuses = {};
      const t0 = performance.now();
      const addr = attackerAddr();
      let sent = 0;
      await Promise.all(
        Array.from({ length: 64 }, async () => {
          while (sent < nums[0]) {
            sent++;
            const r = await post(initMsg(), { localAddress: addr });
            statuses[r.status] = (statuses[r.status] || 0) + 1;
          }
        }),
      );
      out.floodMs = Math.round(performance.now() - t0);
      out.floodStatuses = statuses;
      const s = await session({ localAddress: '127.0.0.1' });
      out.otherPeerInit = s.r.status;
      const same = await post(initMsg(), { localAddress: addr });
      out.floodPeerInitAfter = same.status;
    } else if (scenario === 'noreader') {
      const s = await session();
      const data = JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'flood', arguments: { seconds: nums[0] } } });
      const c = net.connect(port, '127.0.0.1', () =>
        c.write(
          `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMcp-Session-Id: ${s.id}\r\nContent-Length: ${Buffer.byteLength(data)}\r\n\r\n${data}`,
        ),
      );
      c.pause(); // never read
      c.on('error', () => {});
      out.rssMB = [rss()];
      for (let i = 0; i < nums[0]; i++) {
        await delay(1000);
        out.rssMB.push(rss());
      }
      c.destroy();
      const after = await post({ jsonrpc: '2.0', id: 3, method: 'ping' }, { session: s.id });
      out.pingAfter = after.status;
    } else if (scenario === 'p99') {
      const [g, l, callers, ms] = nums;
      const { statuses } = await openStreams(g);
      out.getStatuses = statuses;
      const lives = [];
      for (let i = 0; i < l; i++) slowloris(lives, stop);
      await delay(1000);
      const lat = [];
      const errors = {};
      const sessions = [];
      for (let i = 0; i < callers; i++) sessions.push((await session({ limit: 20_000 })).id);
      const agent = new http.Agent({ keepAlive: true, maxSockets: callers });
      const until = performance.now() + 5000;
      let id = 10;
      await Promise.all(
        sessions.map(async (sid) => {
          if (!sid) return void (errors.init = (errors.init || 0) + 1);
          while (performance.now() < until) {
            const r = await post(
              { jsonrpc: '2.0', id: id++, method: 'tools/call', params: { name: ms ? 'wait' : 'echo', arguments: ms ? { ms } : { text: 'x' } } },
              { session: sid, agent, limit: 20_000 },
            );
            if (r.status === 200) lat.push(r.ms);
            else errors[r.status] = (errors[r.status] || 0) + 1;
          }
        }),
      );
      agent.destroy();
      out.calls = lat.length;
      out.ms = { p50: pct(lat, 50), p99: pct(lat, 99), max: pct(lat, 100) };
      out.errors = errors;
    } else {
      throw new Error(`unknown scenario ${scenario}`);
    }
  } finally {
    stop.done = true;
    for (const s of stop.socks) s.destroy();
    child.kill('SIGKILL');
    rmSync(app, { recursive: true, force: true });
  }
  console.log(JSON.stringify(out));
  process.exit(0);
}

main().catch((e) => {
  console.error(e);
  child?.kill('SIGKILL');
  process.exit(1);
});
