// cors.test.mjs — `serve --http --cors ORIGIN` from a real browser: a page on
// another origin (a node server on its own port) connects to /mcp with fetch
// in headless Chromium: its preflight passes, it reads Mcp-Session-Id (an
// exposed header), initializes and lists the tools. The same page against a
// server without --cors, or with --cors naming another origin, is refused by
// the browser (fetch rejects). SIGTERM ends each server, which must exit 0.
//
//   node tests/browser/cors.test.mjs          (exit 77 = skipped: no Chromium or playwright-core)
//
// LUAMCP_BIN (default build/luamcp), LUAMCP_CHROMIUM (default /usr/bin/chromium).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import http from 'node:http';
import { createRequire } from 'node:module';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { CHROMIUM, CHROMIUM_FLAGS } from './chromium.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const REPO = path.resolve(HERE, '..', '..');
const BIN = path.resolve(REPO, process.env.LUAMCP_BIN || 'build/luamcp');
const APP = path.join(REPO, 'tests', 'apps', 'http');

function skipReason() {
  if (!existsSync(CHROMIUM)) return `${CHROMIUM} not found (Debian: apt-get install -y chromium)`;
  try {
    createRequire(path.join(REPO, 'tests', 'package.json')).resolve('playwright-core');
  } catch {
    return 'playwright-core is not installed in tests/node_modules (npm ci --prefix tests)';
  }
  return null;
}
const SKIP = skipReason();
if (SKIP && !process.env.NODE_TEST_CONTEXT) {
  console.log(`SKIP browser.cors: ${SKIP}`);
  process.exit(77);
}

function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

/** luamcp serve --http on a free port, once it answers. */
async function startServer(args) {
  const port = await freePort();
  const child = spawn(BIN, ['serve', '--http', `127.0.0.1:${port}`, ...args, APP], { stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  child.stdout.on('data', (d) => { log += d; });
  child.stderr.on('data', (d) => { log += d; });
  const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
  const end = Date.now() + 15000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`the server exited early:\n${log}`);
    try {
      await fetch(`http://127.0.0.1:${port}/mcp`);
      break;
    } catch {
      if (Date.now() > end) throw new Error(`the server did not answer:\n${log}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    async stop() {
      child.kill('SIGTERM');
      const { code, signal } = await exited;
      assert.equal(code, 0, `exit ${code} ${signal}\n${log}`);
    },
  };
}

/** In the page: initialize, notifications/initialized, tools/list. */
async function connect(url) {
  const headers = { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', 'MCP-Protocol-Version': '2025-11-25' };
  const post = (msg, extra = {}) => fetch(url, { method: 'POST', headers: { ...headers, ...extra }, body: JSON.stringify(msg) });
  try {
    const init = await post({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'page', version: '0' } } });
    const session = init.headers.get('Mcp-Session-Id');
    const answer = await init.json();
    await post({ jsonrpc: '2.0', method: 'notifications/initialized' }, { 'Mcp-Session-Id': session });
    const list = await (await post({ jsonrpc: '2.0', id: 2, method: 'tools/list' }, { 'Mcp-Session-Id': session })).json();
    return { status: init.status, session, server: answer.result?.serverInfo?.name, tools: list.result?.tools?.length };
  } catch (err) {
    return { error: String(err) };
  }
}

test('a page on another origin connects to /mcp with --cors naming it; without, or naming another, the browser refuses', { timeout: 120_000 }, async () => {
  const require = createRequire(path.join(REPO, 'tests', 'package.json'));
  const { chromium } = require('playwright-core');
  const web = http.createServer((req, res) => {
    res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' });
    res.end('<!doctype html><title>a web host</title><p>cors');
  });
  await new Promise((r) => web.listen(0, '127.0.0.1', r));
  const origin = `http://127.0.0.1:${web.address().port}`;
  const profile = await mkdtemp(path.join(tmpdir(), 'luamcp-cors-chromium-'));
  const context = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, headless: true, args: CHROMIUM_FLAGS });
  try {
    const page = await context.newPage();
    await page.goto(`${origin}/`);
    const named = await startServer(['--cors', origin]);
    const ok = await page.evaluate(connect, named.url);
    await named.stop();
    assert.equal(ok.error, undefined, JSON.stringify(ok));
    assert.equal(ok.status, 200);
    assert.match(ok.session || '', /^\S+$/, `Mcp-Session-Id readable by the page: ${JSON.stringify(ok)}`);
    assert.ok(ok.tools > 0, JSON.stringify(ok));
    for (const args of [[], ['--cors', 'http://127.0.0.1:9']]) {
      const srv = await startServer(args);
      const refused = await page.evaluate(connect, srv.url);
      await srv.stop();
      assert.match(refused.error || '', /TypeError|Failed to fetch/, `${args.join(' ') || 'no --cors'}: ${JSON.stringify(refused)}`);
    }
  } finally {
    await context.close();
    await rm(profile, { recursive: true, force: true });
    web.close();
  }
});
