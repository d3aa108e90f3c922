// io-soak.test.mjs — nothing leaks per wait: 100k mcp.http calls and 5k
// mcp.exec calls (64 in flight, over stdio) leave the server's open fds
// unchanged and its RSS about where it was after a warm-up. Resource
// counts, not timings.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { test } from 'node:test';

import { APPS, BIN, TEST_TIMEOUT, WRAP } from './helpers.mjs';

const IO_APP = path.join(APPS, 'io');
const opts = { timeout: TEST_TIMEOUT * 5 };

const fds = (pid) => readdirSync(`/proc/${pid}/fd`).length;
const rssKb = (pid) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))[1]);

/** A stdio server driven with W requests in flight; run(n, makeCall) resolves when all n are answered. */
function pipelined(args) {
  const child = spawn(WRAP[0] || BIN, [...WRAP.slice(1), ...(WRAP.length ? [BIN] : []), 'serve', ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (d) => (stderr += d));
  let buf = '';
  let onLine = () => {};
  child.stdout.setEncoding('utf8').on('data', (d) => {
    buf += d;
    let nl;
    while ((nl = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      onLine(line);
    }
  });
  const send = (m) => child.stdin.write(JSON.stringify(m) + '\n');
  let nextId = 1;
  const run = (n, call, inFlight = 64) =>
    new Promise((resolve, reject) => {
      let sent = 0, done = 0, bad = 0;
      const more = () => {
        while (sent < n && sent - done < inFlight) {
          sent++;
          send({ jsonrpc: '2.0', id: nextId++, method: 'tools/call', params: call() });
        }
      };
      onLine = (line) => {
        const m = JSON.parse(line);
        if (m.id === undefined) return;
        done++;
        if (!m.result || m.result.isError) bad++;
        if (bad === 1 && (!m.result || m.result.isError)) reject(new Error(`a call failed: ${line}\n${stderr}`));
        if (done === n) resolve();
        else more();
      };
      more();
    });
  const init = () =>
    new Promise((resolve) => {
      onLine = () => resolve();
      send({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'soak', version: '0' } } });
    }).then(() => send({ jsonrpc: '2.0', method: 'notifications/initialized' }));
  const close = () => new Promise((resolve) => { child.on('exit', (code) => resolve(code)); child.stdin.end(); });
  return { child, run, init, close, stderr: () => stderr };
}

test('100k mcp.http calls and 5k mcp.exec calls: open fds unchanged, RSS flat', opts, async () => {
  const origin = http.createServer((req, res) => res.end('ok'));
  origin.keepAliveTimeout = 60_000;
  await new Promise((r) => origin.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${origin.address().port}/`;
  const srv = pipelined([IO_APP]);
  try {
    await srv.init();
    const get = () => ({ name: 'http_status', arguments: { url } });
    const exec = () => ({ name: 'exec_run', arguments: { argv: ['true'], summary: true } });
    await srv.run(5000, get); // warm-up: connections pooled, heap grown to its working size
    await srv.run(500, exec);
    const pid = srv.child.pid;
    const before = { fds: fds(pid), rss: rssKb(pid) };
    await srv.run(100_000, get);
    await srv.run(5000, exec);
    const after = { fds: fds(pid), rss: rssKb(pid) };
    assert.equal(after.fds, before.fds, `open fds ${before.fds} -> ${after.fds}`);
    assert.ok(after.rss - before.rss < 4096, `RSS ${before.rss} kB -> ${after.rss} kB`);
    assert.equal(await srv.close(), 0, srv.stderr());
  } finally {
    srv.child.kill();
    origin.close();
  }
});
